"""Every committed benchmark result is like-for-like, says which physics it ran, and its bounds are bounds.

Reads bench/results/<mode>/<scenario>/results.json as ``make bench`` writes them: each names the placement mode
it ran in (and sits under that mode's directory), no policy is called an oracle, the lower bound is at or below
every policy's makespan seed by seed, the slot bound at or below the policies that keep to the nodes' slots, and
Capacity is reported only where it differs from FIFO (a scenario with queues). Every result can tell the
target-fitted constants it rests on (its ``targetFitted``, else its scenario file's), so no summary can call a
flagged result met."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrsched.simulator import fitted
from mrsched.simulator.result import SLOT_KEEPERS
from mrsched.simulator.scenario import MODES, load_scenario, policy_name

RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results"
SCENARIOS = RESULTS.parent / "scenarios"
COMMITTED = sorted(p for mode in MODES for p in (RESULTS / mode).glob("*/results.json"))
#: Every other committed run record: each results.json elsewhere and the contests' per-seed caches.
OTHER_RUNS = sorted(
    {*RESULTS.rglob("results.json"), *RESULTS.glob("kubernetes-*/*-s[0-9]*.json")} - set(COMMITTED)
)


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_there_are_committed_results_in_every_mode() -> None:
    for mode in MODES:
        assert any(p.parent.parent.name == mode for p in COMMITTED), f"no results under bench/results/{mode}/"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_each_scenario_has_a_result_in_exactly_the_modes_it_lists(scenario: Path) -> None:
    """make bench runs a scenario in the modes its file lists (bench/bench_runs.py): a result in another mode is
    one left from before the scenario dropped it, and a missing one was never re-run."""
    listed = set(load_scenario(scenario).modes) & set(MODES)
    committed = {mode for mode in MODES if (RESULTS / mode / scenario.stem / "results.json").exists()}
    assert committed == listed


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_result_names_its_mode_and_no_oracle(path: Path) -> None:
    result = _load(path)
    assert result["mode"] == path.parent.parent.name
    assert not any(name.split(":")[0] == "oracle" for name in result["policies"])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_lower_bound_holds_for_every_policy_and_seed(path: Path) -> None:
    result = _load(path)
    bounds = result["lower_bound_per_seed"]
    assert len(bounds) == len(result["seeds"])
    overridden = load_scenario(SCENARIOS / f"{path.parent.name}.yaml").cluster_overrides
    for name, policy in result["policies"].items():
        keeps_slots = policy_name(name) in SLOT_KEEPERS and name not in overridden  # fair:slots3 has its own
        for bound, run in zip(bounds, policy["per_seed"], strict=True):
            assert bound["makespan_s"] <= run["makespan_s"] + 1e-6, (name, bound, run["makespan_s"])
            if keeps_slots and bound["slot_bound_s"] is not None:
                assert bound["slot_bound_s"] <= run["makespan_s"] + 1e-6, (name, "slot bound")


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_the_mean_job_time_bound_holds_and_the_makespan_bound_is_at_least_the_old_one(path: Path) -> None:
    """Every result was run with the bounds of issue 49: the mean-job-time bound at or below every policy's mean
    job time on every seed in which no job failed (a failed job leaves the mean), and the makespan bound at
    least the bound of before issue 49 (``old_makespan_s``: its formula on the same jobs and physics, each task
    at its least time over the attempts that may succeed)."""
    result = _load(path)
    for bound in result["lower_bound_per_seed"]:
        assert bound["makespan_s"] >= bound["old_makespan_s"] - 1e-6, bound
    for name, policy in result["policies"].items():
        for bound, run in zip(result["lower_bound_per_seed"], policy["per_seed"], strict=True):
            if run["failed_jobs"] == 0:
                assert bound["mean_job_time_s"] <= run["mean_job_time_s"] + 1e-6, (name, bound, run)


@pytest.mark.parametrize(
    "path", COMMITTED + OTHER_RUNS, ids=lambda p: str(p.relative_to(RESULTS)).removesuffix(".json")
)
def test_every_result_says_which_physics_it_ran(path: Path) -> None:
    result = _load(path)
    assert set(result["physics"]) >= {"on", "off"}
    assert not result["physics"]["off"] or result["physics"].get("reason")
    assert isinstance(result["speculation"], list)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_capacity_is_reported_only_where_it_differs_from_fifo(path: Path) -> None:
    result = _load(path)
    policies = result["policies"]
    if "capacity" not in policies or "fifo" not in policies:
        return
    scenario = load_scenario(SCENARIOS / f"{path.parent.name}.yaml")
    assert scenario.options_for("capacity"), "Capacity runs here without queues configured (it is FIFO then)"
    fifo, capacity = policies["fifo"], policies["capacity"]
    assert [r["mean_job_time_s"] for r in fifo["per_seed"]] != [
        r["mean_job_time_s"] for r in capacity["per_seed"]
    ], "Capacity equals FIFO here: a one-queue scenario should leave Capacity out"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_result_can_tell_its_target_fitted_constants(path: Path) -> None:
    result = _load(path)
    flags = fitted.recorded(result, SCENARIOS)  # results written before the key: from the scenario file
    if fitted.KEY in result:  # a constant re-derived since (or newly flagged) needs the scenario re-run
        now = fitted.target_fitted_constants(load_scenario(SCENARIOS / f"{result['scenario']}.yaml"))
        assert sorted(flags) == sorted(now), "the scenario's target-fitted constants changed: re-run it"


CONTEST = sorted(p for p in (RESULTS / "kubernetes-mode").glob("*.json") if not p.name.startswith("explain-"))


def test_the_kubernetes_contest_is_committed_by_requests() -> None:
    assert CONTEST, "no bench/results/kubernetes-mode/*.json: run make bench-kubernetes"
    assert (RESULTS / "kubernetes-mode.md").is_file()


@pytest.mark.parametrize("path", CONTEST, ids=lambda p: p.stem)
def test_the_contests_lower_bound_holds_for_every_policy(path: Path) -> None:
    """The contest's lower bound includes the requests bound: it must hold for every policy that ran."""
    run = _load(path)
    bound = run["lower_bound"]["makespan_s"]
    ran = {name: p for name, p in run["policies"].items() if "error" not in p}
    assert "kube-default" in ran
    for name, policy in ran.items():
        assert policy["makespan_s"] >= bound - 1e-6, (name, policy["makespan_s"], bound)
        if policy.get("failed_jobs", 0) == 0:
            assert policy["mean_job_time_s"] >= run["lower_bound"]["mean_job_time_s"] - 1e-6, name
    assert run["lower_bound"]["makespan_s"] >= run["lower_bound"]["old_makespan_s"] - 1e-6
