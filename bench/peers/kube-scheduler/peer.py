"""The simulator's kube-default against the real kube-scheduler on the same pod streams (issue 49).

    python bench/peers/kube-scheduler/peer.py [--streams a,b] [--out bench/results/kube-scheduler-peer.md]

For each stream of streams/ (streams.py makes them): on a fresh local control plane (kwokctl: the real
kube-apiserver, etcd, kube-controller-manager and kube-scheduler v1.35.4, kwok playing the kubelet of nodes of
the stream's sizes), this process plays the operator and the pods' run: it creates each pod when the stream says
(a group's pods once every pod of the group it waits for is bound, as the operator creates reduce pods), and
deletes each pod its run time after it is bound (a finished task pod leaves kube-scheduler's informer: a delete
event for it). The real kube-scheduler binds them. Then the simulator's kube-default (mrsched.policies:
kube_queue's queue, kube_default's scores) replays the same stream on the same nodes, its clock aligned to the
real one's 1 s back-off window, and whenever several nodes tie for the best score it takes the node the real
scheduler took, if that node is among them (both break ties at random: a tie taken differently is no
disagreement, and the two runs stay comparable after it).

Reported per stream: the share of pods placed on the real scheduler's node (exactly, and counting a tie the
real node was part of), the rank correlation of the two bind orders (Kendall's tau), each pod's wait from its
creation to its binding (mean, both), and where they differ, the pods that did and why as far as the run tells.
Written to bench/results/kube-scheduler-peer.md and .json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from real import run_real
from replay import TIMER_WINDOW_S, compare, simulate

from mrsched.localcluster.toolchain import Toolchain

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _spread(values: list[float], fmt: str) -> str:
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.fmean(values), fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"


def report(results: dict[str, list[dict[str, Any]]], streams: dict[str, dict[str, Any]]) -> str:
    """The markdown report: per stream, each measure's mean [min, max] over its runs, and the first run's
    differences."""
    lines = [
        "# kube-default against the real kube-scheduler, on the same pod streams",
        "",
        "Made by `make bench-kube-peer` (`bench/peers/kube-scheduler/peer.py`; the streams by `streams.py`). "
        + (__doc__ or "").split("\n\n")[2].replace("\n", " "),
        "",
        "Each stream ran "
        + ", ".join(f"{name} {len(runs)}" for name, runs in results.items())
        + " times on a fresh control plane (each value: mean [min, max] over the runs). *Scores on the real "
        "states*: for each real binding, the simulator's scores on the real cluster's state at that moment (the "
        "pods bound and not yet deleted) rank the real scheduler's node among the best: the score function's "
        "agreement, timing apart. *Timer bindings*: real bindings no pod creation or deletion preceded by "
        f"{TIMER_WINDOW_S} s or less (module docstring of `timer_bindings`).",
        "",
        "| stream | pods | nodes | scores on the real states | same node | same node or a tie | same node, a "
        "job's pods alike | bind order (Kendall's tau) | mean wait real / simulated (s) | timer bindings |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in results.items():

        def measure(key: str, fmt: str, runs: list[dict[str, Any]] = runs) -> str:
            return _spread([float(x[key]) for x in runs], fmt)

        cells = [
            str(runs[0]["pods"]),
            str(len(streams[name]["nodes"])),
            measure("scoresAlongReal", ".0%"),
            measure("sameNode", ".0%"),
            measure("sameNodeOrTie", ".0%"),
            measure("sameNodeByGroup", ".0%"),
            measure("kendallTau", ".3f"),
            f"{measure('meanWaitReal', '.2f')} / {measure('meanWaitSimulated', '.2f')}",
            measure("timerBindings", ".0f"),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## The streams", ""]
    lines += [
        f"* **{name}**: {s['about']} ({len(s['pods'])} pods)."
        for name, s in streams.items()
        if name in results
    ]
    lines += ["", "## Where they differ (the first run of each)", ""]
    for name, runs in results.items():
        r = runs[0]
        if r["scoresWrong"]:
            lines.append(
                f"* **{name}**: the scores rank the real node lower on {len(r['scoresWrong'])} real bindings, each "
                "within a few hundredths of a second of a pod's deletion, which the scheduler's cache may not yet "
                "have seen (the state rebuilt here counts the pod gone):"
            )
            lines += [
                f"  * {w['pod']} at {w['boundS']} s, {w['sinceEndMs']} ms after a deletion: real {w['real']}, "
                f"best {', '.join(w['best'])}"
                for w in r["scoresWrong"][:5]
            ]
        if not r["differ"]:
            lines.append(f"* **{name}**: every pod on the real scheduler's node or on a node tied with it.")
            continue
        attempts = r["schedulerAttempts"]
        interval, gap = attempts.get("intervalMs", math.nan), r["medianEventGapMs"]
        pass_ms = r["meanWaiting"] * interval
        pace = (
            f"a pass over the {r['meanWaiting']:.0f} pods waiting on average takes about {pass_ms:.0f} ms, "
            + (
                f"longer than the {gap:.0f} ms between two pod ends (median): a pod one end moved may not have been "
                "tried when the next end comes, so the real order among waiting pods follows the scheduler's pace, "
                "where the simulator's rounds are instants"
                if pass_ms > gap
                else f"shorter than the {gap:.0f} ms between two pod ends (median): the pace does not explain it"
            )
        )
        lines.append(
            f"* **{name}**: {len(r['differ'])} pods elsewhere than the real scheduler put them, the first at "
            f"{min(d['realBoundS'] for d in r['differ']):.1f} s (once one pod differs, the cluster the next ones see "
            f"differs too); {r['timerBindings']} real bindings came from a timer of the queue, not an event. The real "
            f"scheduler's attempts took {attempts.get('meanMs', math.nan):.1f} ms each and followed one another "
            f"every {interval:.0f} ms on average (median {attempts.get('intervalMedianMs', math.nan):.0f} ms; its "
            f"log at -v=5); {pace}."
        )
        for d in r["differ"][:8]:
            lines.append(
                f"  * {d['pod']}: real {d['real']} at {d['realBoundS']} s, simulated {d['simulated']} "
                f"(best: {', '.join(d['ties'])}) at {d['simulatedBoundS']} s"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", help="comma-separated names (default: every stream of streams/)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each stream (default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "kube-scheduler-peer.md")
    args = parser.parse_args(argv)
    files = sorted((HERE / "streams").glob("*.json"))
    streams = {f.stem: json.loads(f.read_text()) for f in files}
    names = args.streams.split(",") if args.streams else list(streams)
    tool = Toolchain.locate()
    results: dict[str, list[dict[str, Any]]] = {}
    raw: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="mrsched-peer-") as tmp:
                real = run_real(tool, streams[name], Path(tmp))
            sim = simulate(streams[name], real)
            r = compare(streams[name], real, sim)
            results.setdefault(name, []).append(r)
            raw.setdefault(name, []).append(
                {
                    "real": {n: p.to_json() for n, p in real.placed.items()},
                    "simulated": {n: p.to_json() for n, p in sim.items()},
                    "created": real.created,
                    "ended": real.ended,
                    "offset": real.offset,
                }
            )
            print(
                f"{name}: scores {r['scoresAlongReal']:.0%}, same node {r['sameNode']:.0%}, "
                f"tau {r['kendallTau']:.3f}, timer bindings {r['timerBindings']}",
                flush=True,
            )
    args.out.write_text(report(results, streams))
    args.out.with_suffix(".json").write_text(json.dumps({"results": results, "runs": raw}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
