"""Simulator speed and scheduling-round latency, as the scheduling-core issue asks:

    python bench/simulator_speed.py [--jobs N] [--repeat R] [--profile N]

1. Events per second replaying the SWIM FB-2009 day (``bench/data/traces/swim/``) on 100 nodes under FIFO
   and Fair in hadoop mode (target: >= 100,000 events/s for FIFO): the event loop's own time, from the first
   event to the last, the fastest of ``--repeat`` replays (3; the slowest beside it). The lower bound on
   makespan that ``run_scenario`` adds to every result is computed once per scenario and seed, not per policy,
   and is timed on its own line (its per-node noise draws dominate it).
   Both again with every ``cluster.physics`` switch on and speculative execution (issue 19's physics,
   ``measured``), whose side flows and speculation checks cost events and time of their own.
2. One scheduling round of Fair with 1,000 nodes and 200 running jobs: every node offered once, as the
   operator's loop does (target: < 50 ms).
3. A sweep (the day under FIFO and Fair, seeds 1 and 2) one run at a time and two at once (``--jobs 2``): the
   wall-time ratio (target: <= 0.6x) and whether results.json's content is the same bytes.
4. Every registered policy's scheduling call (one node's heartbeat) inside saturated simulations of 100, 1,000
   and 5,000 nodes (``--nodes``), a job per five nodes (200 at 1,000): p50 and p95 (target at 1,000 nodes: p95
   < 5 ms), and per policy how p95 grows with the nodes (linear: 10x and 5x the nodes, at most 10x and 5x).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import statistics
import time
from pathlib import Path

from mrsched.core.catalog import expand_layout
from mrsched.core.model import ClusterSnapshot, Job, Node, Task
from mrsched.policies import make_policy, policy_names
from mrsched.simulator.run import build_simulation, lower_bound, run_scenario
from mrsched.simulator.scenario import PhysicsOptions, Scenario
from mrsched.simulator.workload import build_jobs

REPO = Path(__file__).resolve().parents[1]
SWIM_2009 = REPO / "bench" / "data" / "traces" / "swim" / "FB-2009_samples_24_times_1hr_0.tsv"


def measured(scenario: Scenario) -> Scenario:
    """``scenario`` with every physics switch and speculative execution on."""
    cluster = scenario.cluster
    speculation = cluster.speculation.model_copy(update={"enabled": True})
    changes = {"physics": PhysicsOptions.measured(), "speculation": speculation}
    return scenario.model_copy(update={"cluster": cluster.model_copy(update=changes)})


def swim_day(max_jobs: int | None = None) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "swim-2009-100-nodes",
            "source": "SWIM FB-2009 day, sizes scaled 1/10 (600 machines originally, 100 here)",
            "headline": "speed benchmark",
            "cluster": {
                "nodes": [
                    {"class": "medium", "count": 50, "rack": "r1"},
                    {"class": "large", "count": 50, "rack": "r2"},
                ]
            },
            "workload": {
                "trace": {
                    "format": "swim",
                    "path": str(SWIM_2009),
                    "sizeScale": 10,
                    **({"maxJobs": max_jobs} if max_jobs else {}),
                }
            },
            "seeds": [1],
        }
    )


def events_per_second(max_jobs: int | None, profile: int = 0, repeat: int = 3) -> None:
    """Replay the day under FIFO and Fair, with the committed and the measured physics, each ``repeat`` times from
    scratch, and print the fastest replay's events/s with the slowest's beside it (a shared machine's other load
    only slows a run: the fastest is the code's speed, as ``timeit`` reports its best). The replays take turns
    (each round replays every configuration once), since this machine's speed drifts over minutes: the ratio of
    a round's two physics is the comparison that drift does not bias. With ``profile`` > 0, one replay each,
    printing that many of cProfile's top functions (by own time), whose events/s then include the profiler's
    overhead."""
    scenario = swim_day(max_jobs)
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    started = time.perf_counter()
    jobs = build_jobs(scenario, nodes, 1)
    print(f"trace read and {len(jobs):,} jobs built in {time.perf_counter() - started:.1f} s")
    runs = [(policy, physics) for physics in ("off", "measured") for policy in ("fifo", "fair")]
    times: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    results = {}
    for _ in range(1 if profile else repeat):
        for policy, physics in runs:
            variant = measured(scenario) if physics == "measured" else scenario
            sim = build_simulation(variant, policy, 1, build_jobs(variant, nodes, 1), mode="hadoop")
            profiler = cProfile.Profile() if profile else None
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            results[policy, physics] = sim.run()
            times[policy, physics].append(time.perf_counter() - started)
            if profiler is not None:
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(profile)
    for (policy, physics), taken in times.items():
        result = results[policy, physics]
        best, worst = min(taken), max(taken)
        print(
            f"{policy:5s} (physics {physics:8s}): {result.events:,} events in {best:.1f} s = "
            f"{result.events / best:,.0f} events/s, best of {len(taken)} (slowest {worst:.1f} s = "
            f"{result.events / worst:,.0f}) ({len(result.jobs)} jobs, {result.tasks_started:,} tasks, "
            f"makespan {result.makespan_s:,.0f} s)"
        )
    for policy in ("fifo", "fair"):
        rates = {
            physics: [results[policy, physics].events / t for t in times[policy, physics]]
            for physics in ("off", "measured")
        }
        paired = sorted(m / o for m, o in zip(rates["measured"], rates["off"], strict=True))
        print(
            f"{policy:5s} measured / off physics, events/s of the same round: median "
            f"{statistics.median(paired):.2f} (rounds: {', '.join(f'{r:.2f}' for r in paired)})"
        )
    started = time.perf_counter()
    # The jobs built first are untouched by any run; of the simulation the bound reads only the cluster.
    sim = build_simulation(scenario, "fifo", 1, jobs, mode="hadoop")
    bound = lower_bound(sim, jobs)
    print(
        f"lower bound (once per scenario and seed): {time.perf_counter() - started:.1f} s "
        f"(makespan >= {bound['makespan_s']:,.0f} s; {sum(len(j.maps) + len(j.reduces) for j in jobs):,}"
        f" tasks x {len(sim.nodes)} nodes' noise draws)"
    )


def _jobs(cluster: list[str], count: int, prefix: str) -> list[Job]:
    nodes = len(cluster)
    jobs = []
    for j in range(count):
        jid = f"{prefix}j{j}"
        maps = [
            Task(jid, "map", i, 64.0, (cluster[(j * 7 + i) % nodes], cluster[(j * 13 + i * 3) % nodes]))
            for i in range(100)
        ]
        job = Job(jid, "wordcount", float(j), maps, [Task(jid, "reduce", 0, 10.0)], user=f"user{j % 20}")
        job.running_maps = 1 + j % 5
        jobs.append(job)
    return jobs


def fair_round_latency(
    nodes: int = 1000, jobs: int = 200, repeats: int = 5, assign_multiple: bool = True
) -> None:
    """Each repeat: a warm policy (its per-job locality indexes built in an earlier round, as in a long-running
    loop) offers every node once to 200 jobs with pending maps."""
    cluster = {f"n{i}": Node(f"n{i}", 8, 16384, rack=f"r{i // 40}") for i in range(nodes)}
    names = list(cluster)
    fair = make_policy("fair", {"assignMultiple": assign_multiple})
    samples = []
    for r in range(repeats):
        active = _jobs(names, jobs, f"r{r}-")
        snapshot = ClusterSnapshot(1.0 + r, cluster, {n: [] for n in names}, active)
        for job in active:  # warm: a long-running policy built each job's locality index when it arrived
            fair.map_index(job, snapshot)  # type: ignore[attr-defined]
        started = time.perf_counter()
        placements = fair.schedule_round(snapshot, names)
        samples.append(time.perf_counter() - started)
    mode = "every free slot" if assign_multiple else "one map per heartbeat (Hadoop's default)"
    print(
        f"fair round, {nodes} nodes x {jobs} jobs, {mode}: median {statistics.median(samples) * 1000:.0f} ms "
        f"({len(placements)} placements; target < 50 ms)"
    )


def sweep_speed(workers: int = 2) -> None:
    """The SWIM day under FIFO and Fair, seeds 1 and 2 (four runs, the lower bound with each seed's first), as
    ``mrsched simulate`` runs a sweep: one run at a time, then ``workers`` at once; wall time of each and
    whether the two summaries (results.json's content) are the same bytes (target: <= 0.6x, identical)."""
    scenario = swim_day().model_copy(update={"policies": ["fifo", "fair"], "seeds": [1, 2]})
    timed: dict[int, tuple[float, str]] = {}
    for n in (1, workers):
        started = time.perf_counter()
        summary, _ = run_scenario(scenario, mode="hadoop", workers=n)
        timed[n] = (time.perf_counter() - started, json.dumps(summary, indent=1))
    (serial, one), (parallel, many) = timed[1], timed[workers]
    print(
        f"sweep, SWIM day x fifo,fair x seeds 1,2 (4 runs): --jobs 1 {serial:.1f} s, --jobs {workers} "
        f"{parallel:.1f} s = {parallel / serial:.2f}x (target <= 0.6x); results "
        f"{'identical' if one == many else 'DIFFER'} ({len(one):,} bytes)"
    )


class _Enough(Exception):
    """Raised by the timing wrapper once enough scheduling calls were timed."""


def call_latency(
    policies: list[str], nodes: int = 1000, jobs: int = 200, calls: int = 300
) -> dict[str, float]:
    """Each policy's scheduling call (a node's heartbeat, hadoop mode) inside a simulation of ``nodes`` nodes
    (half medium, half large, 25 racks) and ``jobs`` wordcount jobs of 100 maps and 10 reduces all submitted at
    0 (saturated: more maps than slots): the first ``calls`` calls after the first 1,000 (every node's first
    heartbeat, which fills the cluster) timed; p50 and p95 (target: p95 < 5 ms). Returns each policy's p95."""
    scenario = Scenario.model_validate(
        {
            "name": f"calls-{nodes}-nodes",
            "source": "speed benchmark",
            "headline": "speed benchmark",
            "cluster": {
                "nodes": [
                    {"class": "medium", "count": nodes // 2, "rack": "r1"},
                    {"class": "large", "count": nodes - nodes // 2, "rack": "r2"},
                ]
            },
            "workload": {
                "jobs": [
                    {"id": f"j{i:03d}", "app": "wordcount", "maps": 100, "reduces": 10, "inputMBPerMap": 64}
                    for i in range(jobs)
                ]
            },
            "seeds": [1],
        }
    )
    stores = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    p95s: dict[str, float] = {}
    for name in policies:
        sim = build_simulation(scenario, name, 1, build_jobs(scenario, stores, 1), mode="hadoop")
        real = sim.policy.schedule_round
        samples: list[float] = []
        count = [0]

        def timed(
            *args: object, real: object = real, samples: list[float] = samples, count: list[int] = count
        ) -> object:
            count[0] += 1
            started = time.perf_counter()
            out = real(*args)  # type: ignore[operator]
            if count[0] > nodes:
                samples.append(time.perf_counter() - started)
                if len(samples) >= calls:
                    raise _Enough
            return out

        sim.policy.schedule_round = timed  # type: ignore[method-assign]
        started = time.perf_counter()
        with contextlib.suppress(_Enough):
            sim.run(until_s=3600)
        wall = time.perf_counter() - started
        samples.sort()
        p50, p95 = samples[len(samples) // 2], samples[int(len(samples) * 0.95)]
        p95s[name] = p95
        print(
            f"call, {name:16} {nodes} nodes x {jobs} jobs: p50 {p50 * 1e3:7.2f} ms, p95 {p95 * 1e3:7.2f} ms "
            f"({len(samples)} calls timed, {wall:.0f} s in all; target p95 < 5 ms)",
            flush=True,
        )
    return p95s


def call_scaling(policies: list[str], sizes: list[int]) -> None:
    """:func:`call_latency` at each of ``sizes`` nodes (a job per five nodes: saturated at every size), then
    each policy's p95 relative to the smallest size's beside the nodes' ratio: a call linear in nodes grows
    at most as the nodes do (a ratio under the nodes' is sub-linear)."""
    by_size = {nodes: call_latency(policies, nodes, max(20, nodes // 5)) for nodes in sizes}
    base = sizes[0]
    for name in policies:
        growth = ", ".join(
            f"{nodes} nodes {by_size[nodes][name] / by_size[base][name]:.1f}x (nodes {nodes / base:g}x)"
            for nodes in sizes[1:]
        )
        print(f"call growth, {name:16} p95 against {base} nodes: {growth}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, help="replay only the first N jobs of the day")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="print cProfile's top N functions"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="replays per policy and physics (the fastest counts)"
    )
    parser.add_argument(
        "--only",
        choices=("events", "rounds", "sweep", "calls"),
        help="run one part only (default: every part)",
    )
    parser.add_argument("--policies", help="the calls part's policies (default: every registered one)")
    parser.add_argument(
        "--nodes", default="100,1000,5000", help="the calls part's cluster sizes (default: 100,1000,5000)"
    )
    args = parser.parse_args()
    if args.only in (None, "events"):
        events_per_second(args.jobs, args.profile, args.repeat)
    if args.only in (None, "rounds"):
        fair_round_latency(assign_multiple=False)
        fair_round_latency(assign_multiple=True)
    if args.only in (None, "sweep"):
        sweep_speed()
    if args.only in (None, "calls"):
        names = args.policies.split(",") if args.policies else sorted(policy_names())
        call_scaling(names, [int(n) for n in args.nodes.split(",")])


if __name__ == "__main__":
    main()
