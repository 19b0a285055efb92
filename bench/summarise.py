"""Print a Markdown index of every scenario's results, one table per placement mode
(bench/results/<mode>/<scenario>/results.json).

python bench/summarise.py bench/results > bench/results/README.md

Each row names the target-fitted constants its results rest on (results.json's ``targetFitted``, else its
scenario file's: mrsched.simulator.fitted), and a section lists each with its source.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from mrsched.simulator import fitted

#: Where a results.json without ``targetFitted`` finds its flags (its scenario file).
SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
MODES = {
    "hadoop": "each node's heartbeat offers that node only, to every policy (Hadoop 1's assignTasks)",
    "kubernetes": "cluster-wide rounds every heartbeat and whenever a task ends or a job arrives (the operator's loop),"
    " with the scenarios' fixed slots",
}
POLICIES = (
    "fifo",
    "fair",
    "capacity",
    "kube-default",
    "throughput",
    "dara",
    "diagnosis",
    "learning",
    "adaptive-slots",
    "coupling",
    "lsps",
    "greedy-informed",
)


def _scenarios(root: Path) -> list[dict[str, object]]:
    """Every scenario report under ``root`` in natural order (dara-wl2 before dara-wl10)."""

    def key(path: Path) -> list[object]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.parent.name)]

    found = []
    for results in sorted(root.glob("*/results.json"), key=key):
        data = json.loads(results.read_text())
        if "policies" in data and "lower_bound" in data:
            flags = fitted.recorded(data, SCENARIO_DIR)
            found.append({**data, "_dir": f"{root.name}/{results.parent.name}", "_flags": flags})
    return found


def _table(scenarios: list[dict[str, object]]) -> None:
    names = [p for p in POLICIES if any(p in s["policies"] for s in scenarios)]  # type: ignore[operator]
    header = " | ".join(f"{p} makespan / mean job" for p in names)
    print(f"| scenario | rests on target-fitted | lower bound | slot bound | {header} |")
    print("|---|---|---:|---:|" + "---:|" * len(names))
    for data in scenarios:
        cells = []
        for name in names:
            p = data["policies"].get(name)  # type: ignore[attr-defined]
            cells.append(f"{p['makespan_s']:.0f} / {p['mean_job_time_s']:.0f}" if p else "-")
        bounds = data["lower_bound"]
        # The slot bound covers the map phase only: for the policies that keep to the slots both bounds hold.
        slot = bounds.get("slot_bound_s")  # type: ignore[attr-defined]
        slot = max(slot, bounds["makespan_s"]) if slot else None  # type: ignore[index]
        link = f"[{data['scenario']}]({data['_dir']}/report.md)"
        flags = fitted.names(data["_flags"]) or "-"  # type: ignore[arg-type]
        print(
            f"| {link} | {flags} | {bounds['makespan_s']:.0f} | {f'{slot:.0f}' if slot else '-'} | "  # type: ignore[index]
            + " | ".join(cells)
            + " |"
        )
    print()


def main(root: Path) -> None:
    print("# Benchmark results\n")
    print(
        "**Against kube-scheduler on Kubernetes' own terms** (concurrency by requests, no slots, every policy; "
        "`make bench-kubernetes`): [kubernetes-mode.md](kubernetes-mode.md); its experiment, a job rule chosen on "
        "it, checked on 18 scenarios it was not chosen on (`make bench-kubernetes-heldout`): "
        "[kubernetes-heldout.md](kubernetes-heldout.md). The tables below run the papers' "
        "fixed slots (`cluster.concurrency: slots`), as the papers did.\n"
    )
    print(
        "Made by `make bench` (one `mrsched simulate` per scenario under `bench/scenarios/` and placement mode)."
        " A table compares policies within one mode only: every policy of a row had the same nodes, the same"
        " slots per node class and the same decision opportunities. Each row: makespan and mean job time in"
        " seconds, means over the scenario's seeds; the lower bound on makespan (it holds for every policy,"
        " seed by seed: `tests/unit/project/test_bench_results.py`); the slot bound (for fifo, fair and capacity, which"
        " keep to the slots); each scenario's own `report.md` has every metric and ratio, variants such as"
        " `throughput:known`, and the plots. A `-`: the scenario does not run that policy (Capacity is left out"
        " where there is one queue: it is FIFO there). A row that rests on target-fitted constants (set from the"
        " result they should reproduce; listed below with their sources) names them: no summary reports it as"
        " met.\n"
    )
    found = False
    for mode, what in MODES.items():
        scenarios = _scenarios(root / mode)
        if not scenarios:
            continue
        found = True
        print(f"## {mode} mode\n\n{what}.\n")
        _table(scenarios)
        summaries = sorted(
            p.name for p in (root / mode).glob("*.md")
        )  # per-paper summaries, ch.6 steady state
        if summaries:
            print("Per-paper summaries: " + ", ".join(f"[{s}]({mode}/{s})" for s in summaries) + ".\n")
    if not found:
        print("No results yet: run `make bench`.\n")
    print(
        "Speed: `speed.txt` (bench/simulator_speed.py); local cluster start-up: `local-cluster-startup.txt`;"
        " learning curves: [learning-throughput](learning-throughput/report.md); every policy's memory and CPU"
        " per round with 60 jobs at once: `policy-stress.txt` (bench/policy_stress.py).\n"
    )
    seen = set()
    flags: list[dict[str, str]] = []
    for mode in MODES:
        for data in _scenarios(root / mode):
            if data["scenario"] not in seen:
                seen.add(data["scenario"])
                flags.append(data["_flags"])  # type: ignore[arg-type]
                print(f"- **{data['scenario']}** ({data['source']}): {data['headline']}")
    merged = fitted.merge(*flags)
    if merged:
        print("\n## Target-fitted constants\n")
        print("\n".join(fitted.describe(merged)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
