"""The Kubernetes-mode contest (issue 21, 49): every policy on the heterogeneous scenarios with Kubernetes'
concurrency rule (a node takes pods while their requests fit), against the default kube-scheduler.

    python bench/kubernetes_contest.py --physics pessimistic     # the sensitivity runs, into <raw>-pessimistic
    python bench/kubernetes_contest.py --out bench/results/kubernetes-mode.md [--jobs N] [--seeds 1,2,3,4,5]

Each run is one (scenario, seed, policy): the workload is built from the seed (the same jobs for every policy),
the lower bounds computed on it, and every policy runs on the same jobs, the same nodes and the same
cluster-wide rounds, under the measured physics (``--physics pessimistic``: the sensitivity variant,
contest_setup.PESSIMISTIC). Runs are cached as JSON under ``--raw`` (one file per scenario and seed, an entry
per policy), so an interrupted sweep resumes; ``--fresh`` re-runs what the cache holds, every policy's or those
of ``--policies`` (after a change to them alone). The report is written from the caches, each scenario's seed 1
traced again for kube-default and the recommended policy (contest_setup.explain_one), and shows the
sensitivity runs beside the measured ones when they are cached (contest_report.py).

The recommended policy is fixed in :data:`RECOMMENDED` before the final run (the report says so): it is not
picked per scenario afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from contest_report import collect, report
from contest_setup import (
    NOT_RUN,
    PESSIMISTIC,
    RECOMMENDED,
    ROOT,
    SCENARIOS,
    VARIANTS,
    explain_one,
    rebound,
    sweep,
)


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
    parser.add_argument(
        "--rebound", action="store_true", help="recompute the cached runs' lower bounds, then the report"
    )
    parser.add_argument(
        "--physics",
        choices=list(VARIANTS),
        default="measured",
        help="run (into <raw>-<physics>) under a sensitivity variant of the physics instead; the report of the "
        "measured runs then shows both",
    )
    args = parser.parse_args(argv)
    names = args.scenarios.split(",") if args.scenarios else [n for n in SCENARIOS if n not in NOT_RUN]
    seeds = [int(s) for s in args.seeds.split(",")]
    only = args.policies.split(",") if args.policies else None
    variant_raw = {v: args.raw.with_name(f"{args.raw.name}-{v}") for v in VARIANTS if VARIANTS[v]}
    if args.physics != "measured":  # a sensitivity sweep: its cache only; the report is the measured one's
        if args.rebound:
            rebound(variant_raw[args.physics], VARIANTS[args.physics])
            return 0
        sweep(
            names,
            seeds,
            variant_raw[args.physics],
            args.jobs,
            args.fresh,
            only,
            variant=VARIANTS[args.physics],
        )
        return 0
    if args.rebound:
        rebound(args.raw)
    elif not args.report_only:
        sweep(names, seeds, args.raw, args.jobs, args.fresh, only)
    table = collect(names, seeds, args.raw)
    explained = {}
    for name in table:
        cached = args.raw / f"explain-{name}.json"
        if (args.fresh and (not only or RECOMMENDED in only)) or not cached.exists():
            cached.write_text(json.dumps(explain_one(name), indent=1) + "\n")
        explained[name] = json.loads(cached.read_text())
    sensitivity = None
    if pessimistic := collect(names, seeds, variant_raw["pessimistic"]):
        sensitivity = (pessimistic, "pessimistic packing", f"The physics there: {PESSIMISTIC['reason']}.")
    args.out.write_text(report(table, seeds, explained, sensitivity))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
