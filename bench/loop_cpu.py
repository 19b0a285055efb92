"""The scheduling loop's own CPU per pod placed, without an API server: the loop over an in-memory API.

    python bench/loop_cpu.py [--nodes 1000] [--jobs 200] [--maps-per-job 50] [--policies fifo,fair,diagnosis]

``make bench-scale`` measures the loop against a real apiserver, where the Kubernetes client's round trips and
the watches' decoding share the process. This one runs the same ``SchedulingLoop`` over
``tests/unit/test_loop_incremental.MemoryApi`` (dicts; every write bumps a resourceVersion as an apiserver
does), so what it measures is the loop's work alone: reading the jobs that changed, the policies, the pods'
manifests, the status it would write. Per policy, from one run: CPU per pod placed of the whole process and of
the loop's thread (``time.thread_time``; the pool threads do the in-memory writes), the placing rounds, and in
how many of 8 idle rounds, once every pod runs, the policy was asked. The in-memory API's own work (a pod's deep
copy on create, the grouping of every pod by job on each read, where the operator's watch caches keep groups) is
in the whole-process figure, and makes its rounds' wall time no measure of the operator's: bench-scale's is.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "unit"))

from test_loop_incremental import T0, MemoryApi, job, node  # noqa: E402

from mrsched.operator.kube.kubeapi import ClusterApi  # noqa: E402
from mrsched.operator.model.config import OperatorConfig  # noqa: E402
from mrsched.operator.model.gcsettings import tune_gc  # noqa: E402
from mrsched.operator.scheduling.loop import SchedulingLoop  # noqa: E402

IDLE_ROUNDS = 8


def run(policy: str, nodes: int, jobs: int, maps: int) -> dict[str, float | int | str]:
    api = MemoryApi()
    for i in range(nodes):
        body = node(f"s-{i:04d}")
        body["status"]["allocatable"] = {"cpu": "8", "memory": "16Gi"}
        api.nodes[body["metadata"]["name"]] = api.stamp(body)
    for i in range(jobs):
        body = job(f"wc-{i:03d}", maps)
        body["spec"]["policy"] = policy
        body["spec"]["reduceSlowStart"] = 1.0  # reduces wait for every map: the placing is the maps'
        body["spec"]["resources"] = {"map": {"cpu": "500m", "memory": "256Mi"}}
        body["spec"]["input"]["bytes"] = maps * 64 * 2**30
        api.jobs[body["metadata"]["name"]] = api.stamp(body)
    config = OperatorConfig(policy=policy, probe_nodes="never", namespaces=("ns",), health_monitor=False)
    clock = [T0 + 10]
    loop = SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: clock[0])
    process0, thread0 = time.process_time(), time.thread_time()
    created, rounds, stall = 0, 0, 0
    while stall < 3:
        stats = loop.round()
        clock[0] += 0.5
        rounds += 1
        created += stats.created
        stall = 0 if stats.created else stall + 1
    process, thread = time.process_time() - process0, time.thread_time() - thread0
    for pod in api.pods.values():
        api.run_pod(pod["metadata"]["name"], at=clock[0])
    for _ in range(3):  # the jobs record their running pods
        clock[0] += 1
        loop.round()
    asked = 0
    for _ in range(IDLE_ROUNDS):
        clock[0] += 1
        asked += not loop.round().skipped
    loop.close()
    return {
        "policy": policy,
        "pods": created,
        "rounds": rounds,
        "process_ms_per_pod": 1e3 * process / max(1, created),
        "loop_ms_per_pod": 1e3 * thread / max(1, created),
        "idle_asked": asked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--maps-per-job", type=int, default=50)
    parser.add_argument("--policies", default="fifo,fair,diagnosis")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tune_gc()  # as the operator's process does (mrsched.operator.model.gcsettings)
    lines = [
        "# The scheduling loop's own CPU per pod placed, over an in-memory API (no apiserver, no HTTP)",
        f"# command: .venv/bin/python bench/loop_cpu.py {' '.join(sys.argv[1:])}".rstrip(),
        f"# {args.nodes} nodes (8 cores, 16 GiB), {args.jobs} jobs x {args.maps_per_job} maps, map request "
        "500m/256Mi, no slot cap",
        f"{'policy':12} {'pods':>6} {'rounds':>6} {'process ms/pod':>14} {'loop ms/pod':>11} "
        f"{'asked in idle':>13}",
    ]
    for policy in args.policies.split(","):
        r = run(policy, args.nodes, args.jobs, args.maps_per_job)
        lines.append(
            f"{r['policy']:12} {r['pods']:6d} {r['rounds']:6d} {r['process_ms_per_pod']:14.2f} "
            f"{r['loop_ms_per_pod']:11.2f} {r['idle_asked']:>8d} of {IDLE_ROUNDS}"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    lines.append(
        "# process: every thread of this process (the loop, its write pool, the in-memory API's copies); "
        "loop: the thread running the rounds"
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
