"""Chapter 6's steady state (seed 002 §6.2.1, Fig 6.1): the ``diagnosis`` policy (β = 0, beliefs updated) on
Table 4.3's 16 workloads, against the same scheduler with frozen beliefs ("without Pervasive Diagnosis"), DARA,
Capacity and Fair. The thesis reports cluster throughput "up to +18 %" over CapacityScheduler in steady mode,
per-workload values not stated (digest §6.2 [R]: reuse Table 4.3). The dara-wl scenarios have one queue, where
Hadoop 1's CapacityScheduler orders jobs as FIFO does, so they do not run ``capacity``: the thesis's
vs-Capacity figure is held against our ``fifo`` row. ``greedy-informed`` is a greedy heuristic told the true
physics (a reference, not a bound).

Runs ``diagnosis`` and ``diagnosis:frozen`` on every bench/scenarios/dara-wl*.yaml in the given placement mode
(the scenario's seeds, the same workloads as its committed results) and reads the other policies from
bench/results/<mode>/dara-wl*/results.json. Throughput of a workload = its work ÷ its makespan, so a throughput
ratio is the inverse makespan ratio.

Both diagnosis entries start from the dara-wl scenario's offline α, so every row rests on the target-fitted
constants of its scenario (results.json's ``targetFitted``, else the scenario file's: mrsched.simulator.fitted):
they are listed with their sources, and no verdict over them reads "met".

Usage: .venv/bin/python bench/gupta_ch6_steady.py [--mode hadoop] [--seeds 1,2,3] [--results DIR] [--out FILE]
(default --results bench/results/<mode>, --out <results>/gupta-ch6-steady.md)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from mrsched.simulator import fitted
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import MODES, load_scenario

REPO = Path(__file__).resolve().parents[1]
NEW = ("diagnosis", "diagnosis:frozen")
REFERENCE = "greedy-informed"
OLD = ("fifo", "fair", "dara", REFERENCE)
BASES = ("diagnosis:frozen", "fifo", "fair")
CAPACITY_NOTE = (
    "Capacity with one queue = FIFO: the thesis's vs-Capacity figure is compared with our fifo row"
)
DASH = "-"


def committed_means(committed: dict[str, Any] | None, chosen: list[int]) -> dict[str, float | None]:
    """Each committed policy's mean makespan over exactly the chosen seeds (the same workloads as ours); None
    when the results are missing, lack a chosen seed, or did not run the policy."""
    out: dict[str, float | None] = dict.fromkeys(OLD)
    if committed is None or not set(chosen) <= set(committed["seeds"]):
        return out
    picked = [committed["seeds"].index(seed) for seed in chosen]
    for name in OLD:
        if name in committed["policies"]:
            runs = committed["policies"][name]["per_seed"]
            out[name] = statistics.fmean(runs[i]["makespan_s"] for i in picked)
    return out


def workload_rows(seeds: list[int] | None, mode: str, results: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(REPO.glob("bench/scenarios/dara-wl*.yaml"), key=lambda p: int(p.stem[7:])):
        scenario = load_scenario(path)
        alphas = (scenario.policy_options.get("dara") or {}).get("alphas", {})
        options = {**scenario.policy_options, "diagnosis": {"alphas": alphas}}
        options["diagnosis:frozen"] = {"alphas": alphas, "freeze": True}
        chosen = seeds or scenario.seeds
        ours, _ = run_scenario(
            scenario.model_copy(update={"policies": list(NEW), "policy_options": options}),
            seeds=chosen,
            mode=mode,
        )
        path_json = results / path.stem / "results.json"
        committed = json.loads(path_json.read_text()) if path_json.exists() else None
        if committed is not None and committed.get("mode") != mode:
            raise SystemExit(f"{path_json} ran in {committed.get('mode')} mode, not {mode}")
        flags = fitted.merge(
            ours["targetFitted"], *([fitted.recorded(committed, path.parent)] if committed else [])
        )
        row: dict[str, Any] = {"wl": path.stem.removeprefix("dara-"), "seeds": len(chosen), "flags": flags}
        for name in NEW:
            row[name] = statistics.fmean(r["makespan_s"] for r in ours["policies"][name]["per_seed"])
        row.update(committed_means(committed, chosen))
        rows.append(row)
        print(row["wl"], {k: round(v) for k, v in row.items() if isinstance(v, float)}, flush=True)
    return rows


def gain(row: dict[str, Any], base: str) -> float | None:
    """Throughput ratio − 1 (the work is fixed): baseline makespan / diagnosis makespan − 1."""
    return None if row.get(base) is None else float(row[base]) / float(row["diagnosis"]) - 1.0


def _fmt(value: float | None, spec: str) -> str:
    return DASH if value is None else format(value, spec)


def markdown(rows: list[dict[str, Any]], mode: str) -> str:
    lines = [
        f"# Pervasive diagnosis in steady state (seed 002 §6.2.1, Fig 6.1): {mode} mode",
        "",
        f"Placement mode: **{mode}** (results.json's `mode`; the same for every policy of a run).",
        "",
        "Generated by `bench/gupta_ch6_steady.py`. Makespan (s) per Table 4.3 workload, mean over seeds;",
        "throughput gain = baseline makespan / diagnosis makespan − 1 (the work is the same).",
        "",
        f"{CAPACITY_NOTE}",
        "(Hadoop 1's Capacity with one queue orders jobs as FIFO does, so these scenarios do not run `capacity`).",
        f"`{REFERENCE}` is a greedy heuristic told the true physics: a reference, not a bound. A `-`: no committed",
        "result for that policy and these seeds; the means below are over the workloads that have one.",
        "",
        *fitted.describe(fitted.merge(*(r["flags"] for r in rows))),
        f"| WL | seeds | diagnosis | frozen | DARA | FIFO (= Capacity) | Fair | {REFERENCE} | gain vs frozen "
        f"| vs FIFO (= Capacity) | vs Fair | diagnosis / {REFERENCE} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = r["diagnosis"] / r[REFERENCE] if r.get(REFERENCE) else None
        lines.append(
            f"| {r['wl']} | {r['seeds']} | {r['diagnosis']:.0f} | {r['diagnosis:frozen']:.0f} "
            f"| {_fmt(r.get('dara'), '.0f')} | {_fmt(r.get('fifo'), '.0f')} | {_fmt(r.get('fair'), '.0f')} "
            f"| {_fmt(r.get(REFERENCE), '.0f')} | {_fmt(gain(r, 'diagnosis:frozen'), '+.1%')} "
            f"| {_fmt(gain(r, 'fifo'), '+.1%')} | {_fmt(gain(r, 'fair'), '+.1%')} | {_fmt(ratio, '.2f')} |"
        )
    lines += ["", *verdict_table(rows), ""]
    return "\n".join(lines)


def verdict_table(rows: list[dict[str, Any]]) -> list[str]:
    gains = {b: [g for r in rows if (g := gain(r, b)) is not None] for b in BASES}
    count = {b: len(v) for b, v in gains.items()}
    mean = {b: statistics.fmean(v) if v else None for b, v in gains.items()}
    best = {b: max(v) if v else None for b, v in gains.items()}
    ratios = [r["diagnosis"] / r[REFERENCE] for r in rows if r.get(REFERENCE)]
    worst = max(ratios) if ratios else None
    flags = fitted.merge(*(r["flags"] for r in rows))  # every row's: the means and extremes rest on them all

    def met(value: float | None, ok: bool) -> str:
        return DASH if value is None else fitted.claim("met" if ok else "not met", flags)

    frozen, fifo = mean["diagnosis:frozen"], best["fifo"]
    return [
        "| metric | this run | thesis / aim | verdict |",
        "|---|---:|---:|---|",
        f"| mean throughput gain vs frozen beliefs, {count['diagnosis:frozen']} workloads "
        f"| {_fmt(frozen, '+.1%')} | aim ≥ +18 % (issue 10) "
        f"| {met(frozen, frozen is not None and frozen >= 0.18)} |",
        f"| largest gain vs frozen beliefs | {_fmt(best['diagnosis:frozen'], '+.1%')} | | |",
        f"| mean gain vs Capacity (= FIFO, one queue), {count['fifo']} workloads | {_fmt(mean['fifo'], '+.1%')} | | |",
        f"| largest gain vs Capacity (= FIFO, one queue) | {_fmt(fifo, '+.1%')} | up to +18 % (§6.2.1) "
        f"| {met(fifo, fifo is not None and fifo >= 0.18)} |",
        f"| mean gain vs Fair, {count['fair']} workloads | {_fmt(mean['fair'], '+.1%')} | | |",
        f"| worst diagnosis / {REFERENCE} | {_fmt(worst, '.2f')} | aim ≤ 1.2 "
        f"| {met(worst, worst is not None and worst <= 1.2)} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="hadoop", help="placement mode (default hadoop)")
    parser.add_argument("--seeds", help="comma-separated seeds (default: each scenario's)")
    parser.add_argument("--results", type=Path, default=None, help="default: bench/results/<mode>")
    parser.add_argument("--out", type=Path, default=None, help="default: <results>/gupta-ch6-steady.md")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    results = args.results or REPO / "bench" / "results" / args.mode
    out = args.out or results / "gupta-ch6-steady.md"
    out.parent.mkdir(parents=True, exist_ok=True)  # before the runs, not after them
    out.write_text(markdown(workload_rows(seeds, args.mode, results), args.mode))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
