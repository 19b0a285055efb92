"""What the live operator benchmarks share (operator_placement.py, operator_scale.py): the API clients and
kubectl over one local control plane, the CRDs installed, a node pool of emulated nodes, a throw-away
namespace deleted with its pods, the wordcount jobs they submit, and the machine line and percentiles of their
reports."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.localcluster.cluster import EmulatorHandle, LocalCluster
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.kube.kubeclient import api_client
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION

REPO = Path(__file__).resolve().parents[1]
GIB = 1 << 30


class LiveBench:
    """A benchmark over ``cluster``: ``core`` and ``custom`` API clients, :meth:`kubectl`, :meth:`install_crds`,
    :meth:`emulate_pool`, :meth:`delete_namespace`."""

    def __init__(self, cluster: LocalCluster, tool: Toolchain, args: argparse.Namespace) -> None:
        self.cluster = cluster
        self.tool = tool
        self.args = args
        self.kube = api_client(cluster.kubeconfig)
        self.core: Any = client.CoreV1Api(self.kube)
        self.custom: Any = client.CustomObjectsApi(self.kube)

    def kubectl(self, *argv: str, stdin: str | None = None) -> str:
        """kubectl's output; its error output in the exception when it fails."""
        proc = subprocess.run(
            [str(self.tool.kubectl), "--kubeconfig", str(self.cluster.kubeconfig), *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(argv)}: {proc.stderr}")
        return proc.stdout

    def install_crds(self) -> None:
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "crds"))
        self.kubectl("wait", "--for=condition=Established", "crd/mapreducejobs.mrsched.dev", "--timeout=60s")

    def emulate_pool(
        self, name: str, node_class: str, count: int, heartbeat_s: float, timeout_s: float
    ) -> EmulatorHandle:
        """``count`` emulated nodes of ``node_class`` in model mode, named ``<name initial>-<i>``."""
        layout = ClusterLayout(
            name=name,
            nodes=[
                NodeGroup.model_validate({"class": node_class, "count": count, "namePrefix": f"{name[0]}-"})
            ],
        )
        return self.cluster.emulate(
            layout,
            mode="model",
            emulator_id=f"{name}-nodes",
            heartbeat_interval_s=heartbeat_s,
            timeout_s=timeout_s,
        )

    def ready_nodes(self) -> int:
        nodes = json.loads(self.core.list_node(_preload_content=False).data)["items"]
        return sum(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (n.get("status") or {}).get("conditions", [])
            )
            for n in nodes
        )

    def delete_namespace(
        self, name: str, timeout_s: float, poll_s: float, before: Callable[[str], None] | None = None
    ) -> bool:
        """Delete the namespace's pods at once (grace 0: the emulator forgets them on the DELETED event) and the
        namespace, after ``before(name)`` (releasing finalizers); True once it is gone within ``timeout_s``."""
        if before is not None:
            before(name)
        _ = self.core.delete_collection_namespaced_pod(
            name, grace_period_seconds=0, _preload_content=False
        ).data
        _ = self.core.delete_namespace(name, _preload_content=False).data
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self.core.read_namespace(name, _preload_content=False).data  # noqa: B018
            except ApiException as err:
                if err.status == 404:
                    return True
                raise
            time.sleep(poll_s)
        return False


def wordcount_job(
    name: str, policy: str, maps: int, map_request: dict[str, str], **spec: Any
) -> dict[str, Any]:
    """A wordcount MapReduceJob of ``maps`` maps over 64 GiB each (model mode: only the sizes are read) and one
    reduce, under ``policy``; ``spec`` adds fields."""
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "MapReduceJob",
        "metadata": {"name": name},
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"paths": ["text"], "bytes": maps * 64 * GIB},
            "output": {"path": f"out/{name}"},
            "maps": maps,
            "reduces": 1,
            "policy": policy,
            "resources": {"map": dict(map_request)},
            **spec,
        },
    }


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    return f"{platform.node()}: {os.cpu_count()} cores ({model}), {mem:.0f} GiB RAM, Python {platform.python_version()}"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def common_arguments(parser: argparse.ArgumentParser, *, nodes: int, jobs: int, maps_per_job: int) -> None:
    """The cluster and workload flags both benchmarks take, with each one's defaults."""
    parser.add_argument("--nodes", type=int, default=nodes)
    parser.add_argument("--jobs", type=int, default=jobs)
    parser.add_argument("--maps-per-job", type=int, default=maps_per_job)
