"""Canary maps on degraded-tainted nodes (operator/scheduling/canary.py): which nodes may take one, and what its pod
tolerates. The whole cycle (taint, canaries, recovery, taint lifted) runs on the live control plane in
tests/cluster/test_node_health_live.py."""

from __future__ import annotations

from typing import Any

from mrsched.core.kuberules import tolerates
from mrsched.core.model import Explanation
from mrsched.operator.learning.health import TAINT_KEY
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.scheduling.canary import (
    CANARY_TOLERATION,
    CanaryGate,
    busy_nodes,
    canary_explanation,
    canary_spec,
)


def _pod(node: str | None, phase: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def test_busy_nodes_are_those_with_an_unfinished_bound_task_pod() -> None:
    pods = [
        _pod("a", "Running"),
        _pod("b", "Pending"),
        _pod("c", "Succeeded"),
        _pod("d", "Failed"),
        _pod(None, "Pending"),  # kube-default, not bound yet
        _pod("e", "Running", deleting=True),  # going away: the node is free for the next canary
    ]
    assert busy_nodes(pods) == {"a", "b"}


def test_a_tainted_node_gets_one_canary_per_interval_and_none_while_a_task_runs_there() -> None:
    gate = CanaryGate(30.0)
    assert gate.due({"slow", "slower"}, busy={"slower"}, now=100.0) == {"slow"}  # never had one: at once
    gate.started("slow", 100.0)
    assert gate.due({"slow"}, busy=set(), now=129.9) == set()  # within the interval
    assert gate.due({"slow"}, busy={"slow"}, now=130.0) == set()  # its canary (or any task) still runs
    assert gate.due({"slow"}, busy=set(), now=130.0) == {"slow"}


def test_an_interval_of_zero_turns_canaries_off() -> None:
    assert CanaryGate(0.0).due({"slow"}, busy=set(), now=1e9) == set()


def test_the_canary_pod_tolerates_the_degraded_taint_whatever_its_resource_and_keeps_the_jobs_own() -> None:
    own = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    spec = JobSpec("j", "ns", "u", "pi", maps=4, reduces=0, output="out", tolerations=(own,))
    canary = canary_spec(spec)
    assert canary.tolerations == (own, CANARY_TOLERATION)
    assert spec.tolerations == (own,)  # the job's spec is unchanged
    for value in ("cpu", "disk", "cpu-disk"):
        taint = ({"key": TAINT_KEY, "value": value, "effect": "NoSchedule"},)
        assert tolerates(taint, canary.tolerations) and not tolerates(taint, spec.tolerations)
    other = ({"key": "dedicated", "value": "x", "effect": "NoSchedule"},)
    assert not tolerates(other, canary.tolerations)  # only the degraded taint


def test_the_canary_says_why_it_went_to_a_tainted_node() -> None:
    why = canary_explanation(Explanation("throughput", 1.5, "explore pi", "runner"))
    assert why.reason.startswith("explore pi; canary on a node tainted mrsched.dev/degraded")
    assert (why.policy, why.score, why.runner_up) == ("throughput", 1.5, "runner")
