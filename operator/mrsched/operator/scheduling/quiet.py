"""Rounds a policy may skip, and the nodes the policies see, kept across rounds.

At 1,000 nodes a round asked of a policy costs a snapshot of every running attempt, the other pods' reservations
on every node and one ``assign`` per node, even when no job has a task to start: the usual round of a busy
cluster whose tasks all run (bench/results/operator-scale.txt measured diagnosis's idle round at 174 ms p50, most
of it this). :class:`QuietRounds` skips that round for a policy that says it may
(:attr:`~mrsched.core.policy.Policy.skips_quiet_rounds`) when nothing it could read changed since its last round
but the clock. :class:`PolicyNodes` keeps each node's core ``Node`` (the node as read, with its probed capability
and health slowdown) the same object while none of the three changed, which is what lets "the nodes did not
change" be an identity test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from mrsched.core.model import Job, Node, pending_of
from mrsched.core.policy import Policy
from mrsched.core.probes import Capability
from mrsched.operator.model.snapshot import NodeInfo


class PolicyNodes:
    """The usable nodes as the policies see them: ``info.node`` with the probe's capability and the health
    monitor's slowdown, made again only for a node whose reading (by value: a kubelet rewrites its Node's
    status every few minutes with only new heartbeat times, 3 nodes a second at 1,000 nodes), capability or
    slowdown changed."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[NodeInfo, Capability | None, tuple[float, float] | None, Node]] = {}

    def of(
        self,
        usable: Mapping[str, NodeInfo],
        capability: Callable[[str], Capability | None],
        slowdown: Callable[[str], tuple[float, float] | None],
    ) -> dict[str, Node]:
        """A new dict each call (the caller may replace entries: canaries), of nodes kept across calls."""
        made, out = self._made, {}
        for name, info in usable.items():
            probe, slow = capability(name), slowdown(name)
            held = made.get(name)
            same = held is not None and held[1] == probe and held[2] == slow
            if held is None or not same or (held[0] is not info and held[0] != info):
                held = (info, probe, slow, replace(info.node, probe=probe, slowdown=slow))
            elif held[0] is not info:  # a new reading equal by value (a kubelet's heartbeat): the same Node
                held = (info, probe, slow, held[3])
            made[name] = held
            out[name] = held[3]
        if len(made) > len(out):
            for name in [n for n in made if n not in out]:
                del made[name]
        return out


class QuietRounds:
    """Per policy, what its last round was asked on; :meth:`skip` says whether this round may be skipped."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[frozenset[str], dict[str, Node]]] = {}

    def skip(
        self,
        name: str,
        policy: Policy,
        jobs: list[tuple[Any, Job]],
        nodes: dict[str, Node],
        jobs_read: AbstractSet[str],
        canaries: AbstractSet[str],
    ) -> bool:
        """True when ``policy`` may skip this round: it says so, no canary is due, its jobs are the same jobs as
        at its last round and none of them was read again (no outcome, status or pod of theirs changed: the
        learning hooks heard nothing), the nodes are the same objects (:class:`PolicyNodes`), and no job has a
        task to start (so no round could place anything). Every round, skipped or not, is remembered."""
        uids = frozenset(state.spec.uid for state, _ in jobs)
        last = self._last.get(name)
        self._last[name] = (uids, nodes)
        if not policy.skips_quiet_rounds or canaries or last is None:
            return False
        last_uids, last_nodes = last
        return (
            uids == last_uids
            and uids.isdisjoint(jobs_read)
            and len(nodes) == len(last_nodes)
            and all(last_nodes.get(n) is node for n, node in nodes.items())
            and not any(pending_of(job, "map") or pending_of(job, "reduce") for _, job in jobs)
        )
