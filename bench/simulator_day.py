"""The simulator at production scale (issue 24): the whole SWIM FB-2009 day under every policy, and the same day on
1,000 nodes.

    python bench/simulator_day.py [--only day|day-1000] [--jobs N] [--seeds 1,2,3,4,5] [--policies a,b]
                                  [--profile N] [--out DIR]

1. ``day``: bench/scenarios/swim-day-100-nodes.yaml, the whole SWIM FB-2009 day on 100 nodes (5,894 jobs),
   under the policies it names (``--policies``) on the seeds it lists (``--seeds``), hadoop mode, ``--jobs`` runs
   at once (default: every core, each run a process of its own). Prints each run's wall time (build, the
   seed's lower bound timed apart, replay), events/s and peak memory, and the slowest run against the target
   (under 60 s a run on this 2-core machine); writes results.json (per-job records in jobs.json.gz), report.md
   and plots to ``--out`` (default bench/results/hadoop/swim-day-100-nodes, as ``make bench`` would).
2. ``day-1000``: the same day on 1,000 nodes, each of the scenario's node groups ten times over (the same three
   classes in the same proportions, 50 racks of 20), SWIM's byte scaling for that size (sizeScale 0.6 = 600 /
   1,000 machines) and Hadoop 1's heartbeat for 1,000 TaskTrackers (10 s), under FIFO, Fair and DARA
   (``--large-policies``), seed 1: each run's wall time and events/s (target: under 5 minutes a run).
   No lower bound there: it draws every task's noise on every node, over an hour at that size.

With ``--profile N`` the slowest policy of each part is replayed once more under cProfile, and the N functions
with the most own time are printed, so the output says where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import time
from pathlib import Path
from typing import Any

from mrsched.core.catalog import expand_layout
from mrsched.simulator.engine import SimulationResult
from mrsched.simulator.report import write_report
from mrsched.simulator.run import build_simulation, run_scenario
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.workload import build_jobs

REPO = Path(__file__).resolve().parents[1]
DAY = REPO / "bench" / "scenarios" / "swim-day-100-nodes.yaml"
#: Targets of issue 24.
DAY_TARGET_S = 60.0
DAY_1000_TARGET_S = 300.0
#: Hadoop 1's mapred.heartbeats.in.second default (JobTracker.DEFAULT_NUM_HEARTBEATS_IN_SECOND): the heartbeats a
#: second the JobTracker spaces its TaskTrackers' intervals for.
HEARTBEATS_IN_SECOND = 100
#: run_scenario's progress line.
PROGRESS = re.compile(
    r"(?P<events>\d+) events in (?P<seconds>[\d.]+) s(?: \(the seed's lower bound (?P<bound>[\d.]+) s of "
    r"it\))?, peak memory (?P<rss>\d+) MiB$"
)


def scaled_day(scenario: Scenario, factor: int = 10) -> Scenario:
    """``scenario``'s cluster ``factor`` times over (each node group repeated, racks renamed apart) with SWIM's
    byte scaling for the larger cluster: sizeScale = 600 machines (FB-2009's) / nodes; and the heartbeat Hadoop 1
    gives that many TaskTrackers: JobTracker.getNextHeartbeatInterval, max(nodes / mapred.heartbeats.in.second
    (100 by default) s, the minimum), 10 s at 1,000 nodes (3 s, the minimum, at 100)."""
    groups = []
    for copy in range(factor):
        for group in scenario.cluster.nodes:
            dumped = group.model_dump(by_alias=True, exclude_none=True)
            if dumped.get("rack"):
                dumped["rack"] = f"{dumped['rack']}-{copy}"
            groups.append(dumped)
    cluster = scenario.cluster.model_dump(by_alias=True, exclude_none=True)
    cluster["nodes"] = groups
    nodes = len(expand_layout(scenario.cluster.nodes)) * factor
    cluster["heartbeatS"] = max(scenario.cluster.heartbeat_s, nodes / HEARTBEATS_IN_SECOND)
    sources = {
        **scenario.sources,
        "cluster.heartbeatS": f"spec: Hadoop 1 JobTracker.getNextHeartbeatInterval for {nodes} TaskTrackers, "
        f"max({nodes} / mapred.heartbeats.in.second {HEARTBEATS_IN_SECOND}, the {scenario.cluster.heartbeat_s:g} s "
        "minimum)",
    }
    trace = scenario.workload.trace
    assert trace is not None
    workload = scenario.workload.model_dump(by_alias=True, exclude_none=True)
    workload["trace"]["sizeScale"] = 600 / nodes
    workload["trace"]["path"] = str(scenario.resolve(trace.path))
    return Scenario.model_validate(
        {
            **_dumped(scenario),
            "name": scenario.name.replace("-100-", f"-{nodes}-"),
            "cluster": cluster,
            "workload": workload,
            "sources": sources,
        }
    )


def _dumped(scenario: Scenario) -> dict[str, object]:
    data = scenario.model_dump(by_alias=True, exclude_none=True)
    data["workload"]["trace"]["path"] = str(scenario.resolve(scenario.workload.trace.path))  # type: ignore[union-attr]
    return data


def sweep(
    scenario: Scenario,
    policies: list[str],
    seeds: list[int],
    workers: int,
    target_s: float,
    with_bound: bool = True,
) -> tuple[dict[str, Any], dict[str, SimulationResult], str]:
    """Every (policy, seed) run of ``scenario`` in hadoop mode, ``workers`` at once; prints each as it ends.
    Returns run_scenario's summary and first-seed results, and the slowest run's policy."""
    runs: list[tuple[str, float]] = []
    peak_mib = [0]

    def progress(line: str) -> None:
        # "<scenario>: <policy> seed <s>: makespan <m> s, <events> events in <t> s[ (the seed's lower bound <b>
        # s of it)]": the bound is the seed's, computed once with its first policy, so it is timed apart.
        found = PROGRESS.search(line)
        assert found is not None, line
        events, seconds = int(found["events"]), float(found["seconds"])
        own = seconds - float(found["bound"] or 0.0)
        peak_mib[0] = max(peak_mib[0], int(found["rss"]))
        runs.append((line.split(": ")[1], own))
        print(f"{line}: the policy's run {own:.1f} s = {events / own:,.0f} events/s", flush=True)

    started = time.perf_counter()
    summary, first = run_scenario(
        scenario, policies, seeds, progress, mode="hadoop", workers=max(1, workers), with_bound=with_bound
    )
    wall = time.perf_counter() - started
    slowest = max(runs, key=lambda r: r[1])
    over = [name for name, seconds in runs if seconds >= target_s]  # the seed's lower bound not counted
    print(
        f"{scenario.name}: {len(runs)} runs ({len(policies)} policies x {len(seeds)} seeds) in {wall:.0f} s "
        f"with {workers} at once; slowest run {slowest[0]} {slowest[1]:.1f} s (target < {target_s:.0f} s: "
        f"{'met by every run' if not over else f'{len(over)} over: ' + ', '.join(over)}); peak memory of a "
        f"run's process {peak_mib[0]} MiB",
        flush=True,
    )
    return summary, first, slowest[0].split(" seed ")[0]


def profile(scenario: Scenario, policy: str, top: int) -> None:
    """One replay (seed 1) of ``policy`` under cProfile: the ``top`` functions by own time."""
    stores = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    sim = build_simulation(scenario, policy, 1, build_jobs(scenario, stores, 1), mode="hadoop")
    profiler = cProfile.Profile()
    profiler.enable()
    sim.run()
    profiler.disable()
    print(f"profile: {scenario.name}, {policy} seed 1 (the slowest policy), top {top} by own time")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("day", "day-1000"), help="one part only (default: both)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (default: cores)")
    parser.add_argument("--seeds", help="the day's seeds (default: the scenario's)")
    parser.add_argument("--policies", help="the day's policies (default: the scenario's)")
    parser.add_argument(
        "--large-policies",
        default="fifo,fair,dara",
        help="the 1,000-node day's policies (default: the three the issue names)",
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile the slowest policy")
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results" / "hadoop" / "swim-day-100-nodes",
        help="where the day's results go",
    )
    args = parser.parse_args()
    day = load_scenario(DAY)
    if args.only in (None, "day"):
        policies = args.policies.split(",") if args.policies else day.policies
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else day.seeds
        summary, first, slowest = sweep(day, policies, seeds, args.jobs, DAY_TARGET_S)
        write_report(summary, first, args.out)
        print(f"wrote {args.out}/results.json, jobs.json.gz, report.md and plots", flush=True)
        if args.profile:
            profile(day, slowest, args.profile)
    if args.only in (None, "day-1000"):
        large = scaled_day(day)
        summary, _, slowest = sweep(
            large, args.large_policies.split(","), [1], args.jobs, DAY_1000_TARGET_S, with_bound=False
        )
        # What the speed came with: the same day's placement, so a faster run is not a different schedule unseen.
        print(
            f"{large.name}: mean job time "
            + ", ".join(f"{p} {m['mean_job_time_s']:.2f} s" for p, m in summary["policies"].items()),
            flush=True,
        )
        if args.profile:
            profile(large, slowest, args.profile)


if __name__ == "__main__":
    main()
