"""Summarise seed 001 (Elkholy & Sallam) against the paper: Table V (the four-job batch under Fair with 2-7 fixed
map slots per node vs the self-adaptive scheduler) and Table VI (batches of 3-7 jobs vs Fair with 2 slots),
from <mode dir>/elkholy-*/results.json.

The metric is the batch's completion time (first submission to last job finished, digest A9), the mean over the
scenario's seeds; improvement = (Fair − adaptive) / Fair, as the paper computes it. Results that rest on
target-fitted constants (results.json's ``targetFitted``, else the scenario file's: mrsched.simulator.fitted)
are listed with their sources, and no verdict over them reads "met".

Usage: .venv/bin/python bench/elkholy_summary.py --results bench/results/hadoop [--out <results>/elkholy-summary.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from mrsched.simulator import fitted

ADAPTIVE = "adaptive-slots"
#: Table V: Fair's batch time per fixed map-slot count; the adaptive run is 696 s in every row.
TABLE_V = {2: 1005, 3: 856, 4: 786, 5: 747, 6: 714, 7: 755}
PAPER_ADAPTIVE_4 = 696
#: Table VI: jobs → (Fair with 2 slots, adaptive).
TABLE_VI = {3: (950, 676), 4: (1005, 696), 5: (1107, 744), 6: (1143, 790), 7: (1220, 829)}
DASH = "-"
#: Where a results.json without ``targetFitted`` finds its flags (its scenario file).
SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"


def modes(results: list[dict[str, Any]]) -> str:
    """The placement mode the results ran in (results.json's ``mode``); several are named if they differ."""
    return ", ".join(sorted({str(r.get("mode", "unknown")) for r in results})) or "unknown"


def mean_makespan(result: dict[str, Any], policy: str) -> tuple[float, float] | None:
    """Mean and spread of the makespan over seeds; None when the scenario did not run the policy."""
    if policy not in result["policies"]:
        return None
    runs = [r["makespan_s"] for r in result["policies"][policy]["per_seed"]]
    return statistics.fmean(runs), statistics.pstdev(runs)


def _verdict(beaten: int, ran: int, paper: int) -> str:
    """The aim is that adaptive slots beat Fair in every case of the paper's table."""
    if beaten < ran or not ran:
        return "not met"
    return "met" if ran == paper else f"met where run ({paper - ran} not run)"


def table_v(result: dict[str, Any]) -> list[str]:
    lines = ["## Table V: four-job batch, Fair with fixed map slots vs adaptive slots", ""]
    adaptive_run = mean_makespan(result, ADAPTIVE)
    if adaptive_run is None:
        return [*lines, f"`{ADAPTIVE}` did not run in elkholy-four-jobs: no comparison."]
    adaptive, adaptive_sd = adaptive_run
    lines += [
        f"Adaptive slots: **{adaptive:.0f} ± {adaptive_sd:.0f} s** (paper {PAPER_ADAPTIVE_4} s).",
        "",
        "| Fair map slots/node | Fair (s) | improvement | paper Fair (s) | paper improvement |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    beaten = ran = 0
    for slots, paper in TABLE_V.items():
        label = "fair" if slots == 2 else f"fair:slots{slots}"
        paper_gain = f"{(paper - PAPER_ADAPTIVE_4) / paper:+.1%}"
        fair_run = mean_makespan(result, label)
        if fair_run is None:
            lines.append(f"| {slots} | {DASH} | {DASH} | {paper} | {paper_gain} |")
            continue
        fair, sd = fair_run
        gain = (fair - adaptive) / fair
        ran += 1
        beaten += gain > 0
        lines.append(f"| {slots} | {fair:.0f} ± {sd:.0f} | {gain:+.1%} | {paper} | {paper_gain} |")
    flags = fitted.recorded(result, SCENARIO_DIR)
    verdict = fitted.claim(_verdict(beaten, ran, len(TABLE_V)), flags)
    lines += [
        "",
        *fitted.describe(flags),
        f"Adaptive slots beat Fair at {beaten} of {ran} fixed slot counts run; paper: all {len(TABLE_V)}. "
        f"Verdict: {verdict}.",
    ]
    return lines


def table_vi(results: dict[int, dict[str, Any]]) -> list[str]:
    lines = [
        "## Table VI: batches of 3-7 jobs, Fair with 2 map slots vs adaptive slots",
        "",
        "| jobs | Fair-2 (s) | adaptive (s) | improvement | paper Fair-2 | paper adaptive | paper improvement |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    beaten = compared = 0
    for count, result in sorted(results.items()):
        fair_run, adaptive_run = mean_makespan(result, "fair"), mean_makespan(result, ADAPTIVE)
        if fair_run is not None and adaptive_run is not None:
            compared += 1
            beaten += adaptive_run[0] < fair_run[0]
        paper_fair, paper_adaptive = TABLE_VI[count]
        fair = DASH if fair_run is None else f"{fair_run[0]:.0f}"
        adaptive = DASH if adaptive_run is None else f"{adaptive_run[0]:.0f}"
        gain = (
            DASH
            if fair_run is None or adaptive_run is None
            else f"{(fair_run[0] - adaptive_run[0]) / fair_run[0]:+.1%}"
        )
        lines.append(
            f"| {count} | {fair} | {adaptive} | {gain} | {paper_fair} | {paper_adaptive} | "
            f"{(paper_fair - paper_adaptive) / paper_fair:+.1%} |"
        )
    flags = fitted.merge(*(fitted.recorded(r, SCENARIO_DIR) for r in results.values()))
    verdict = fitted.claim(_verdict(beaten, compared, len(TABLE_VI)), flags)
    lines += [
        "",
        *fitted.describe(flags),
        f"Adaptive slots beat Fair-2 in {beaten} of {compared} batches run; paper: all {len(TABLE_VI)}. "
        f"Verdict: {verdict}.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results/hadoop"), help="a mode directory")
    parser.add_argument("--out", type=Path, default=None, help="default: <results>/elkholy-summary.md")
    args = parser.parse_args()
    batches: dict[int, dict[str, Any]] = {}
    for count in TABLE_VI:
        name = "elkholy-four-jobs" if count == 4 else f"elkholy-jobs-{count}"
        path = args.results / name / "results.json"
        if path.exists():
            batches[count] = json.loads(path.read_text())
    if not batches:
        sys.exit(f"no elkholy-* results under {args.results}")
    mode = modes(list(batches.values()))
    four = batches.get(4)
    text = "\n".join(
        [
            f"# Seed 001 (Elkholy & Sallam): self-adaptive slots against Fair, {mode} mode",
            "",
            f"Placement mode: **{mode}** (results.json's `mode`; the same for every policy of a run).",
            "",
            "Generated by `bench/elkholy_summary.py` from `elkholy-*/results.json` (means over each scenario's "
            "seeds; batch completion time, digest A9). A `-`: not run here.",
            "",
            *(
                table_v(four)
                if four
                else ["## Table V", "", "Not run here (no elkholy-four-jobs/results.json)."]
            ),
            "",
            *table_vi(batches),
            "",
        ]
    )
    (args.out or args.results / "elkholy-summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
