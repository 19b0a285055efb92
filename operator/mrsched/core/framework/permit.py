"""Permit plugins: whether a node runs a placement the policy reserved, now. A refused one is given back
(:meth:`~mrsched.core.model.ClusterSnapshot.uncommit`) and its task is pending again next round."""

from __future__ import annotations

from typing import Protocol

from mrsched.core.model import Placement


class PermitPlugin(Protocol):
    name: str

    def permit(self, placement: Placement) -> bool:
        """True: bind it now; False: give it back."""


class OneMapPerRound:
    """``nodes`` run one map each per round and no reduce (the operator's canary maps on degraded nodes, whose
    only purpose is to measure the node: operator/scheduling/canary.py). One instance per round, for every policy of
    it."""

    name = "OneMapPerRound"

    def __init__(self, nodes: frozenset[str] = frozenset()) -> None:
        self.nodes = nodes
        self._taken: set[str] = set()

    def permit(self, placement: Placement) -> bool:
        if placement.node not in self.nodes:
            return True
        if placement.task.kind != "map" or placement.node in self._taken:
            return False
        self._taken.add(placement.node)
        return True
