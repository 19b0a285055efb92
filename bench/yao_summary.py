"""Summarise seed 004 (Yao, Tai, Sheng & Mi) against the paper's Fig 1: the four-user workload of Table II and
our variant with user 2's job sizes made heavy-tailed, from <mode dir>/yao-four-users*/results.json.

The metric is the average job execution (response) time, submission to completion: per user, and overall as
the mean over all 285 jobs (the reading the digest recommends, §2.5) and as the mean of the four per-user means;
each the mean over the scenario's seeds. Factors are FIFO's (or Fair's) time over LsPS's, as the paper's text
speaks of them ("3.5 times", "1.8 times"). Capacity runs with one queue per user; ``greedy-informed`` is a
greedy heuristic told the true physics (a reference, not a bound).

A scenario whose results rest on target-fitted constants (results.json's ``targetFitted``, else its scenario
file: mrsched.simulator.fitted) has each listed with its source, and none of its verdicts reads "met".

Usage: .venv/bin/python bench/yao_summary.py --results bench/results/hadoop [--out <results>/yao-summary.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from mrsched.simulator import fitted

PAPER_VS_FIFO, PAPER_VS_FAIR = 3.5, 1.8
SCENARIOS = (
    ("yao-four-users", "Table II workload (Fig 1)"),
    ("yao-four-users-variable", "variant: user 2's job sizes heavy-tailed (ours)"),
)
LABELS = {"fifo": "FIFO", "fair": "Fair"}
#: Where a results.json without ``targetFitted`` finds its flags (its scenario file).
SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
DASH = "-"


def modes(results: list[dict[str, Any]]) -> str:
    """The placement mode the results ran in (results.json's ``mode``); several are named if they differ."""
    return ", ".join(sorted({str(r.get("mode", "unknown")) for r in results})) or "unknown"


def verdicts(result: dict[str, Any]) -> list[tuple[str, float | None, float, str]]:
    """(baseline, LsPS's factor over it or None, the paper's factor, verdict) for FIFO and Fair; a verdict of
    results that rest on target-fitted constants is never "met" (mrsched.simulator.fitted.claim)."""
    policies = result["policies"]
    flags = fitted.recorded(result, SCENARIO_DIR)
    rows = []
    for base, paper in (("fifo", PAPER_VS_FIFO), ("fair", PAPER_VS_FAIR)):
        if base not in policies or "lsps" not in policies:
            rows.append((base, None, paper, DASH))
            continue
        factor = policies[base]["mean_job_time_s"] / policies["lsps"]["mean_job_time_s"]
        verdict = "met" if factor >= paper else f"missed: {factor / paper:.0%} of the paper's factor"
        rows.append((base, factor, paper, fitted.claim(verdict, flags)))
    return rows


def section(result: dict[str, Any], title: str) -> list[str]:
    policies = result["policies"]
    flags = fitted.recorded(result, SCENARIO_DIR)
    users = sorted({u for p in policies.values() for u in p["mean_job_time_by_user_s"]})
    lines = [
        f"## {result['scenario']}: {title}",
        "",
        *fitted.describe(flags),
        "| policy | all jobs (s) | mean of user means (s) | " + " | ".join(users) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in users) + " |",
    ]
    for name, p in policies.items():
        by_user = p["mean_job_time_by_user_s"]
        lines.append(
            f"| {name} | {p['mean_job_time_s']:.0f} | {statistics.fmean(by_user.values()):.0f} | "
            + " | ".join(f"{by_user[u]:.0f}" if u in by_user else DASH for u in users)
            + " |"
        )
    lines += ["", "| LsPS vs | ours | paper | verdict |", "| --- | ---: | ---: | --- |"]
    for base, factor, paper, verdict in verdicts(result):
        ours = DASH if factor is None else f"{factor:.2f}x"
        lines.append(f"| {LABELS[base]} | {ours} | {paper}x | {verdict} |")
    fifo_u4 = policies.get("fifo", {}).get("mean_job_time_by_user_s", {}).get("user4")
    lsps_u4 = policies.get("lsps", {}).get("mean_job_time_by_user_s", {}).get("user4")
    if fifo_u4 and lsps_u4:
        lines += [
            "",
            f"User 4 (Sort) under LsPS: {lsps_u4:.0f} s vs FIFO {fifo_u4:.0f} s (paper: no worse than FIFO; "
            f"{fitted.claim('met' if lsps_u4 <= fifo_u4 else 'not met', flags)}).",
        ]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results/hadoop"), help="a mode directory")
    parser.add_argument("--out", type=Path, default=None, help="default: <results>/yao-summary.md")
    args = parser.parse_args()
    found = []
    for name, title in SCENARIOS:
        path = args.results / name / "results.json"
        if path.exists():
            found.append((json.loads(path.read_text()), title))
    if not found:
        sys.exit(f"no yao-four-users* results under {args.results}")
    mode = modes([result for result, _ in found])
    lines = [
        f"# Seed 004 (Yao, Tai, Sheng & Mi): LsPS vs FIFO and Fair, {mode} mode",
        "",
        f"Placement mode: **{mode}** (results.json's `mode`; the same for every policy of a run).",
        "",
        "Generated by `bench/yao_summary.py`. Mean job response time (s), means over seeds; LsPS's factor = the "
        "baseline's mean job time / LsPS's. Capacity runs one queue per user. `greedy-informed` is a greedy "
        "heuristic told the true physics (a reference, not a bound). A `-`: not run here.",
        "",
    ]
    for result, title in found:
        lines += section(result, title)
    (args.out or args.results / "yao-summary.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
