"""The scheduling framework's phases (mrsched.core.framework): Filter plugins with Kubernetes' reasons, one
filter pass per constraint, Permit refusing and Unreserve giving the capacity back, and a policy run through
it unchanged when no plugin says otherwise."""

from __future__ import annotations

from mrsched.core.framework import (
    Framework,
    NodeView,
    OneMapPerRound,
    PodConstraints,
)
from mrsched.core.model import ClusterSnapshot
from mrsched.policies import make_policy
from tests.unit.core.test_filter_before_score import NODE_NAMES, jobs, nodes

DEGRADED = {"key": "mrsched.dev/degraded", "value": "disk", "effect": "NoSchedule"}
VIEWS = {
    "n0": NodeView("n0", {"disk": "ssd"}),
    "n1": NodeView("n1", {"disk": "ssd"}, taints=(DEGRADED,)),
    "n2": NodeView("n2", {"disk": "hdd"}),
    "n3": NodeView("n3", {"disk": "ssd"}, unschedulable=True),
}


def test_each_filter_says_why_in_kube_schedulers_words() -> None:
    framework = Framework().for_nodes(VIEWS)
    pod = PodConstraints(node_selector={"disk": "ssd"})
    assert framework.reasons(pod, VIEWS["n0"]) == []
    assert framework.reasons(pod, VIEWS["n1"]) == [
        "node(s) had untolerated taint {mrsched.dev/degraded=disk: NoSchedule}"
    ]
    assert framework.reasons(pod, VIEWS["n2"]) == ["node(s) didn't match Pod's node affinity/selector"]
    assert framework.reasons(pod, VIEWS["n3"]) == ["node(s) were unschedulable"]


def test_feasible_nodes_pass_every_filter_and_none_means_all() -> None:
    framework = Framework().for_nodes(VIEWS)
    assert framework.feasible(PodConstraints(node_selector={"disk": "ssd"})) == {"n0"}
    tolerant = PodConstraints(tolerations=({"key": "mrsched.dev/degraded", "operator": "Exists"},))
    assert framework.feasible(tolerant) == {"n0", "n1", "n2"}
    plain = Framework().for_nodes({"a": NodeView("a"), "b": NodeView("b")})
    assert plain.feasible(PodConstraints()) is None  # nothing to filter: Job.nodes stays None


def test_a_refused_placement_is_unreserved_and_the_rest_bound() -> None:
    """A canary node (OneMapPerRound) takes one map; the policy's other placements there are given back: the
    tasks are pending again and the node's capacity free for the rest of the round."""
    fresh = jobs()
    fresh[0].nodes = None
    alone = ClusterSnapshot(0.0, nodes(True), {n: [] for n in NODE_NAMES}, fresh)
    unpermitted = make_policy("fair", {"assignMultiple": True}).schedule_round(alone, NODE_NAMES)
    assert sum(p.node == "n0" for p in unpermitted) >= 2  # without the permit, n0 would take more than one
    picky, free = jobs()
    picky.nodes = None
    snapshot = ClusterSnapshot(0.0, nodes(True), {n: [] for n in NODE_NAMES}, [picky, free])
    framework = Framework(permits=(OneMapPerRound(frozenset({"n0"})),))
    placed = framework.run_round(make_policy("fair", {"assignMultiple": True}), snapshot, NODE_NAMES)
    on_canary = [p for p in placed if p.node == "n0"]
    assert len(on_canary) == 1 and on_canary[0].task.kind == "map"
    bound = {p.task.key for p in placed}
    running = {a.task.key for attempts in snapshot.running.values() for a in attempts}
    assert running == bound  # the refused ones left the snapshot
    refused = [t for j in (picky, free) for t in j.maps if t.key not in bound and not t.pending]
    assert refused == []
    assert picky.running_maps + free.running_maps == sum(p.task.kind == "map" for p in placed)


def test_without_permit_plugins_a_round_is_the_policys_own() -> None:
    def round_of(through_framework: bool) -> list[tuple[str, str]]:
        js = jobs()
        snapshot = ClusterSnapshot(0.0, nodes(True), {n: [] for n in NODE_NAMES}, js)
        policy = make_policy("fair")
        placed = (
            Framework().run_round(policy, snapshot, NODE_NAMES)
            if through_framework
            else policy.schedule_round(snapshot, NODE_NAMES)
        )
        return [(p.task.key, p.node) for p in placed]

    assert round_of(True) == round_of(False)
