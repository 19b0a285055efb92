"""Filter plugins: Kubernetes' rules for which nodes may take a pod (kube-scheduler's TaintToleration,
NodeAffinity, NodeUnschedulable), each answering with kube-scheduler's kind of reason. (Nodes our own rules
keep out of a round, those being probed or whose kubelet refused a pod, are not offered at all.)

They read a :class:`NodeView` (a node as the API shows it) and a job's :class:`PodConstraints`: the operator
makes both from the Node objects and the MapReduceJob, the simulator from its scenario (nodes without taints
or unschedulable flags, jobs without constraints: everything passes there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mrsched.core.kuberules import node_selector_matches, untolerated_taint


@dataclass(frozen=True)
class NodeView:
    """What the filters read of a node: its labels, its taints and whether it is cordoned."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True)
class PodConstraints:
    """What the filters read of a job's pods: their tolerations and their ``nodeSelector``."""

    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)

    def key(self) -> str:
        """Equal for pods the filters cannot tell apart (jobs of the same constraints share one pass)."""
        return repr((self.tolerations, sorted(self.node_selector.items())))


class FilterPlugin(Protocol):
    name: str

    def filter(self, pod: PodConstraints, node: NodeView) -> str | None:
        """None when the node may take the pod; else why not, in kube-scheduler's words."""


class TaintToleration:
    """Every NoSchedule and NoExecute taint of the node is tolerated (``Toleration.ToleratesTaint``)."""

    name = "TaintToleration"

    def filter(self, pod: PodConstraints, node: NodeView) -> str | None:
        taint = untolerated_taint(node.taints, pod.tolerations)
        if taint is None:
            return None
        value = f"={taint['value']}" if taint.get("value") else ""
        return f"node(s) had untolerated taint {{{taint.get('key')}{value}: {taint.get('effect')}}}"


class NodeAffinity:
    """The pod's ``nodeSelector`` matches the node's labels."""

    name = "NodeAffinity"

    def filter(self, pod: PodConstraints, node: NodeView) -> str | None:
        if node_selector_matches(pod.node_selector, node.labels):
            return None
        return "node(s) didn't match Pod's node affinity/selector"


class NodeUnschedulable:
    """A cordoned node (``spec.unschedulable``) takes no new pod."""

    name = "NodeUnschedulable"

    def filter(self, pod: PodConstraints, node: NodeView) -> str | None:
        return "node(s) were unschedulable" if node.unschedulable else None


DEFAULT_FILTERS: tuple[FilterPlugin, ...] = (NodeUnschedulable(), TaintToleration(), NodeAffinity())

#: Filters whose verdict reads only a pod's constraints and a node's taints, cordon and name: with none of
#: those set, they pass every node (Framework.feasible's fast path).
FIELD_FILTERS = (TaintToleration, NodeAffinity, NodeUnschedulable)
