"""How long `mrsched cluster up` takes from a warm binary cache, and teardown, measured end to end.

    python bench/local_cluster_startup.py [--runs 3]

Each run starts a cluster exactly as `mrsched cluster up` does (control plane, Prometheus, the default
6-node emulated cluster) and records when the API answered /readyz with the default ServiceAccount in place,
when Prometheus answered, when every emulated node was Ready, and when Prometheus returned node_load1 for every
node; then tears it down and checks that nothing is left. Target (control-plane issue): ready API and
Prometheus answering in under 15 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.controlplane import get_json
from mrsched.localcluster.ports import is_listening
from mrsched.localcluster.processes import alive
from mrsched.localcluster.toolchain import Toolchain


def _prometheus_series(url: str, query: str) -> int:
    with urllib.request.urlopen(
        f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": query}), timeout=2
    ) as r:
        return len(json.loads(r.read())["data"]["result"])


def one_run(tool: Toolchain, state_dir: Path, name: str) -> dict[str, float]:
    t0 = time.monotonic()
    cluster = LocalCluster.up(name, state_dir=state_dir, tool=tool)  # returns once /readyz and the SA answer
    api_ready = time.monotonic() - t0  # Prometheus is ready too: up() waits for its /-/ready
    try:
        emulator = cluster.emulate(None, emulator_id=f"{name}-nodes")
        registered = time.monotonic() - t0
        nodes = get_json(cluster.plane, "/api/v1/nodes")["items"]
        ready = [
            n
            for n in nodes
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
        ]
        assert len(ready) == len(emulator.nodes), "every emulated node is Ready once emulate() returns"
        while _prometheus_series(cluster.prometheus.url, "node_load1") < len(emulator.nodes):
            time.sleep(0.05)
        scraped = time.monotonic() - t0
        pids = [*cluster.plane.pids(), cluster.prometheus.pid, emulator.pid]
        ports = [*cluster.plane.ports.values()]
    finally:
        t1 = time.monotonic()
        cluster.down(tool)
        down = time.monotonic() - t1
    assert not [p for p in pids if alive(p)] and not [p for p in ports if is_listening(p)]
    return {
        "api_and_prometheus_ready_s": api_ready,
        "nodes_registered_s": registered,
        "node_metrics_in_prometheus_s": scraped,
        "teardown_s": down,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    tool = Toolchain.locate()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            results.append(one_run(tool, Path(tmp), f"bench{i}"))
            print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in results[-1].items()), flush=True)
    print("\nmedian over", args.runs, "runs:")
    for key in results[0]:
        print(f"  {key:32s} {statistics.median(r[key] for r in results):6.2f} s")
    worst = max(r["api_and_prometheus_ready_s"] for r in results)
    print(
        f"target: API and Prometheus ready in < 15 s: {'met' if worst < 15 else 'MISSED'} (worst {worst:.2f} s)"
    )
    sys.exit(0 if worst < 15 else 1)


if __name__ == "__main__":
    main()
