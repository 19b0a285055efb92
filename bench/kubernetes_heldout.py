"""The Kubernetes-mode contest's held-out check (issue 21): the recommended policy's job rule on scenarios that
were not run when the rule was chosen.

    python bench/kubernetes_heldout.py --out bench/results/kubernetes-heldout.md [--jobs N]

DARA's and diagnosis's ``shortestFirst`` (by requests, mix only the jobs with the least work left that fill the
cluster) was chosen among four readings by measuring them on the contest's scenarios (its report,
bench/results/kubernetes-mode.md, says so), so the contest is no test of it. This runs the scenarios with mixed
jobs that the choice never ran, in the same mode (kubernetes placement, concurrency by requests, 5 seeds):
kube-default, the recommended policy as shipped (the thesis's every-job mix) and the same policy with
``shortestFirst: true``. Runs are cached as JSON under ``--raw`` (one file per scenario and seed), as the
contest's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from contest_report import collect, misses, why
from contest_setup import (
    EXPERIMENTS,
    OURS,
    OURS_BAR,
    OURS_LIMIT,
    RECOMMENDED,
    SCENARIOS,
    explain_one,
    rebound,
    sweep,
)

ROOT = Path(__file__).resolve().parent
#: Scenarios with mixed jobs outside the contest, none of them run when the rule was chosen: Table 4.3's other
#: thirteen workloads, seed 001's other job sets and seed 000's job mix.
HELD_OUT = [
    *(f"dara-wl{i}" for i in range(1, 17) if f"dara-wl{i}" not in SCENARIOS),
    "elkholy-jobs-3",
    "elkholy-jobs-5",
    "elkholy-jobs-6",
    "elkholy-jobs-7",
    "dhok-job-mix",
]
#: Left out, and why: seed 004's four users (350 jobs) under the three policies did not finish a seed in 10
#: minutes on this 2-core machine, while the others take seconds (the simulator's speed is issue 24's).
LEFT_OUT = {"yao-four-users": "did not finish a seed in 10 minutes (issue 24)"}
#: The recommended policy with the job rule chosen on the contest (its experiment there).
RULE = f"{RECOMMENDED}:shortest-first"
POLICIES = ("kube-default", RECOMMENDED, RULE, OURS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "kubernetes-heldout.md")
    parser.add_argument("--raw", type=Path, default=ROOT / "results" / "kubernetes-heldout")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fresh", action="store_true", help="re-run what the cache holds")
    parser.add_argument("--policies", help="with --fresh: re-run only these (comma-separated)")
    parser.add_argument(
        "--rebound", action="store_true", help="recompute the cached runs' lower bounds, then the report"
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    only = args.policies.split(",") if args.policies else None
    if args.rebound:
        rebound(args.raw)
    else:
        sweep(HELD_OUT, seeds, args.raw, args.jobs, args.fresh, only, policies=lambda _: list(POLICIES))
    table = collect(HELD_OUT, seeds, args.raw)
    explained = {}
    for name, row in table.items():
        if loses(row):  # traced on seed 1, as the contest's misses (cached beside the runs)
            cached = args.raw / f"explain-{name}.json"
            if args.fresh or not cached.exists():
                cached.write_text(json.dumps(explain_one(name), indent=1) + "\n")
            explained[name] = json.loads(cached.read_text())
    args.out.write_text(report(table, explained))
    print(f"wrote {args.out}")
    return 0


def loses(row: dict[str, Any]) -> bool:
    """The recommended policy as shipped is not below kube-default's mean job time."""
    return misses(row)[0]


def report(table: dict[str, dict[str, Any]], explained: dict[str, Any] | None = None) -> str:
    rows, wins, wins_without, better, worse = [], 0, 0, 0, 0
    ours_good = ours_bad = ours_short = ours_ran = 0
    for name, row in table.items():
        mean = {p: v for p, v in row["policies"].items() if "error" not in v}
        bound, mean_bound, kube = row["lower_bound_s"], row["mean_bound_s"], mean["kube-default"]
        cells = [
            f"{mean[p]['makespan_s'] / kube['makespan_s']:.2f} / {mean[p]['makespan_s'] / bound:.2f} / "
            f"{mean[p]['mean_job_time_s'] / kube['mean_job_time_s']:.2f} / "
            f"{mean[p]['mean_job_time_s'] / mean_bound:.2f}"
            if p in mean
            else "error"
            for p in POLICIES[1:]
        ]
        if RULE in mean and RECOMMENDED in mean:
            ratio = mean[RULE]["mean_job_time_s"] / mean[RECOMMENDED]["mean_job_time_s"]
            better, worse = better + (ratio < 0.995), worse + (ratio > 1.005)
        if OURS in mean:
            ratio, span = (mean[OURS][k] / kube[k] for k in ("mean_job_time_s", "makespan_s"))
            ours_ran += 1
            ours_good, ours_bad = ours_good + (ratio <= OURS_BAR), ours_bad + (ratio > OURS_LIMIT)
            ours_short += span <= OURS_LIMIT
        wins += RULE in mean and mean[RULE]["mean_job_time_s"] < kube["mean_job_time_s"]
        wins_without += RECOMMENDED in mean and mean[RECOMMENDED]["mean_job_time_s"] < kube["mean_job_time_s"]
        rows.append(
            f"| {name} | {len(row['seeds'])} | {kube['makespan_s']:.0f} / {kube['mean_job_time_s']:.0f} | "
            f"{bound:.0f} / {mean_bound:.0f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(
        [
            "# Held out: the recommended policy's job rule on scenarios it was not chosen on",
            "",
            "Made by `make bench-kubernetes-heldout` (`bench/kubernetes_heldout.py`). "
            + (__doc__ or "").split("\n\n")[2].replace("\n", " "),
            "",
            f"Each cell: makespan over kube-default's / makespan over its lower bound / mean job time over "
            f"kube-default's / mean job time over its lower bound (means over seeds; lower is better; the bounds and "
            f"the measured physics as in bench/results/kubernetes-mode.md, DARA's α given to {RECOMMENDED} too). "
            f"`{RULE}` is `{RECOMMENDED}` with {json.dumps(EXPERIMENTS[RULE])}.",
            "",
            f"| scenario | seeds | kube-default makespan / mean job (s) | bounds (s) | {RECOMMENDED} | {RULE} | "
            f"{OURS} |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"**{RULE}** beats kube-default's mean job time on {wins} of {len(rows)} held-out scenarios; "
            f"**{RECOMMENDED}** as shipped (the thesis's every-job mix) on {wins_without}. The rule shortens "
            f"{RECOMMENDED}'s mean job time on {better} of them, lengthens it on {worse} (by more than 0.5 %), "
            "so it stays off.",
            "",
            f"**{OURS}** (the product's own policy, docs/mrsched.md, as it ships; none of these scenarios was run "
            f"when its options were chosen): mean job time at most {OURS_BAR:.2f}x kube-default's on {ours_good} "
            f"of {ours_ran}, above {OURS_LIMIT:.2f}x on {ours_bad}; makespan at most {OURS_LIMIT:.2f}x "
            f"kube-default's on {ours_short} of {ours_ran}.",
            "",
            *(f"Not run: {name}, which {reason}." for name, reason in LEFT_OUT.items()),
            "",
            f"## Where {RECOMMENDED} loses to kube-default: what its traced run shows",
            "",
            "Seed 1 of each such scenario again under kube-default and the recommended policy, traced round by "
            "round as in the contest (mrsched.simulator.trace; a sentence appears only where its figure stands out).",
            "",
            *[line for name, row in table.items() if loses(row) for line in why(name, row, explained or {})],
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
