"""What each measured-physics switch of issue 19 (``cluster.physics``) does to the policies' results:

    python bench/physics_switches.py [--seeds 1,2,3] [--out bench/results/physics-switches.md]

Each scenario below runs with every switch off (``PhysicsOptions.off()``, the physics before issue 49), with each
switch alone, and with all of them on (``PhysicsOptions.measured()``, the default), and with all on plus Hadoop
0.20's speculative
execution for FIFO, Fair and Capacity (``cluster.speculation``: on by default in Hadoop 1; no stragglers are
added, so it acts on what the nodes' heterogeneity and contention make slow), in both placement modes, on the
same seeds and the same workload per seed. Per policy it prints the mean makespan over the seeds and its
change against every switch off, and which policy wins under each physics: a ranking that moves with a switch
is a result that depended on the old physics (the JSON beside it also keeps the mean job times).

``replayMeasuredTime`` changes only trace jobs with measured container times (SLS, Rumen); none of the
scenarios here replays one (the SWIM days give bytes), so it is not listed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import MODES, PhysicsOptions, Scenario, load_scenario

ROOT = Path(__file__).resolve().parent
#: Scenarios where a switch has something to act on: heterogeneous slots and DARA's containers (start-up on the
#: CPU), J_IO's replicated writes, reduces launched early and remote reads (the seed 003 coupling mix, seed 000's
#: mix with its shuffle-heavy jobs).
SCENARIOS = ("gupta-ch3-comb1", "gupta-ch3-pi-jio", "tan-22-jobs", "dhok-job-mix")
SWITCHES = ("overheadUsesCpu", "shuffleWhileMapsRun", "remoteReadsLoadReplica", "replicaWritesRemote")


def with_physics(scenario: Scenario, physics: PhysicsOptions, speculation: bool) -> Scenario:
    cluster = scenario.cluster
    reason = (
        None
        if speculation
        else "make bench-physics: each switch measured without it; all+speculation adds it"
    )
    spec = cluster.speculation.model_copy(update={"enabled": speculation, "reason": reason})
    return scenario.model_copy(
        update={"cluster": cluster.model_copy(update={"physics": physics, "speculation": spec})}
    )


def configs() -> dict[str, tuple[PhysicsOptions, bool]]:
    """label -> (physics switches, speculative execution for the Hadoop baselines)."""
    off = PhysicsOptions.off()
    field = {info.alias: name for name, info in PhysicsOptions.model_fields.items()}
    out = {"off": (off, False)}
    for switch in SWITCHES:
        out[switch] = (off.model_copy(update={field[switch]: True}), False)
    out["all"] = (PhysicsOptions.measured(), False)
    out["all+speculation"] = (PhysicsOptions.measured(), True)
    return out


def measure(seeds: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in SCENARIOS:
        scenario = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
        for mode in MODES:
            for label, (physics, speculation) in configs().items():
                started = time.monotonic()
                summary, _ = run_scenario(
                    with_physics(scenario, physics, speculation), seeds=seeds, mode=mode
                )
                results.setdefault(name, {}).setdefault(mode, {})[label] = {
                    policy: {
                        "makespan_s": row["makespan_s"],
                        "mean_job_time_s": row["mean_job_time_s"],
                        "failed_jobs": row.get("failed_jobs", 0),
                    }
                    for policy, row in summary["policies"].items()
                } | {"_lower_bound_s": summary["lower_bound"]["makespan_s"]}
                print(f"{name} {mode} {label}: {time.monotonic() - started:.0f} s", flush=True)
    return results


def _pct(value: float, base: float) -> str:
    return f"{100 * (value / base - 1):+.0f}%" if base else "n/a"


def report(results: dict[str, Any], seeds: list[int], elapsed_s: float) -> str:
    lines = [
        "# Physics switches: what each one changes (issue 19)",
        "",
        f"Produced by `make bench-physics` (`python bench/physics_switches.py`) on "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"{elapsed_s / 60:.0f} min; seeds {', '.join(map(str, seeds))}, both placement modes.",
        "",
        "Each cell: mean makespan over the seeds (s), and its change against every switch off (`off`, the "
        "physics before issue 49). `all` is every switch on; `all+speculation`, the default since issue 49, adds "
        "Hadoop 1's speculative execution to FIFO, Fair and Capacity (the other policies run as in `all`). "
        "Under each table: the policy with the lowest mean makespan under each physics, and the lower bound "
        "(each switch's own terms keep it a bound). "
        "`replayMeasuredTime` is left out: no scenario here replays measured container times.",
        "",
    ]
    for name, by_mode in results.items():
        for mode, by_config in by_mode.items():
            labels = list(by_config)
            policies = [p for p in by_config["off"] if not p.startswith("_")]
            lines += [f"## {name}, {mode} mode", "", "| policy | " + " | ".join(labels) + " |"]
            lines.append("|---|" + "---:|" * len(labels))
            for policy in policies:
                base = by_config["off"][policy]["makespan_s"]
                cells = []
                for label in labels:
                    row = by_config[label][policy]
                    cell = f"{row['makespan_s']:.0f}"
                    if label != "off":
                        cell += f" ({_pct(row['makespan_s'], base)})"
                    if row["failed_jobs"]:
                        cell += f", {row['failed_jobs']} failed"
                    cells.append(cell)
                lines.append(f"| {policy} | " + " | ".join(cells) + " |")
            best = []
            for label in labels:
                rows = {p: by_config[label][p]["makespan_s"] for p in policies}
                best.append(min(rows, key=lambda p: rows[p]))
            lines.append("| *best* | " + " | ".join(best) + " |")
            lines.append(
                "| *lower bound* | "
                + " | ".join(f"{by_config[lab]['_lower_bound_s']:.0f}" for lab in labels)
                + " |"
            )
            lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "physics-switches.md")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    started = time.monotonic()
    results = measure(seeds)
    args.out.write_text(report(results, seeds, time.monotonic() - started) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
