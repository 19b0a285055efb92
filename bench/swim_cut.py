"""The SWIM day's first four hours, as bench/scenarios/swim-day-100-nodes.yaml replayed them before issue 24 made
the whole day affordable (it cut the trace at maxJobs 629, every job submitted before 14,400 s, and searched
Eq 4.16 exhaustively). The Kubernetes contest (bench/kubernetes_contest.py, issue 21) and the search-gap
benchmark (bench/dara_search_gap.py) were run and committed on those four hours, and keep them: the whole day
under every contest policy in Kubernetes mode is a sweep of its own. The scenario's name, and so its workload's
random draws, are the day's: the four hours are the jobs those runs had."""

from __future__ import annotations

from mrsched.simulator.scenario import Scenario

SWIM_DAY = "swim-day-100-nodes"
#: Every job of FB-2009_samples_24_times_1hr_0 submitted before 14,400 s.
FOUR_HOURS_JOBS = 629


def four_hours(scenario: Scenario) -> Scenario:
    """``scenario`` (the SWIM day) cut to its first four hours, with the thesis's exhaustive Eq 4.16 search for
    DARA and diagnosis (``exhaustiveLimit`` null, over the policies' default of a local search past 200,000
    mixes), as those runs had it."""
    trace = scenario.workload.trace
    assert scenario.name == SWIM_DAY and trace is not None, scenario.name
    workload = scenario.workload.model_copy(
        update={"trace": trace.model_copy(update={"max_jobs": FOUR_HOURS_JOBS})}
    )
    options = dict(scenario.policy_options)
    for policy in ("dara", "diagnosis"):
        options[policy] = {**options.get(policy, {}), "exhaustiveLimit": None}
    return scenario.model_copy(update={"workload": workload, "policy_options": options})
