"""Every policy's memory and CPU per round on a crowded cluster (issue 51): 60 jobs of six applications, each
job with its own pod requests, submitted at once to 30 nodes of four classes, in kubernetes mode (concurrency by
requests, cluster-wide rounds every second), each policy with its defaults (the operator's: one set of defaults).

    python bench/policy_stress.py [--until 120] [--policies fifo,dara,...] [--out bench/results/policy-stress.txt]

Each policy runs in a fresh process (``--one POLICY``), so that its peak resident set is its own: the process's
peak RSS after the jobs are built (``base``: Python, numpy, the simulator, the 60 jobs), the peak after the run,
and the growth between them, which is what the policy's rounds allocated and kept at their worst; with the CPU
seconds of the run (the simulator's and the policy's) per simulated second (a round a second, the heartbeat).
The chart gives the operator 512 MiB (charts/mrsched/values.yaml), and the operator itself held 354-368 MiB
with 10,000 task pods in its watch caches (bench/results/operator-scale.txt), so a policy's rounds have about
144 MiB of headroom there. tests/unit/simulator/test_policy_memory.py runs the same workload for a shorter
horizon and asserts both limits.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mrsched.core.catalog import expand_layout
from mrsched.policies import policy_names
from mrsched.simulator.run import build_simulation
from mrsched.simulator.scenario import Scenario
from mrsched.simulator.workload import build_jobs

#: The chart's operator memory limit (charts/mrsched/values.yaml resources.limits.memory).
CHART_LIMIT_MIB = 512.0
#: What the operator's own process held at 10,000 task pods (bench/results/operator-scale.txt, the highest of
#: its three policies' RSS), and so what the chart's limit leaves a policy's rounds.
OPERATOR_RSS_MIB = 368.0
ROUND_HEADROOM_MIB = CHART_LIMIT_MIB - OPERATOR_RSS_MIB
APPS = ("wordcount", "grep", "sort", "terasort", "pi", "aggwordcount")
JOBS = 60


def stress_scenario() -> Scenario:
    """60 jobs, ten of each of six applications, each with its own CPU (0.25-3.2 cores) and memory (512-2400 MB)
    request, all submitted at 0; 30 nodes of four classes (assumption: a crowded shared cluster, the worst case
    for policies whose per-round work grows with the jobs at once: DARA's Eq 4.16 mixes, LsPS's shares)."""
    jobs = []
    for i in range(JOBS):
        app = APPS[i % len(APPS)]
        jobs.append(
            {
                "id": f"j{i:02d}-{app}",
                "app": app,
                "submitS": 0,
                "maps": 24,
                "reduces": 2,
                "inputMBPerMap": 0 if app == "pi" else 128,
                "cpuRequest": round(0.25 + 0.05 * i, 2),
                "memoryRequestMB": 512 + 32 * i,
            }
        )
    return Scenario.model_validate(
        {
            "name": "policy-stress-60-jobs-30-nodes",
            "source": "assumption: a stress workload for memory and time per round (bench/policy_stress.py)",
            "headline": "none: no paper's result",
            "cluster": {
                "nodes": [
                    {"class": "small", "count": 10},
                    {"class": "medium", "count": 8},
                    {"class": "large", "count": 6},
                    {"class": "dara-8core", "count": 6},
                ],
                "heartbeatS": 1,
                "concurrency": "requests",
            },
            "workload": {"jobs": jobs},
            "policies": ["kube-default"],
            "seeds": [1],
        }
    )


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def run_one_policy(policy: str, until_s: float) -> dict[str, Any]:
    """In this process: the stress workload under ``policy`` until ``until_s`` simulated seconds."""
    scenario = stress_scenario()
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    jobs = build_jobs(scenario, nodes, 1)
    sim = build_simulation(scenario, policy, 1, jobs, mode="kubernetes")
    base = _peak_mib()
    started = time.process_time()
    result = sim.run(until_s=until_s)
    cpu = time.process_time() - started
    peak = _peak_mib()
    return {
        "policy": policy,
        "base_mib": round(base, 1),
        "peak_mib": round(peak, 1),
        "growth_mib": round(peak - base, 1),
        "cpu_s": round(cpu, 2),
        # Rounds come every heartbeat (1 s) while something can start: CPU per simulated second is per round.
        "cpu_ms_per_s": round(1000 * cpu / until_s, 1),
        "events": result.events,
        "until_s": until_s,
    }


def measure(policy: str, until_s: float) -> dict[str, Any]:
    """:func:`run_one_policy` in a fresh process (its own peak RSS), with a 4 GiB address-space cap so that a
    policy without a bound fails there rather than take the machine."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--one", policy, "--until", str(until_s)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        return {"policy": policy, "error": done.stderr.strip().splitlines()[-1:] or [f"rc {done.returncode}"]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=120.0, help="simulated seconds per policy")
    parser.add_argument("--policies", help="comma-separated (default: every registered policy)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.one:
        cap = 4 << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        print(json.dumps(run_one_policy(args.one, args.until)))
        return 0
    policies = args.policies.split(",") if args.policies else policy_names()
    lines = [
        f"# bench/policy_stress.py --until {args.until:g}: {JOBS} jobs of {len(APPS)} applications with distinct "
        "requests at once on 30 nodes of four classes, kubernetes mode, every policy with its defaults",
        f"# limits: the chart's {CHART_LIMIT_MIB:.0f} MiB for the process; {ROUND_HEADROOM_MIB:.0f} MiB for "
        f"the rounds' growth (the operator held {OPERATOR_RSS_MIB:.0f} MiB at 10,000 pods)",
        f"{'policy':<16} {'base MiB':>9} {'peak MiB':>9} {'growth':>7} {'cpu s':>7} {'ms/sim s':>9} {'events':>7}",
    ]
    print("\n".join(lines), flush=True)
    for policy in policies:
        row = measure(policy, args.until)
        if "error" in row:
            line = f"{policy:<16} FAILED: {row['error']}"
        else:
            line = (
                f"{policy:<16} {row['base_mib']:>9.0f} {row['peak_mib']:>9.0f} {row['growth_mib']:>7.0f} "
                f"{row['cpu_s']:>7.1f} {row['cpu_ms_per_s']:>9.0f} {row['events']:>7}"
            )
        lines.append(line)
        print(line, flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
