"""Print a Markdown index of every scenario's results (bench/results/<scenario>/results.json).

python bench/summarise.py bench/results > bench/results/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

POLICIES = ("fifo", "fair", "capacity", "kube-default", "oracle")


def main(root: Path) -> None:
    print("# Benchmark results\n")
    print(
        "Made by `make bench` (one `mrsched simulate` per scenario under `bench/scenarios/`). Each row: makespan"
        " and mean job time in seconds, means over the scenario's seeds; the lower bound on makespan; each"
        " scenario's own `report.md` has every metric and ratio, and the plots.\n"
    )
    header = " | ".join(f"{p} makespan / mean job" for p in POLICIES)
    print(f"| scenario | lower bound | {header} |")
    print("|---|---:|" + "---:|" * len(POLICIES))
    for results in sorted(root.glob("*/results.json")):
        data = json.loads(results.read_text())
        cells = []
        for name in POLICIES:
            p = data["policies"].get(name)
            cells.append(f"{p['makespan_s']:.0f} / {p['mean_job_time_s']:.0f}" if p else "-")
        link = f"[{data['scenario']}]({results.parent.name}/report.md)"
        print(f"| {link} | {data['lower_bound']['makespan_s']:.0f} | " + " | ".join(cells) + " |")
    print()
    print(
        "Speed: `speed.txt` (bench/simulator_speed.py); local cluster start-up: `local-cluster-startup.txt`.\n"
    )
    for results in sorted(root.glob("*/results.json")):
        data = json.loads(results.read_text())
        print(f"- **{data['scenario']}** ({data['source']}): {data['headline']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
