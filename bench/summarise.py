"""Print a Markdown index of every scenario's results (bench/results/<scenario>/results.json).

python bench/summarise.py bench/results > bench/results/README.md
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

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
    "oracle",
)


def _scenarios(root: Path) -> list[dict[str, object]]:
    """Every scenario report under ``root`` in natural order (dara-wl2 before dara-wl10); other reports (the
    learning curves) are linked separately."""

    def key(path: Path) -> list[object]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.parent.name)]

    found = []
    for results in sorted(root.glob("*/results.json"), key=key):
        data = json.loads(results.read_text())
        if "policies" in data and "lower_bound" in data:
            found.append({**data, "_dir": results.parent.name})
    return found


def main(root: Path) -> None:
    print("# Benchmark results\n")
    print(
        "Made by `make bench` (one `mrsched simulate` per scenario under `bench/scenarios/`). Each row: makespan"
        " and mean job time in seconds, means over the scenario's seeds; the lower bound on makespan; each"
        " scenario's own `report.md` has every metric and ratio, and the plots.\n"
    )
    header = " | ".join(f"{p} makespan / mean job" for p in POLICIES)
    print(f"| scenario | lower bound | slot bound | {header} |")
    print("|---|---:|---:|" + "---:|" * len(POLICIES))
    scenarios = _scenarios(root)
    for data in scenarios:
        cells = []
        for name in POLICIES:
            p = data["policies"].get(name)  # type: ignore[attr-defined]
            cells.append(f"{p['makespan_s']:.0f} / {p['mean_job_time_s']:.0f}" if p else "-")
        bounds = data["lower_bound"]
        # The slot bound covers the map phase only: for slot-based policies both bounds hold.
        slot = bounds.get("slot_bound_s")  # type: ignore[attr-defined]
        slot = max(slot, bounds["makespan_s"]) if slot else None  # type: ignore[index]
        link = f"[{data['scenario']}]({data['_dir']}/report.md)"
        print(
            f"| {link} | {bounds['makespan_s']:.0f} | {f'{slot:.0f}' if slot else '-'} | "  # type: ignore[index]
            + " | ".join(cells)
            + " |"
        )
    print()
    print(
        "The lower bound ignores slots (the oracle too: it packs nodes up to their throughput knee); the slot"
        " bound is the best a slot-based policy (fifo, fair, capacity, throughput) could do, heartbeat-rounded."
        " Variants such as `throughput:known` are in each scenario's report. Learning curves:"
        " [learning-throughput](learning-throughput/report.md); DARA's Fig 4.7 summary:"
        " [dara-summary.md](dara-summary.md); seed 001's Tables V and VI: [elkholy-summary.md](elkholy-summary.md);"
        " seed 000's Fig 8 and Fig 11: [dhok-summary.md](dhok-summary.md); seeds 003 and 004:"
        " [tan-summary.md](tan-summary.md), [yao-summary.md](yao-summary.md); seed 002 ch.6 in steady state:"
        " [gupta-ch6-steady.md](gupta-ch6-steady.md) (`bench/gupta_ch6_steady.py`).\n"
    )
    print(
        "Speed: `speed.txt` (bench/simulator_speed.py); local cluster start-up: `local-cluster-startup.txt`.\n"
    )
    for data in scenarios:
        print(f"- **{data['scenario']}** ({data['source']}): {data['headline']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
