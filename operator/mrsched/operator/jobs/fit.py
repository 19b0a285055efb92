"""Whether a job could ever run on the cluster's worker nodes, and if not, why.

A spec can pass validation and still never run: a node selector that matches no worker, tolerations that no
worker's taints allow, a task that requests more CPU or memory than any matching worker's allocatable. Such a
job would wait in Pending forever with nothing but a debug log to say why; instead it gets the condition
``Unplaceable`` and an Event, in the words kube-scheduler uses for a pod (``didn't match Pod's node
affinity/selector``, ``Insufficient cpu``). The job stays Pending, as a pod does, and runs once a node that
fits joins.

Taints a node carries for a while (NotReady, unreachable, cordoned, under pressure, judged degraded) do not
count: the node may take tasks again, so the job is not unplaceable because of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from mrsched.core.model import Resources
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.pods import REJECTIONS, PodAttempt
from mrsched.operator.model.snapshot import NodeInfo, admits

#: Taints of a passing condition, set and removed by the node lifecycle controller, kubectl cordon, or mrsched's
#: own health monitor.
TRANSIENT_TAINT_PREFIXES = ("node.kubernetes.io/", "mrsched.dev/degraded")


def _fits_allocatable(info: NodeInfo, request: Resources) -> bool:
    return request.cpu <= info.node.cores + 1e-9 and request.memory_mb <= info.node.memory_mb + 1e-9


def unplaceable(spec: JobSpec, workers: Mapping[str, NodeInfo]) -> tuple[str, str] | None:
    """(reason, message) when no worker node could ever run one of the job's tasks; None when some could."""
    needs = [("map", spec.map_resources)] + ([("reduce", spec.reduce_resources)] if spec.reduces else [])
    # The usual answer first, at the first node that could run every kind of task: a job read again is checked
    # each round, and with a thousand workers the whole pass below was most of its reconciliation.
    for info in workers.values():
        if all(_fits_allocatable(info, request) for _, request in needs) and _could_admit(info, spec):
            return None
    matching = [info for info in workers.values() if _could_admit(info, spec)]
    if not matching:
        selector = ", ".join(f"{k}={v}" for k, v in sorted(spec.node_selector.items())) or "none"
        return (
            "NoMatchingNode",
            f"0/{len(workers)} worker nodes are available: none matches the job's nodeSelector ({selector}) "
            "and tolerates its taints",
        )
    for kind, request in needs:
        if any(_fits_allocatable(n, request) for n in matching):
            continue
        largest = max(matching, key=lambda n: (n.node.cores, n.node.memory_mb)).node
        short = [
            name
            for name, wanted, have in (
                ("cpu", request.cpu, max(n.node.cores for n in matching)),
                ("memory", request.memory_mb, max(n.node.memory_mb for n in matching)),
            )
            if wanted > have + 1e-9
        ]
        lacking = " and ".join(short) or "cpu and memory on one node"
        return (
            "RequestsExceedAllocatable",
            f"0/{len(matching)} matching worker nodes can run a {kind}: Insufficient {lacking} "
            f"(a {kind} requests {request.cpu:g} CPU and {request.memory_mb:g} MiB; the largest node, "
            f"{largest.name}, has {largest.cores} CPU and {largest.memory_mb:g} MiB allocatable)",
        )
    return None


def _could_admit(info: NodeInfo, spec: JobSpec) -> bool:
    lasting = tuple(t for t in info.taints if not str(t.get("key", "")).startswith(TRANSIENT_TAINT_PREFIXES))
    if len(lasting) != len(info.taints):  # a copy only for a node with a passing taint (checked every round)
        info = dataclasses.replace(info, taints=lasting)
    return admits(info, spec.tolerations, spec.node_selector)


#: Rejections that are the kubelet's own verdict on one of our pods; ``Evicted``, ``NodeLost`` and
#: ``Preempting`` are about pods already running there, not about taking more.
_REFUSALS = tuple(r for r in REJECTIONS if r not in ("Evicted", "NodeLost", "Preempting"))


def is_refusal(attempt: PodAttempt) -> bool:
    """The attempt's pod was refused by its node's kubelet (``refusing_nodes``)."""
    return attempt.reason in _REFUSALS


def refusing_nodes(attempts: Iterable[PodAttempt], now: float, cooldown_s: float) -> set[str]:
    """Nodes whose kubelet refused one of our task pods (``NodeShutdown``, ``OutOfcpu``, ...) less than
    ``cooldown_s`` ago: the scheduler's view said the pod fits, the node says it does not take it, and it will
    likely say so again at the next heartbeat."""
    return {
        a.node
        for a in attempts
        if a.node is not None
        and a.phase == "Failed"
        and a.reason in _REFUSALS
        and now - (a.finished or a.created) < cooldown_s
    }
