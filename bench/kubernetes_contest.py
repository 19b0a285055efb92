"""The Kubernetes-mode contest (issue 21): every policy on the heterogeneous scenarios with Kubernetes'
concurrency rule (a node takes pods while their requests fit), against the default kube-scheduler.

    python bench/kubernetes_contest.py --out bench/results/kubernetes-mode.md [--jobs N] [--seeds 1,2,3,4,5]

Each run is one (scenario, seed, policy): the workload is built from the seed (the same jobs for every policy),
the lower bound computed on it (with the requests bound, which holds for every policy here), and every policy
runs on the same jobs, the same nodes and the same cluster-wide rounds. Runs are cached as JSON under ``--raw``
(one file per scenario and seed, an entry per policy), so an interrupted sweep resumes; ``--fresh`` re-runs
what the cache holds, every policy's or those of ``--policies`` (after a change to them alone). The report is
written from the cache.

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
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from swim_cut import SWIM_DAY, four_hours

from mrsched.core.catalog import expand_layout
from mrsched.simulator.parity import share_offline_inputs
from mrsched.simulator.run import build_simulation, lower_bound, summarise
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.workload import build_jobs

ROOT = Path(__file__).resolve().parent
#: The policy docs/results.md recommends for heterogeneous clusters, named before the final run (issue 21).
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
    "swim-day-100-nodes": "the SWIM FB-2009 day's first four hours on 100 nodes of three classes (bench/swim_cut.py)",
    "three-generations": "three node generations, CPU-, disk- and network-bound jobs (new for this contest)",
}
#: Scenarios run on fewer seeds, and why: under the eleven policies on this 2-core machine the SWIM replay costs
#: over 30 CPU-minutes a seed, and seed 003's 200 jobs on 62 nodes did not finish a seed in 55 (every other
#: scenario a few minutes); the simulator's speed at that scale is issue 24's.
FEWER_SEEDS = {"swim-day-100-nodes": [1, 2], "tan-200-jobs": [1, 2]}
#: The contest's scenarios whose nodes are all of one class (their jobs are mixed): counted apart below.
HOMOGENEOUS_NODES = {"dara-wl4", "dara-wl10", "dara-wl13", "tan-22-jobs", "tan-200-jobs"}
#: kube-scheduler and the Hadoop baselines, then every learned policy, then the simulator-only reference.
BASELINES = ("kube-default", "fair", "capacity")
LEARNED = ("throughput", "dara", "diagnosis", "learning", "adaptive-slots", "coupling", "lsps")
REFERENCE = ("greedy-informed",)
#: Options not shipped, each with what it sets: shown in the table, never bold, never the recommendation.
#: ``shortestFirst`` was chosen on this contest's scenarios; bench/kubernetes_heldout.py checks it elsewhere.
EXPERIMENTS: dict[str, dict[str, Any]] = {f"{RECOMMENDED}:shortest-first": {"shortestFirst": True}}


def policies_for(scenario: Scenario) -> list[str]:
    """Every contest policy; Capacity only where the scenario has more than one queue (with one it is FIFO): its
    jobs name several, or it lists Capacity itself (the SWIM day's queue per user, ``queueBy: user``)."""
    queues = {job.queue for job in scenario.workload.jobs} if scenario.workload.jobs else {"default"}
    queued = len(queues) > 1 or "capacity" in scenario.policies
    names = [p for p in BASELINES if p != "capacity" or queued]
    return [*names, *LEARNED, *EXPERIMENTS, *REFERENCE]


def load_contest_scenario(name: str) -> Scenario:
    """A scenario of bench/scenarios as the contest runs it: the SWIM day cut to its first four hours
    (bench/swim_cut.py), for cost, as it was run and committed; every other scenario as it is."""
    scenario = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
    return four_hours(scenario) if name == SWIM_DAY else scenario


def contest_scenario(name: str, labels: list[str] | None = None) -> tuple[Scenario, list[str]]:
    """A scenario of bench/scenarios in the contest's mode (concurrency by requests), with every offline input
    one contest policy is given (DARA's α) given to each other that can use it (mrsched.simulator.parity), and
    its data nodes."""
    scenario = load_contest_scenario(name).with_concurrency("requests")
    scenario, _ = share_offline_inputs(scenario, labels or policies_for(scenario))
    return scenario, [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]


def run_one(name: str, seed: int, policy: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One scenario and seed under one contest policy, in kubernetes mode by requests: its entry, and the
    scenario's lower bound for that seed."""
    return run_policy_on(name, seed, policy, EXPERIMENTS.get(policy))


def run_policy_on(
    name: str, seed: int, policy: str, options: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`run_one` for any policy entry, with ``options`` over the scenario's own for it."""
    scenario, data_nodes = contest_scenario(name)
    if options:
        merged = {**(scenario.options_for(policy) or {}), **options}
        scenario = scenario.model_copy(update={"policy_options": {**scenario.policy_options, policy: merged}})
    started = time.monotonic()
    jobs = build_jobs(scenario, data_nodes, seed)
    sim = build_simulation(scenario, policy, seed, jobs, mode="kubernetes")
    bound = lower_bound(sim, jobs)
    try:
        result = sim.run()
    except Exception as err:  # a policy that cannot run here is reported with its reason, not dropped
        return {"error": f"{type(err).__name__}: {err}"}, bound
    summary = summarise(result)
    entry = {
        "makespan_s": summary["makespan_s"],
        "mean_job_time_s": summary["mean_job_time_s"],
        "failed_jobs": summary["failed_jobs"],
        "events": result.events,
        "wall_s": time.monotonic() - started,
    }
    return entry, bound


#: How a placement's explanation says who chose its map (DARA's and diagnosis's reasons; others are "policy").
SOURCES = (
    ("profiling map", "profiling map (Alg 4.3.1: measured alone)"),
    ("fair fallback", "FairScheduler (no fitted model for the node's class yet)"),
    (" tier:", "the mix x* (Eq 4.16)"),
)


def _record_maps(sim: Any) -> dict[str, Any]:
    """Wrap ``sim``'s policy to record, for each map it places, who chose it (:data:`SOURCES`) and the times of
    each job's first two maps (what a profiling map costs a job: its other maps wait for it)."""
    seen: dict[str, Any] = {"sources": {}, "starts": {}}
    original = sim.policy.schedule_round

    def recording(snapshot: Any, order: Any) -> Any:
        placed = original(snapshot, order)
        for p in placed:
            if p.task.kind != "map":
                continue
            source = next((label for key, label in SOURCES if key in p.explanation.reason), "policy")
            seen["sources"][source] = seen["sources"].get(source, 0) + 1
            starts = seen["starts"].setdefault(p.task.job_id, [])
            if len(starts) < 2:
                starts.append(snapshot.now)
        return placed

    sim.policy.schedule_round = recording
    return seen


def explain_one(name: str, seed: int = 1) -> dict[str, Any]:
    """What separates the recommended policy from kube-default in one scenario, measured on one seed: each job's
    wait for its first task and its run from then on (means), how many jobs ran at once on average, the mean
    map time (what contention made of the maps: the lower bound assumes none), how many maps ran at once on
    average (their summed times over the makespan), the mean gap between a job's first and second map, and who
    chose the maps (:data:`SOURCES`)."""
    scenario, data_nodes = contest_scenario(name)
    out: dict[str, Any] = {"scenario": name, "seed": seed}
    for policy in ("kube-default", RECOMMENDED):
        jobs = build_jobs(scenario, data_nodes, seed)
        sim = build_simulation(scenario, policy, seed, jobs, mode="kubernetes")
        seen = _record_maps(sim)
        result = sim.run()
        times = [
            (j.submit_s, j.start_s, j.finish_s)
            for j in result.jobs
            if j.finish_s is not None and j.start_s is not None and not j.failed
        ]
        span = max(f for _, _, f in times) - min(b for _, b, _ in times)
        maps = [t for by_class in result.map_times.values() for times_ in by_class.values() for t in times_]
        out[policy] = {
            "mean_wait_s": _mean([b - a for a, b, _ in times]),
            "mean_run_s": _mean([f - b for _, b, f in times]),
            "jobs_at_once": sum(f - b for _, b, f in times) / span,
            "mean_map_s": _mean(maps),
            "maps_at_once": sum(maps) / result.makespan_s if result.makespan_s > 0 else math.nan,
            "first_to_second_map_s": _mean([s[1] - s[0] for s in seen["starts"].values() if len(s) == 2]),
            "maps_by": seen["sources"],
        }
    return out


def seeds_of(name: str, seeds: list[int]) -> list[int]:
    return [s for s in seeds if s in FEWER_SEEDS.get(name, seeds)]


def sweep(
    names: list[str],
    seeds: list[int],
    raw: Path,
    jobs: int,
    fresh: bool,
    only: list[str] | None = None,
    policies: Callable[[Scenario], list[str]] = policies_for,
) -> None:
    """Every (scenario, seed, policy) the cache lacks, ``jobs`` at a time, for the ``policies`` of each scenario;
    ``fresh`` re-runs what it holds, of every policy or of ``only`` (their entries replaced, the others' kept)."""
    raw.mkdir(parents=True, exist_ok=True)
    orders = {n: policies(load_contest_scenario(n)) for n in names}
    todo = []
    for n in names:
        for s in seeds_of(n, seeds):
            path = raw / f"{n}-s{s}.json"
            held = json.loads(path.read_text())["policies"] if path.exists() else {}
            todo += [(n, s, p) for p in orders[n] if p not in held or (fresh and (only is None or p in only))]
    todo.sort(key=lambda run: run[0] != "swim-day-100-nodes")  # the longest first: the pool ends sooner
    print(f"{len(todo)} runs of (scenario, seed, policy) to do, {jobs} at a time", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, n, s, p): (n, s, p) for n, s, p in todo}
        for future in as_completed(futures):
            n, s, p = futures[future]
            entry, bound = future.result()
            path = raw / f"{n}-s{s}.json"
            held = (
                json.loads(path.read_text()) if path.exists() else {"scenario": n, "seed": s, "policies": {}}
            )
            held["lower_bound"] = bound
            held["policies"][p] = entry
            held["policies"] = {q: held["policies"][q] for q in orders[n] if q in held["policies"]}
            path.write_text(json.dumps(held, indent=1) + "\n")
            print(f"{n} seed {s} {p}: {entry.get('wall_s', 0.0):.0f} s", flush=True)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def collect(names: list[str], seeds: list[int], raw: Path) -> dict[str, dict[str, Any]]:
    """Per scenario: the mean lower bound and each policy's mean makespan and mean job time over seeds."""
    table: dict[str, dict[str, Any]] = {}
    for name in names:
        files = [raw / f"{name}-s{s}.json" for s in seeds_of(name, seeds)]
        runs = [json.loads(f.read_text()) for f in files if f.exists()]  # --report-only: the seeds that ran
        if not runs:
            continue
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
        table[name] = {
            "lower_bound_s": bound,
            "policies": policies,
            "bound": runs[0]["lower_bound"],
            "seeds": [r["seed"] for r in runs],
        }
    return table


def _cell(p: dict[str, Any], kube: dict[str, Any], bound: float, best: bool) -> str:
    if "error" in p:
        return "cannot run"
    mk, mj = p["makespan_s"], p["mean_job_time_s"]
    text = f"{mk:.0f} ({mk / kube['makespan_s']:.2f}, {mk / bound:.2f}) / {mj:.0f} ({mj / kube['mean_job_time_s']:.2f})"
    return f"**{text}**" if best else text


def misses(row: dict[str, Any]) -> tuple[bool, bool]:
    """(the recommended policy's mean job time is not below kube-default's, its makespan is past 1.25x the bound)"""
    rec, kube = row["policies"].get(RECOMMENDED, {}), row["policies"]["kube-default"]
    if not rec or "error" in rec:
        return True, True
    return rec["mean_job_time_s"] >= kube["mean_job_time_s"], rec["makespan_s"] > 1.25 * row["lower_bound_s"]


def _why(name: str, row: dict[str, Any], explained: dict[str, Any]) -> list[str]:
    slower, far = misses(row)
    bound = row["lower_bound_s"]
    ran = {p: v for p, v in row["policies"].items() if "error" not in v and p not in EXPERIMENTS}
    best = min(ran, key=lambda p: ran[p]["makespan_s"])
    lines = [f"* **{name}**:"]
    if far:
        lines.append(
            f"  makespan {ran[RECOMMENDED]['makespan_s'] / bound:.2f}x the bound; the best of every policy, "
            f"{best}, {ran[best]['makespan_s'] / bound:.2f}x"
            + (
                " (no policy, greedy-informed told the true physics included, comes within 1.25x: the bound "
                "leaves out contention and each task's start-up, which the maps' times below include)."
                if ran[best]["makespan_s"] > 1.25 * bound
                else "."
            )
        )
    e = explained.get(name)
    if e is None and slower:
        rec, kube = ran.get(RECOMMENDED, {}), ran["kube-default"]
        lines.append(
            f"  mean job time {rec.get('mean_job_time_s', math.nan):.1f} s against kube-default's "
            f"{kube['mean_job_time_s']:.1f} s; not run again to explain it (a seed costs too much, above)."
        )
    if e is not None:
        k, r = e["kube-default"], e[RECOMMENDED]
        lines.append(
            f"  Seed {e['seed']}: kube-default's jobs wait {k['mean_wait_s']:.0f} s for their first task, then run "
            f"{k['mean_run_s']:.0f} s, {k['jobs_at_once']:.1f} jobs at once, maps {k['mean_map_s']:.1f} s on average; "
            f"{RECOMMENDED}'s wait {r['mean_wait_s']:.0f} s, run {r['mean_run_s']:.0f} s, {r['jobs_at_once']:.1f} "
            f"at once, maps {r['mean_map_s']:.1f} s."
        )
        lines += _causes(k, r, slower) if slower or far else []
    return lines


def _causes(k: dict[str, Any], r: dict[str, Any], slower: bool) -> list[str]:
    """The measured differences that explain a miss, each stated only where the seed shows it (the sharing of
    nodes among jobs only where the mean job time is what was missed)."""
    out = []
    if "maps_at_once" in r:
        out.append(
            f"  Maps at once (their summed times over the makespan): kube-default {k['maps_at_once']:.1f}, "
            f"{RECOMMENDED} {r['maps_at_once']:.1f}; a job's second map started {k['first_to_second_map_s']:.0f} s "
            f"after its first under kube-default, {r['first_to_second_map_s']:.0f} s under {RECOMMENDED}; "
            f"{RECOMMENDED}'s maps chosen by: "
            + ", ".join(f"{label} {n}" for label, n in sorted(r["maps_by"].items(), key=lambda kv: -kv[1]))
            + "."
        )
        total = sum(r["maps_by"].values()) or 1
        fallback = sum(n for label, n in r["maps_by"].items() if label.startswith("FairScheduler")) / total
        if fallback >= 0.2:
            out.append(
                f"  {fallback:.0%} of its maps were the FairScheduler's while no load model was fitted for the "
                "node's class (no offline α for it in this scenario): Fair shares every node among every job."
            )
        if r["maps_at_once"] < 0.9 * k["maps_at_once"]:
            same_speed = k["mean_map_s"] <= 1.1 * r["mean_map_s"]
            out.append(
                "  It runs fewer maps at once than kube-scheduler packs: its mix x* stops where its Eq 4.12 model "
                "predicts that one more container lowers the node's throughput"
                + (
                    ", while kube-scheduler's maps, more at once, took about as long as its own (mean map "
                    "time above): the simulator's physics does not slow down so soon."
                    if same_speed
                    else "."
                )
            )
        if r["first_to_second_map_s"] > max(10.0, 2 * k["first_to_second_map_s"]) and r["maps_by"].get(
            SOURCES[0][1]
        ):
            out.append(
                "  Each job's other maps wait for its profiling map (Alg 4.3.1: the first map is measured alone "
                "to learn its θ and λ), a cost kube-scheduler does not pay and a small job feels most."
            )
    if slower and r["jobs_at_once"] > k["jobs_at_once"] and r["mean_run_s"] > k["mean_run_s"]:
        out.append(
            f"  {RECOMMENDED} shares the nodes among more jobs at once (its per-node mix of applications, Eq 4.16, "
            "maximises a node's throughput, not a job's completion), so each job runs longer, while "
            "kube-scheduler's queue serves the pods in submission order and finishes the first jobs first."
        )
    return out


def _experiment_lines(table: dict[str, dict[str, Any]]) -> list[str]:
    """What each experiment (:data:`EXPERIMENTS`) is, and how it fared against kube-default here."""
    out = []
    for label, options in EXPERIMENTS.items():
        rows = [
            row
            for row in table.values()
            if "error" not in row["policies"].get(label, {"error": ""})
            and "error" not in row["policies"].get(RECOMMENDED, {"error": ""})
        ]
        kube = [row["policies"]["kube-default"]["mean_job_time_s"] for row in rows]
        wins = sum(row["policies"][label]["mean_job_time_s"] < k for row, k in zip(rows, kube, strict=True))
        base = sum(
            row["policies"][RECOMMENDED]["mean_job_time_s"] < k for row, k in zip(rows, kube, strict=True)
        )
        out += [
            f"`{label}` is an experiment, not shipped: {RECOMMENDED} with {json.dumps(options)} (ours: on "
            "Kubernetes, mix only the jobs with the least work left that fill the cluster, the others joining as "
            "they run down; shortest remaining processing time first). It was chosen after an earlier run of "
            "this contest, among four readings measured on these scenarios but the SWIM day, so this table is "
            f"no test of it: here its mean job time is below kube-default's on {wins} of {len(rows)} scenarios, "
            f"{RECOMMENDED}'s on {base}. On the 18 scenarios with mixed jobs the choice never ran "
            "(`make bench-kubernetes-heldout`, bench/results/kubernetes-heldout.md) it does not carry over, so "
            "it stays off.",
            "",
        ]
    return out


def report(
    table: dict[str, dict[str, Any]], seeds: list[int], explained: dict[str, Any] | None = None
) -> str:
    explained = explained or {}
    policies = [*BASELINES, *LEARNED, *EXPERIMENTS, *REFERENCE]
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
        f"Seeds {', '.join(map(str, seeds))} (fewer where a scenario's line below says so: a seed of the SWIM day "
        "costs over 30 CPU-minutes under the eleven policies; seed 003's 200 jobs did not finish one in 55); "
        "times are means over seeds. Each cell: makespan (its ratio to "
        "kube-default, to the lower bound) / mean job time (its ratio to kube-default). Lower is better. The "
        "lower bound is the larger of the work bound, the critical path and the requests bound (the map phase "
        "with as many maps per node as requests fit, a fractional LP); it holds for every policy and seed "
        "(checked below). **Bold**: the mrsched policy with the lowest mean job time in the row "
        "(greedy-informed excluded: it is given the true physics and runs only in the simulator).",
        "",
        f"Recommended for heterogeneous clusters, named before the final run: **{RECOMMENDED}**.",
        "",
        *_experiment_lines(table),
    ]
    header = " | ".join(policies)
    lines += [f"| scenario | lower bound | {header} |", "|---|---:|" + "---:|" * len(policies)]
    wins = within = 0
    mixed = [n for n in table if n not in HOMOGENEOUS_NODES]
    mixed_wins = mixed_within = 0
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
            win, close = rec["mean_job_time_s"] < kube["mean_job_time_s"], rec["makespan_s"] <= 1.25 * bound
            wins, within = wins + win, within + close
            if name not in HOMOGENEOUS_NODES:
                mixed_wins, mixed_within = mixed_wins + win, mixed_within + close
    lines += [
        "",
        f"**{RECOMMENDED}**: mean job time below kube-default's on {wins} of {len(table)} scenarios; makespan "
        f"within 1.25x of the lower bound on {within} of {len(table)}. On the {len(mixed)} scenarios whose nodes "
        f"are of more than one class: {mixed_wins} and {mixed_within}.",
        "",
        f"## Where {RECOMMENDED} misses the bar, and why (measured)",
        "",
        *[line for n, row in table.items() if any(misses(row)) for line in _why(n, row, explained)],
        "",
        "## The scenarios",
        "",
        *[
            f"* **{n}**: {SCENARIOS[n]}"
            + (" (nodes of one class)" if n in HOMOGENEOUS_NODES else "")
            + (f"; seeds {', '.join(map(str, table[n]['seeds']))} only" if table[n]["seeds"] != seeds else "")
            for n in table
        ],
        *(
            [
                "",
                "Not in this run (a seed under the eleven policies did not finish in 55 CPU-minutes; issue 24): "
                + ", ".join(not_run)
                + ".",
            ]
            if (not_run := [n for n in SCENARIOS if n not in table])
            else []
        ),
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
    parser.add_argument("--policies", help="with --fresh: re-run only these (comma-separated)")
    parser.add_argument(
        "--report-only", action="store_true", help="no runs: the report from what the cache holds"
    )
    args = parser.parse_args(argv)
    names = args.scenarios.split(",") if args.scenarios else list(SCENARIOS)
    seeds = [int(s) for s in args.seeds.split(",")]
    only = args.policies.split(",") if args.policies else None
    if not args.report_only:
        sweep(names, seeds, args.raw, args.jobs, args.fresh, only)
    table = collect(names, seeds, args.raw)
    explained = {}
    for name, row in table.items():
        if any(misses(row)) and name not in FEWER_SEEDS:  # those cost too much to run again
            cached = args.raw / f"explain-{name}.json"
            if (args.fresh and (not only or RECOMMENDED in only)) or not cached.exists():
                cached.write_text(json.dumps(explain_one(name), indent=1) + "\n")
            explained[name] = json.loads(cached.read_text())
    args.out.write_text(report(table, seeds, explained))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
