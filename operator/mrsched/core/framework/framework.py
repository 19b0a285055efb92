"""One scheduling round through the framework's phases (see the package docstring)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from mrsched.core.framework.filters import (
    DEFAULT_FILTERS,
    FIELD_FILTERS,
    FilterPlugin,
    NodeView,
    PodConstraints,
)
from mrsched.core.framework.permit import PermitPlugin
from mrsched.core.model import ClusterSnapshot, Placement
from mrsched.core.policy import Policy


class Framework:
    """The filter and permit plugins of one scheduler profile, run around a policy's own queue order and
    scores. One instance per round's node set (:meth:`for_nodes`) keeps each constraint's filter pass."""

    def __init__(
        self, filters: Sequence[FilterPlugin] = DEFAULT_FILTERS, permits: Sequence[PermitPlugin] = ()
    ) -> None:
        self.filters = tuple(filters)
        self.permits = tuple(permits)
        self._nodes: Mapping[str, NodeView] = {}
        self._feasible: dict[str, frozenset[str] | None] = {}
        self._any_constraint = False

    def for_nodes(self, nodes: Mapping[str, NodeView]) -> Framework:
        """This round's nodes (the cycle's node snapshot): filter results of an earlier round are dropped."""
        self._nodes = nodes
        self._feasible = {}
        self._any_constraint = any(n.taints or n.unschedulable for n in nodes.values()) or not all(
            isinstance(f, FIELD_FILTERS) for f in self.filters
        )
        return self

    def reasons(self, pod: PodConstraints, node: NodeView) -> list[str]:
        """Every filter's reason to refuse the node (empty: it passes), for explanations and Events."""
        return [why for plugin in self.filters if (why := plugin.filter(pod, node)) is not None]

    def feasible(self, pod: PodConstraints) -> frozenset[str] | None:
        """PreFilter + Filter: the nodes every filter passes for such pods, as :attr:`Job.nodes` takes it (None:
        all of them, nothing to enforce). Jobs of equal constraints share one pass over the nodes."""
        if not self._any_constraint and not pod.tolerations and not pod.node_selector:
            return None  # no taint, no cordon, no selector: every node passes every default filter
        key = pod.key()
        if key not in self._feasible:
            passed = frozenset(
                name
                for name, view in self._nodes.items()
                if all(f.filter(pod, view) is None for f in self.filters)
            )
            self._feasible[key] = None if len(passed) == len(self._nodes) else passed
        return self._feasible[key]

    def run_round(self, policy: Policy, snapshot: ClusterSnapshot, offered: list[str]) -> list[Placement]:
        """Queue sort, Score and Reserve are the policy's round over the ``offered`` nodes (each placement
        committed on the snapshot as it is made, within each job's feasible nodes); then Permit: a placement a
        permit plugin refuses is unreserved. Returns the placements to bind, in the policy's order."""
        placements = policy.schedule_round(snapshot, offered)  # as given: the simulator's heartbeat is hot
        if not self.permits:
            return placements
        permitted = []
        for placement in placements:
            if all(plugin.permit(placement) for plugin in self.permits):
                permitted.append(placement)
            else:
                unreserve(snapshot, placement)
        return permitted


def unreserve(snapshot: ClusterSnapshot, placement: Placement) -> None:
    """Give back what :meth:`ClusterSnapshot.commit` reserved for ``placement``: its attempt leaves the node,
    and its task is pending again unless another attempt of it runs (the job's counts follow)."""
    task = placement.task
    attempts = snapshot.running.get(placement.node, [])
    for i in range(len(attempts) - 1, -1, -1):
        if attempts[i].task is task:
            del attempts[i]
            break
    if task.running and not any(
        a.task is task for a in itertools.chain.from_iterable(snapshot.running.values())
    ):
        task.running = False
        job = snapshot.job(task.job_id)
        if task.kind == "map":
            job.running_maps -= 1
        else:
            job.running_reduces -= 1
    snapshot.touch()  # the counts and what is left of the node changed
