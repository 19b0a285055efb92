"""The emulated nodes: their identity, labels and capacity, and the Node and Lease objects a kubelet keeps.

Labels say what a scheduler may know (class, zone, rack, cores, memory); the hidden physics of the class
stays inside the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mrsched.core.catalog import ClusterLayout, NodeClass, expand_layout
from mrsched.emulator.podstatus import now_rfc3339

#: Labels the emulator puts on its nodes. The operator selects workers by WORKER_LABEL.
CLASS_LABEL = "mrsched.dev/node-class"
WORKER_LABEL = "mrsched.dev/worker"
EMULATOR_LABEL = "mrsched.dev/emulator"
ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.mrsched.dev/rack"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LEASE_NAMESPACE = "kube-node-lease"
#: Every emulated node's address is loopback, so anything that dials a "kubelet" (kubectl logs, exec) gets
#: connection refused here instead of reaching out to a made-up address.
NODE_ADDRESS = "127.0.0.1"
KUBELET_VERSION = "v1.35.4-mrsched-emulator"


@dataclass(frozen=True)
class EmulatedNode:
    name: str
    node_class: NodeClass
    zone: str
    rack: str
    emulator_id: str
    extra_labels: dict[str, str] = field(default_factory=dict)

    @property
    def labels(self) -> dict[str, str]:
        return {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            HOSTNAME_LABEL: self.name,
            "node.kubernetes.io/instance-type": self.node_class.name,
            CLASS_LABEL: self.node_class.name,
            WORKER_LABEL: "true",
            EMULATOR_LABEL: self.emulator_id,
            ZONE_LABEL: self.zone,
            RACK_LABEL: self.rack,
            **self.extra_labels,
        }

    @property
    def capacity(self) -> dict[str, str]:
        return {
            "cpu": str(self.node_class.cores),
            "memory": f"{self.node_class.memory_mib}Mi",
            "pods": str(self.node_class.pods),
            "ephemeral-storage": "100Gi",
        }

    def node_object(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": self.labels,
                "annotations": {"mrsched.dev/emulated": "true"},
            },
            "spec": {},
        }

    def status(self, ready: bool = True, why_not: str = "emulated kubelet stopped") -> dict[str, Any]:
        at = now_rfc3339()

        def cond(kind: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
            return {
                "type": kind,
                "status": "True" if ok else "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": at,
                "lastTransitionTime": at,
            }

        return {
            "capacity": self.capacity,
            "allocatable": self.capacity,
            "addresses": [
                {"type": "InternalIP", "address": NODE_ADDRESS},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "osImage": "mrsched emulated node",
                "kernelVersion": "emulated",
                "containerRuntimeVersion": "mrsched-emulator://1",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "machineID": self.name,
                "systemUUID": self.name,
                "bootID": self.emulator_id,
            },
            "conditions": [
                cond(
                    "Ready",
                    ready,
                    "KubeletReady" if ready else "KubeletNotReady",
                    "emulated kubelet is posting ready status" if ready else why_not,
                ),
                cond("MemoryPressure", False, "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                cond("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", False, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ],
        }


@dataclass
class NodeState:
    """What the emulator keeps about one of its nodes while it runs: its Node's uid, whether it heartbeats or was
    removed (chaos), when its status was last posted, and the pods admitted on it."""

    node: EmulatedNode
    uid: str = ""
    heartbeats: bool = True
    removed: bool = False
    shutting_down: bool = False  # a graceful shutdown began: no pod is admitted
    last_status: float = 0.0
    pods: set[str] = field(default_factory=set)
    last_renewed: float = 0.0  # monotonic time of the last Lease renewal (0: none since heartbeats began)
    max_renew_gap_s: float = 0.0  # the longest time between two renewals: how late this kubelet ran

    def renewed(self, now: float) -> None:
        if self.last_renewed:
            self.max_renew_gap_s = max(self.max_renew_gap_s, now - self.last_renewed)
        self.last_renewed = now


def lease_object(node_name: str, node_uid: str, duration_s: int) -> dict[str, Any]:
    """The node's heartbeat Lease, owned by its Node as the kubelet makes it (so GC removes it with the Node)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node_name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}],
        },
        "spec": {"holderIdentity": node_name, "leaseDurationSeconds": duration_s, "renewTime": now_micro()},
    }


def now_micro() -> str:
    """MicroTime as Lease.spec.renewTime wants it."""
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def nodes_from_layout(layout: ClusterLayout, emulator_id: str, prefix: str = "") -> list[EmulatedNode]:
    """One EmulatedNode per node of the layout, named as :func:`mrsched.core.catalog.expand_layout` names them."""
    return [
        EmulatedNode(n.name, n.node_class, n.zone, n.rack, emulator_id)
        for n in expand_layout(layout.nodes, prefix)
    ]
