"""Summarise seed 003 (Tan, Meng & Zhang) against the paper: the 22-job sequence of Table IV / Fig 3 and the
200-job run on 62 nodes of Fig 16, from bench/results/tan-22-jobs/ and tan-200-jobs/results.json.

Metrics as the paper's: job response time (submission to completion), mean over jobs, then over seeds;
reduction = (Fair − Coupling) / Fair. Starvation per job (§III): mean wait, after the job's last map finished,
of its reduces launched after it; 0 when there are none. Table IV prints S_F and S_C in minutes.

Usage: .venv/bin/python bench/tan_summary.py [--results bench/results] [--out bench/results/tan-summary.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

#: Table IV: job -> (S_F, S_C) in minutes.
TABLE_IV_STARVATION = {
    "job01": (0.0, 0.0), "job02": (0.0, 0.0), "job03": (6.1, 0.0), "job04": (4.0, 0.0), "job05": (3.9, 0.0),
    "job06": (2.8, 0.0), "job07": (2.8, 0.0), "job08": (0.0, 0.2), "job09": (0.0, 0.0), "job10": (4.9, 4.5),
    "job11": (8.3, 0.9), "job12": (8.6, 0.6), "job13": (8.4, 0.2), "job14": (5.3, 3.5), "job15": (1.0, 0.0),
    "job16": (0.1, 0.0), "job17": (0.3, 5.0), "job18": (0.3, 0.0), "job19": (0.0, 0.0), "job20": (0.5, 1.1),
    "job21": (0.0, 0.0), "job22": (0.0, 0.0),
}  # fmt: skip
PAPER_22_REDUCTION = 0.391
PAPER_200_REDUCTION = 0.213
COUPLING_ENTRIES = ("coupling", "coupling:spread")


def per_job(result: dict[str, Any], policy: str) -> dict[str, dict[str, float]]:
    """Job id -> mean over seeds of response time, starvation and reduce idle time (seconds)."""
    acc: dict[str, dict[str, list[float]]] = {}
    for run in result["policies"][policy]["per_seed"]:
        for job in run.get("jobs", []):
            if job["finish_s"] is None:
                continue
            slot = acc.setdefault(job["id"], {"response": [], "starvation": [], "idle": []})
            slot["response"].append(job["finish_s"] - job["submit_s"])
            slot["starvation"].append(job.get("starvation_s", 0.0))
            slot["idle"].append(job.get("reduce_idle_s", 0.0))
    return {j: {k: statistics.fmean(v) for k, v in d.items()} for j, d in acc.items()}


def overview(result: dict[str, Any], paper: float) -> list[str]:
    policies = result["policies"]
    fair = policies["fair"]["mean_job_time_s"]
    lines = [
        "| policy | mean job time (s) | vs Fair | starvation (s) | reduce idle (s/job) | node-local maps |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, p in policies.items():
        lines.append(
            f"| {name} | {p['mean_job_time_s']:.0f} | {(fair - p['mean_job_time_s']) / fair:+.1%} | "
            f"{p['mean_starvation_s']:.1f} | {p.get('mean_reduce_idle_s', 0.0):.0f} | "
            f"{p['locality'].get('node', 0.0) + p['locality'].get('none', 0.0):.0%} |"
        )
    lines.append("")
    for entry in COUPLING_ENTRIES:
        if entry not in policies:
            continue
        got = (fair - policies[entry]["mean_job_time_s"]) / fair
        verdict = "met" if got >= paper else f"missed by {(paper - got) * 100:.1f} points"
        change = f"{got:.1%} lower" if got >= 0 else f"{-got:.1%} higher"
        lines.append(
            f"`{entry}` vs Fair: mean job time **{change}** (paper {paper:.1%} lower; aim {verdict})."
        )
    return lines


def table_iv(result: dict[str, Any]) -> list[str]:
    fair, coupling = per_job(result, "fair"), per_job(result, "coupling")
    lines = [
        "| job | Fair (s) | Coupling (s) | speed-up | S_F (min) | S_C (min) | paper S_F | paper S_C |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for job, (paper_f, paper_c) in TABLE_IV_STARVATION.items():
        if job not in fair or job not in coupling:
            continue
        f, c = fair[job], coupling[job]
        lines.append(
            f"| {job} | {f['response']:.0f} | {c['response']:.0f} | {f['response'] / c['response']:.1f}x | "
            f"{f['starvation'] / 60:.1f} | {c['starvation'] / 60:.1f} | {paper_f} | {paper_c} |"
        )
    faster = [j for j in ("job03", "job06", "job12", "job13") if j in fair and j in coupling]
    gains = ", ".join(f"{j} {1 - coupling[j]['response'] / fair[j]['response']:.0%}" for j in faster)
    lines += ["", f"Jobs 3, 6, 12, 13 (paper: > 70 % faster each): {gains}."]
    if "job03" in fair:
        lines.append(
            f"Job 3 (paper 12.8x faster): {fair['job03']['response'] / coupling['job03']['response']:.1f}x."
        )
    return lines


def cdf_dominance(result: dict[str, Any]) -> str:
    """Fig 16's claim: P[T < t] under Coupling ≥ under Fair for every t (first seed's jobs)."""
    times = {
        p: sorted(j["finish_s"] - j["submit_s"] for j in result["policies"][p]["jobs"] if j["finish_s"])
        for p in ("fair", "coupling")
    }
    grid = sorted(set(times["fair"]) | set(times["coupling"]))

    def cdf(values: list[float], t: float) -> float:
        return sum(1 for v in values if v <= t) / len(values)

    above = sum(1 for t in grid if cdf(times["coupling"], t) >= cdf(times["fair"], t))
    return (
        f"Coupling's job-time CDF is at or above Fair's at {above / len(grid):.0%} of the job times (seed 1)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("bench/results"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/tan-summary.md"))
    args = parser.parse_args()
    small = json.loads((args.results / "tan-22-jobs" / "results.json").read_text())
    large = json.loads((args.results / "tan-200-jobs" / "results.json").read_text())
    lines = [
        "# Seed 003 (Tan, Meng & Zhang): Coupling vs Fair",
        "",
        "Generated by `bench/tan_summary.py` from `tan-22-jobs` and `tan-200-jobs`; seeds "
        f"{', '.join(map(str, small['seeds']))}. `coupling:spread` is our variant (L(J) ranks only nodes "
        "without a reduce of the job); `coupling` is the literal Algorithm 2.",
        "",
        "## Table IV / Fig 3: the 22-job sequence on Set B (15 nodes, input on 7)",
        "",
        *overview(small, PAPER_22_REDUCTION),
        "",
        "Per job (means over seeds):",
        "",
        *table_iv(small),
        "",
        "## Fig 16: 200 jobs on 62 nodes (Set C)",
        "",
        *overview(large, PAPER_200_REDUCTION),
        "",
        cdf_dominance(large),
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
