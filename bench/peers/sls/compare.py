"""Per-job agreement of ``mrsched simulate`` with Apache Hadoop's SLS on the same SLS traces (issue 22).

    python bench/peers/sls/compare.py [--fresh-sls] [--sls-reruns N] [--traces one-queue,two-queues,tiny-burst]

For each trace of bench/peers/sls/traces/ and each of YARN's Fair and Capacity schedulers: SLS 3.3.5 runs the
trace on the trace's cluster (sls_peer.py; its result is cached in bench/results/sls/<trace>-<scheduler>/
jobs.json, as SLS costs the trace's span in wall time), and our simulator replays the same trace in YARN mode
on the same nodes (named and racked as SLS's; a scenario-defined node class of the trace's reference speed, no
start-up, no noise, each container's time as the trace says it: ``replayMeasuredTime``) under YARN's scheduler
of that name, configured as SLS's. Written to bench/results/sls/README.md: per job, both completion times and
their ratio; per trace and scheduler, the share of jobs within 15 % of SLS's, each queue's mean completion time
against SLS's, the rank correlation of the finish order (Spearman), and the two run times side by side; with a
scatter plot per trace.

The table is our seed 1 against SLS's cached run; beside it, the share within 15 % on each of ``SEEDS`` (each
seed its own NodeManager heartbeat phases, as each SLS run draws its own), and, for a trace and scheduler with
SLS re-runs (``--sls-reruns N`` caches them as rerun-N.json), SLS's agreement with itself: the floor no
simulator can beat on that trace.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from scipy.stats import spearmanr

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
import sls_peer  # noqa: E402

from mrsched.simulator.run import run_scenario  # noqa: E402
from mrsched.simulator.scenario import load_scenario  # noqa: E402
from mrsched.simulator.traces import read_sls  # noqa: E402

TRACES = HERE / "traces"
TRACE_PREFIX = "trace-"  # what our workload puts before a trace job's id (mrsched.simulator.workload)
RESULTS = ROOT / "bench" / "results" / "sls"
SEEDS = (1, 2, 3, 4, 5)  # ours: the first is the table's, all five give the spread
SCHEDULERS = ("fair", "capacity")
#: The agreement issue 22 asks for, per trace and scheduler.
WITHIN = 0.15  # a job's completion time within 15 % of SLS's ...
SHARE_WITHIN = 0.80  # ... for at least 80 % of the jobs
QUEUE_MEAN_WITHIN = 0.10  # each queue's mean completion time within 10 %
RANK_AT_LEAST = 0.80  # Spearman correlation of the finish order
#: The trace's reference node: every container time of the trace is a time on it. 4 cores and 4096 MiB as the
#: trace's cluster file says; speed 1, no start-up, no noise, so that a container runs exactly its trace time.
REFERENCE = {
    "cores": 4,
    "memoryMiB": 4096,
    "physics": {"cpuRate": 1.0, "diskRate": 1.0, "overheadS": 0.0, "noiseSigma": 0.0},
    "sources": {
        "cores": "assumption: the SLS trace's node (its cluster file: 4 vcores)",
        "memoryMiB": "assumption: the SLS trace's node (its cluster file: 4096 MB)",
        "physics.cpuRate": "assumption: the trace's container times are times on this node",
    },
}


def scenario_for(trace: str, scheduler: str, cluster: sls_peer.Cluster) -> dict[str, Any]:
    """Our scenario replaying ``trace`` in YARN mode on the trace's nodes (named and racked as SLS's, so the
    trace's container hosts are ours) under YARN's scheduler named ``scheduler``, configured as SLS's is."""
    racks: dict[str, list[str]] = {}
    for node in cluster.nodes:
        racks.setdefault(node.rack, []).append(node.name)
    given = [q.capacity for q in cluster.queues if q.capacity is not None]
    unset = [q for q in cluster.queues if q.capacity is None]
    share = (100.0 - sum(given)) / len(unset) if unset else 0.0
    options: dict[str, Any] = (
        {
            "weights": {q.name: q.weight for q in cluster.queues},
            "maxAMShare": {q.name: q.max_am_share for q in cluster.queues},
        }
        if scheduler == "fair"
        else {
            "capacities": {q.name: q.capacity if q.capacity is not None else share for q in cluster.queues},
            "maximumCapacity": {q.name: q.max_capacity for q in cluster.queues},
            "userLimitFactor": {q.name: q.user_limit_factor for q in cluster.queues},
            "maximumAmResourcePercent": cluster.max_am_resource_percent,
        }
    )
    return {
        "name": f"sls-{trace}",
        "source": f"bench/peers/sls/traces/{trace}.json (issue 22's SLS comparison)",
        "headline": f"per-job agreement with SLS 3.3.5 on {trace} under {scheduler}",
        "cluster": {
            "nodes": [
                {"class": "sls-reference", "count": len(names), "rack": rack, "names": names}
                for rack, names in racks.items()
            ],
            "nodeClasses": {"sls-reference": REFERENCE},
            "concurrency": "requests",
            "heartbeatS": cluster.heartbeat_ms / 1000.0,
            "physics": {"replayMeasuredTime": True},
            # SLS's MRAMSimulator replays each trace task once and asks for no speculative attempt.
            "speculation": {
                "enabled": False,
                "reason": "SLS 3.3.5's MRAMSimulator runs each trace task once: no speculative attempts",
            },
            "yarn": {
                "amMemoryMB": cluster.am_memory_mb,
                "amVcores": cluster.am_vcores,
                "amHeartbeatS": cluster.heartbeat_ms / 1000.0,
            },
        },
        "workload": {
            "trace": {
                "format": "sls",
                "path": str(TRACES / f"{trace}.json"),
                "reduceSlowstart": 1.0,  # MRAMSimulator asks for reduces after the last map
            }
        },
        "policies": [scheduler],
        "policyOptions": {scheduler: options},
        "seeds": [1],
        "modes": ["yarn"],
        "sources": {
            "queues": f"assumption: the trace's cluster file ({', '.join(q.name for q in cluster.queues)})"
        },
    }


def ours(
    trace: str, scheduler: str, cluster: sls_peer.Cluster, seed: int = 1
) -> tuple[dict[str, dict[str, float]], float]:
    """Per trace job: submit, finish and completion seconds under our simulator; and its wall seconds. The seed
    sets the NodeManagers' heartbeat phases (SLS draws them unseeded, so each SLS run has its own)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario_for(trace, scheduler, cluster)))
        scenario = load_scenario(path)
        began = time.monotonic()
        _, results = run_scenario(scenario, [scheduler], [seed], mode="yarn")
        wall = time.monotonic() - began
    result = results[scheduler]
    unfinished = [r.id for r in result.jobs if r.failed or r.finish_s is None]
    if unfinished:
        raise RuntimeError(
            f"our simulator did not finish {len(unfinished)} jobs of {trace}: {unfinished[:5]}"
        )
    return {
        r.id.removeprefix(TRACE_PREFIX): {
            "submit_s": r.submit_s,
            "finish_s": float(r.finish_s or 0.0),
            "completion_s": float(r.finish_s or 0.0) - r.submit_s,
        }
        for r in result.jobs
    }, wall


def sls(
    trace: str, scheduler: str, cluster: sls_peer.Cluster, fresh: bool, name: str = "jobs.json"
) -> dict[str, Any]:
    """SLS's result on ``trace`` under ``scheduler``: from its cache file ``name`` (``jobs.json``, or a re-run's
    ``rerun-N.json``), or run now and cached there."""
    cached = RESULTS / f"{trace}-{scheduler}" / name
    if fresh or not cached.exists():
        out = Path(tempfile.mkdtemp(prefix=f"sls-{trace}-{scheduler}-"))
        jobs, wall, preempted = sls_peer.run(
            TRACES / f"{trace}.json", cluster, scheduler, out, timeout_s=1800
        )
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(sls_peer.result_json(scheduler, jobs, wall, preempted), indent=1) + "\n")
    return json.loads(cached.read_text())


def queues_of(trace: str) -> dict[str, str]:
    """Each trace job's queue, as our simulator reads the trace."""
    return {job.id: job.queue for job in read_sls(TRACES / f"{trace}.json")}


def agreement(
    theirs: dict[str, Any], mine: dict[str, dict[str, float]], queues: dict[str, str]
) -> dict[str, Any]:
    rows = []
    for job in theirs["jobs"]:
        ref = job["completionS"]
        got = mine[job["id"]]["completion_s"]
        rows.append(
            {
                "id": job["id"],
                "queue": queues[job["id"]],
                "sls_s": ref,
                "ours_s": round(got, 2),
                "ratio": round(got / ref, 3),
                "sls_finish_s": job["endMS"] / 1000.0,
                "ours_finish_s": mine[job["id"]]["finish_s"],
            }
        )
    within = sum(abs(r["ratio"] - 1) <= WITHIN for r in rows) / len(rows)
    per_queue = {}
    for queue in sorted({r["queue"] for r in rows}):
        members = [r for r in rows if r["queue"] == queue]
        a = statistics.fmean(r["sls_s"] for r in members)
        b = statistics.fmean(r["ours_s"] for r in members)
        per_queue[queue] = {"sls_s": round(a, 1), "ours_s": round(b, 1), "ratio": round(b / a, 3)}
    rho = float(spearmanr([r["sls_finish_s"] for r in rows], [r["ours_finish_s"] for r in rows]).statistic)
    return {
        "jobs": rows,
        "within": within,
        "queues": per_queue,
        "rank": rho,
        "met": within >= SHARE_WITHIN
        and all(abs(q["ratio"] - 1) <= QUEUE_MEAN_WITHIN for q in per_queue.values())
        and rho >= RANK_AT_LEAST,
    }


def _as_mine(run: dict[str, Any]) -> dict[str, dict[str, float]]:
    """An SLS run's jobs in the form ``agreement`` takes for ours (times from that run's first job start)."""
    return {
        j["id"]: {
            "submit_s": j["startMS"] / 1000.0,
            "finish_s": j["endMS"] / 1000.0,
            "completion_s": j["completionS"],
        }
        for j in run["jobs"]
    }


def _brief(cmp: dict[str, Any]) -> dict[str, Any]:
    return {"within": cmp["within"], "queues": cmp["queues"], "rank": cmp["rank"], "met": cmp["met"]}


def plot(trace: str, per_scheduler: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(per_scheduler), figsize=(5 * len(per_scheduler), 4.5), squeeze=False)
    for ax, (scheduler, cmp) in zip(axes[0], per_scheduler.items(), strict=True):
        xs = [r["sls_s"] for r in cmp["jobs"]]
        ys = [r["ours_s"] for r in cmp["jobs"]]
        top = max(xs + ys) * 1.05
        ax.plot([0, top], [0, top], color="grey", lw=0.8)
        ax.fill_between([0, top], [0, top * (1 - WITHIN)], [0, top * (1 + WITHIN)], color="grey", alpha=0.15)
        for queue in sorted({r["queue"] for r in cmp["jobs"]}):
            pts = [(r["sls_s"], r["ours_s"]) for r in cmp["jobs"] if r["queue"] == queue]
            ax.scatter(*zip(*pts, strict=True), s=14, label=queue)
        ax.set_title(f"{trace}, {scheduler}: {cmp['within']:.0%} within 15 %, rank {cmp['rank']:.2f}")
        ax.set_xlabel("SLS 3.3.5 completion time (s)")
        ax.set_ylabel("mrsched simulate completion time (s)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def report(table: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = [
        "# mrsched simulate against Apache Hadoop SLS 3.3.5, job by job",
        "",
        "Made by `make bench-sls` (`bench/peers/sls/compare.py`). SLS runs the real YARN FairScheduler and "
        "CapacityScheduler (`SLSRunner`, wall-clock time); our simulator replays the same SLS trace in **`yarn` "
        "mode** (`mrsched.simulator.yarn`: an ApplicationMaster container per job, SLS's AM protocol, YARN's "
        "FairScheduler or CapacityScheduler rules as the 3.3.5 source has them) on the same nodes, named and "
        "racked as SLS's, of the trace's reference speed (no start-up, no noise, each container's time as the "
        "trace says, `replayMeasuredTime`), with SLS's container and AM sizes, heartbeats and queue settings. "
        "Not modelled: preemption (the SLS column says how many containers SLS preempted: none), reservations.",
        "",
        f"Bar (issue 22): at least {SHARE_WITHIN:.0%} of jobs within {WITHIN:.0%} of SLS's completion time, each "
        f"queue's mean within {QUEUE_MEAN_WITHIN:.0%}, rank correlation of the finish order at least "
        f"{RANK_AT_LEAST}. The table is our seed {SEEDS[0]}; *seeds* gives the share within 15 % on seeds "
        f"{SEEDS[0]}-{SEEDS[-1]} (each its own NodeManager phases, as each SLS run draws its own) and on how many "
        "the whole bar is met; *SLS vs SLS* sets each further SLS run against the first by the same measures "
        "(within 15 %, rank, each queue's mean ratio): SLS's own run-to-run spread.",
        "",
        "| trace | scheduler | jobs | within 15 % | seeds | queue means (ours / SLS) | rank corr. | met "
        "| SLS vs SLS | SLS preempted | SLS wall | ours wall |",
        "|---|---|---:|---:|---|---|---:|---|---|---:|---:|---:|",
    ]
    for trace, per in table.items():
        for scheduler, cmp in per.items():
            queues = "; ".join(
                f"{q}: {v['ours_s']} / {v['sls_s']} s ({v['ratio']:.2f})" for q, v in cmp["queues"].items()
            )
            within = [r["within"] for r in cmp["by_seed"].values()]
            met = sum(r["met"] for r in cmp["by_seed"].values())
            seeds = f"{min(within):.0%}-{max(within):.0%}, met on {met} of {len(within)}"
            itself = "; ".join(
                f"{r['run']}: {r['within']:.0%}, rank {r['rank']:.2f}, queues "
                + "/".join(f"{v['ratio']:.2f}" for v in r["queues"].values())
                + ("" if r["met"] else " (not met)")
                for r in cmp["sls_vs_itself"]
            )
            preempted = cmp.get("preempted_by_sls")
            lines.append(
                f"| {trace} | {scheduler} | {len(cmp['jobs'])} | {cmp['within']:.0%} | "
                f"{seeds} | {queues} | {cmp['rank']:.2f} | "
                f"{'yes' if cmp['met'] else 'no'} | {itself or '-'} | "
                f"{'-' if preempted is None else preempted} | {cmp['sls_wall_s']:.0f} s | "
                f"{cmp['ours_wall_s']:.2f} s ({cmp['sls_wall_s'] / cmp['ours_wall_s']:.0f}x) |"
            )
    for trace, per in table.items():
        lines += ["", f"## {trace}", "", f"![{trace}]({trace}.png)", ""]
        for scheduler, cmp in per.items():
            lines += [
                f"### {scheduler}",
                "",
                "| job | queue | SLS (s) | ours (s) | ratio |",
                "|---|---|---:|---:|---:|",
            ]
            lines += [
                f"| {r['id']} | {r['queue']} | {r['sls_s']:.1f} | {r['ours_s']:.1f} | {r['ratio']:.2f} |"
                for r in cmp["jobs"]
            ]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", help="comma-separated (default: every trace in bench/peers/sls/traces)")
    parser.add_argument(
        "--fresh-sls", action="store_true", help="run SLS again even where a result is cached"
    )
    parser.add_argument(
        "--sls-reruns",
        type=int,
        default=0,
        help="also run SLS this many more times per trace and scheduler (cached as rerun-N.json): SLS against "
        "itself",
    )
    args = parser.parse_args(argv)
    names = (
        args.traces.split(",")
        if args.traces
        else sorted(
            p.name.removesuffix(".json")
            for p in TRACES.glob("*.json")
            if not p.name.endswith((".cluster.json", ".rumen.json"))  # a cluster file; a Rumen source
        )
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for trace in names:
        cluster = sls_peer.Cluster.from_json(json.loads((TRACES / f"{trace}.cluster.json").read_text()))
        queues = queues_of(trace)
        for scheduler in SCHEDULERS:
            theirs = sls(trace, scheduler, cluster, args.fresh_sls)
            runs = {seed: ours(trace, scheduler, cluster, seed) for seed in SEEDS}
            mine, wall = runs[SEEDS[0]]
            cmp = agreement(theirs, mine, queues)
            cmp["sls_wall_s"], cmp["ours_wall_s"] = theirs["wallS"], wall
            cmp["preempted_by_sls"] = theirs.get("preemptedContainers")
            cmp["by_seed"] = {seed: _brief(agreement(theirs, m, queues)) for seed, (m, _) in runs.items()}
            for n in range(1, args.sls_reruns + 1):
                sls(trace, scheduler, cluster, args.fresh_sls, f"rerun-{n}.json")
            reruns = sorted((RESULTS / f"{trace}-{scheduler}").glob("rerun-*.json"))
            cmp["sls_vs_itself"] = [
                {
                    "run": path.stem,
                    **_brief(agreement(theirs, _as_mine(json.loads(path.read_text())), queues)),
                }
                for path in reruns
            ]
            table.setdefault(trace, {})[scheduler] = cmp
            print(f"{trace} {scheduler}: {cmp['within']:.0%} within 15 %, rank {cmp['rank']:.2f}", flush=True)
        plot(trace, table[trace], RESULTS / f"{trace}.png")
    (RESULTS / "comparison.json").write_text(json.dumps(table, indent=1) + "\n")
    (RESULTS / "README.md").write_text(report(table))
    print(f"wrote {RESULTS / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
