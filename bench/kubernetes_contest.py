"""The Kubernetes-mode contest (issue 21): every policy on the heterogeneous scenarios with Kubernetes'
concurrency rule (a node takes pods while their requests fit), against the default kube-scheduler.

    python bench/kubernetes_contest.py --out bench/results/kubernetes-mode.md [--jobs N] [--seeds 1,2,3,4,5]

Each run is one (scenario, seed): the workload is built once, the lower bound computed on it (with the
requests bound, which holds for every policy here), then every policy runs on the same jobs, the same nodes and
the same cluster-wide rounds. Runs are cached as JSON under ``--raw`` (one file per scenario and seed), so an
interrupted sweep resumes; ``--fresh`` ignores the cache. The report is written from the cache.

The recommended policy is fixed in :data:`RECOMMENDED` before the final run (the report says so): it is not
picked per scenario afterwards.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from mrsched.core.catalog import expand_layout
from mrsched.simulator.run import build_simulation, lower_bound, summarise
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.workload import build_jobs

ROOT = Path(__file__).resolve().parent
#: The policy README.md recommends for heterogeneous clusters, named before the final run (issue 21).
RECOMMENDED = "diagnosis"
#: The scenarios of the contest: issue 21's list, with why each is in it.
SCENARIOS = {
    "gupta-ch3-comb1": "seed 002 ch.3 mix (Table 3.4 Comb1) on the 5-machine PARC cluster of three node classes",
    "gupta-ch3-comb2": "seed 002 ch.3 mix (Comb2), the same cluster",
    "gupta-ch3-comb3": "seed 002 ch.3 mix (Comb3), the same cluster",
    "gupta-ch3-pi-jio": "seed 002 ch.3 Pi + J_IO, the same cluster",
    "dara-wl4": "seed 002 ch.4 mix (Table 4.3 WL4) on six 8-core nodes (homogeneous nodes, mixed jobs)",
    "dara-wl10": "seed 002 ch.4 mix (WL10), the same cluster",
    "dara-wl13": "seed 002 ch.4 mix (WL13), the same cluster",
    "elkholy-four-jobs": "seed 001's cluster: two i3 and two dual-core nodes, four jobs",
    "tan-22-jobs": "seed 003 Set B: 22 jobs on 15 nodes (homogeneous nodes)",
    "tan-200-jobs": "seed 003's 62 nodes, 200 jobs (homogeneous nodes)",
    "swim-day-100-nodes": "the SWIM FB-2009 day's first four hours on 100 nodes of three classes",
    "three-generations": "three node generations, CPU-, disk- and network-bound jobs (new for this contest)",
}
#: kube-scheduler and the Hadoop baselines, then every learned policy, then the simulator-only reference.
BASELINES = ("kube-default", "fair", "capacity")
LEARNED = ("throughput", "dara", "diagnosis", "learning", "adaptive-slots", "coupling", "lsps")
REFERENCE = ("greedy-informed",)


def policies_for(scenario: Scenario) -> list[str]:
    """Every contest policy; Capacity only where the scenario has more than one queue (with one it is FIFO)."""
    queues = {job.queue for job in scenario.workload.jobs} if scenario.workload.jobs else {"default"}
    names = [p for p in BASELINES if p != "capacity" or len(queues) > 1]
    return [*names, *LEARNED, *REFERENCE]


def run_one(name: str, seed: int) -> dict[str, Any]:
    """One scenario and seed under every contest policy, in kubernetes mode by requests."""
    scenario = load_scenario(ROOT / "scenarios" / f"{name}.yaml").with_concurrency("requests")
    data_nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    out: dict[str, Any] = {"scenario": name, "seed": seed, "policies": {}}
    for policy in policies_for(scenario):
        started = time.monotonic()
        jobs = build_jobs(scenario, data_nodes, seed)
        try:
            sim = build_simulation(scenario, policy, seed, jobs, mode="kubernetes")
            if "lower_bound" not in out:
                out["lower_bound"] = lower_bound(sim, jobs)
            result = sim.run()
        except Exception as err:  # a policy that cannot run here is reported with its reason, not dropped
            out["policies"][policy] = {"error": f"{type(err).__name__}: {err}"}
            continue
        summary = summarise(result)
        out["policies"][policy] = {
            "makespan_s": summary["makespan_s"],
            "mean_job_time_s": summary["mean_job_time_s"],
            "failed_jobs": summary["failed_jobs"],
            "events": result.events,
            "wall_s": time.monotonic() - started,
        }
    return out


def sweep(names: list[str], seeds: list[int], raw: Path, jobs: int, fresh: bool) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    todo = [(n, s) for n in names for s in seeds if fresh or not (raw / f"{n}-s{s}.json").exists()]
    todo.sort(key=lambda run: run[0] != "swim-day-100-nodes")  # the longest first: the pool ends sooner
    print(f"{len(todo)} runs of (scenario, seed) to do, {jobs} at a time", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, n, s): (n, s) for n, s in todo}
        for future in as_completed(futures):
            n, s = futures[future]
            result = future.result()
            (raw / f"{n}-s{s}.json").write_text(json.dumps(result, indent=1) + "\n")
            walls = sum(p.get("wall_s", 0.0) for p in result["policies"].values())
            print(f"{n} seed {s}: done ({walls:.0f} s of runs)", flush=True)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def collect(names: list[str], seeds: list[int], raw: Path) -> dict[str, dict[str, Any]]:
    """Per scenario: the mean lower bound and each policy's mean makespan and mean job time over seeds."""
    table: dict[str, dict[str, Any]] = {}
    for name in names:
        runs = [json.loads((raw / f"{name}-s{s}.json").read_text()) for s in seeds]
        bound = _mean([r["lower_bound"]["makespan_s"] for r in runs])
        policies: dict[str, dict[str, Any]] = {}
        for policy in runs[0]["policies"]:
            per = [r["policies"][policy] for r in runs]
            errors = [p["error"] for p in per if "error" in p]
            if errors:
                policies[policy] = {"error": errors[0]}
                continue
            policies[policy] = {
                "makespan_s": _mean([p["makespan_s"] for p in per]),
                "mean_job_time_s": _mean([p["mean_job_time_s"] for p in per]),
                "failed_jobs": sum(p["failed_jobs"] for p in per),
                "bound_held": all(
                    p["makespan_s"] >= r["lower_bound"]["makespan_s"] - 1e-6
                    for p, r in zip(per, runs, strict=True)
                ),
            }
        table[name] = {"lower_bound_s": bound, "policies": policies, "bound": runs[0]["lower_bound"]}
    return table


def _cell(p: dict[str, Any], kube: dict[str, Any], bound: float, best: bool) -> str:
    if "error" in p:
        return "cannot run"
    mk, mj = p["makespan_s"], p["mean_job_time_s"]
    text = f"{mk:.0f} ({mk / kube['makespan_s']:.2f}, {mk / bound:.2f}) / {mj:.0f} ({mj / kube['mean_job_time_s']:.2f})"
    return f"**{text}**" if best else text


def report(table: dict[str, dict[str, Any]], seeds: list[int]) -> str:
    policies = [*BASELINES, *LEARNED, *REFERENCE]
    lines = [
        "# Kubernetes mode: mrsched's policies against kube-scheduler, by requests",
        "",
        "Made by `make bench-kubernetes` (`bench/kubernetes_contest.py`). Every policy of a row ran on the same "
        "nodes, the same jobs (per seed) and the same decision opportunities: the simulator's **kubernetes** "
        "placement mode (a cluster-wide round every heartbeat and whenever a task ends or a job arrives, as the "
        "operator's loop) with **concurrency by requests** (`cluster.concurrency: requests`: a node takes pods "
        "while their CPU and memory requests fit its cores and memory, maps and reduces alike, as the kubelet "
        "admits them; the engine refuses any pod that would not fit, whichever policy placed it). No fixed "
        "slots: kube-default is kube-scheduler's default profile (NodeResourcesFit LeastAllocated + "
        "BalancedAllocation), Fair and Capacity are Hadoop 1's, filling by requests instead of slots.",
        "",
        f"Seeds {', '.join(map(str, seeds))}; times are means over seeds. Each cell: makespan (its ratio to "
        "kube-default, to the lower bound) / mean job time (its ratio to kube-default). Lower is better. The "
        "lower bound is the larger of the work bound, the critical path and the requests bound (the map phase "
        "with as many maps per node as requests fit, a fractional LP); it holds for every policy and seed "
        "(checked below). **Bold**: the mrsched policy with the lowest mean job time in the row "
        "(greedy-informed excluded: it is given the true physics and runs only in the simulator).",
        "",
        f"Recommended for heterogeneous clusters, named before the final run: **{RECOMMENDED}**.",
        "",
    ]
    header = " | ".join(policies)
    lines += [f"| scenario | lower bound | {header} |", "|---|---:|" + "---:|" * len(policies)]
    wins = within = 0
    for name, row in table.items():
        kube, bound = row["policies"]["kube-default"], row["lower_bound_s"]
        ours = {p: v for p, v in row["policies"].items() if p in LEARNED and "error" not in v}
        best = min(ours, key=lambda p: ours[p]["mean_job_time_s"]) if ours else None
        cells = [
            _cell(row["policies"][p], kube, bound, p == best) if p in row["policies"] else "-"
            for p in policies
        ]
        lines.append(f"| {name} | {bound:.0f} | " + " | ".join(cells) + " |")
        rec = row["policies"].get(RECOMMENDED, {})
        if "error" not in rec and rec:
            wins += rec["mean_job_time_s"] < kube["mean_job_time_s"]
            within += rec["makespan_s"] <= 1.25 * bound
    lines += [
        "",
        f"**{RECOMMENDED}**: mean job time below kube-default's on {wins} of {len(table)} scenarios; makespan "
        f"within 1.25x of the lower bound on {within} of {len(table)}.",
        "",
        "## The scenarios",
        "",
        *[f"* **{n}**: {SCENARIOS[n]}" for n in table],
        "",
        "## The bound held",
        "",
    ]
    broken = [
        f"{n}: {p}"
        for n, row in table.items()
        for p, v in row["policies"].items()
        if not v.get("bound_held", True)
    ]
    lines.append(
        "Every policy's makespan was at or above the lower bound on every seed." if not broken else ""
    )
    lines += [f"* BROKEN: {b}" for b in broken]
    errors = [
        f"* {n}, {p}: {v['error']}"
        for n, row in table.items()
        for p, v in row["policies"].items()
        if "error" in v
    ]
    if errors:
        lines += ["", "## Policies that cannot run in a scenario", "", *errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "kubernetes-mode.md")
    parser.add_argument("--raw", type=Path, default=ROOT / "results" / "kubernetes-mode")
    parser.add_argument("--scenarios", help="comma-separated (default: the contest's)")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fresh", action="store_true", help="re-run what the cache holds")
    args = parser.parse_args(argv)
    names = args.scenarios.split(",") if args.scenarios else list(SCENARIOS)
    seeds = [int(s) for s in args.seeds.split(",")]
    sweep(names, seeds, args.raw, args.jobs, args.fresh)
    args.out.write_text(report(collect(names, seeds, args.raw), seeds))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
