"""A job no worker node could run is told apart from one that waits its turn, and why (``fit``); a pod that
cannot start yet is not a failed job until its grace is over (``pods.PodAttempt.cannot_start``)."""

from __future__ import annotations

from typing import Any

from mrsched.operator.jobs.fit import refusing_nodes, unplaceable
from mrsched.operator.model import status as job_status
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import PodAttempt
from mrsched.operator.model.snapshot import NodeInfo, read_node

CONFIG = OperatorConfig()


def node(
    name: str, cpu: str, memory: str, labels: dict[str, str] | None = None, taints: Any = ()
) -> NodeInfo:
    return read_node(
        {
            "metadata": {"name": name, "labels": {"mrsched.dev/worker": "true", **(labels or {})}},
            "spec": {"taints": list(taints)},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        CONFIG,
    )


def job(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "creationTimestamp": None},
        "spec": {"workload": {"app": "pi"}, "output": {"path": "o"}, "maps": 2, "reduces": 1, **spec},
    }


WORKERS = {
    "small": node("small", "2", "4Gi", {"disk": "hdd"}),
    "large": node("large", "8", "32Gi", {"disk": "ssd"}),
}


def test_a_job_that_fits_some_worker_is_placeable() -> None:
    assert unplaceable(JobSpec.from_resource(job(nodeSelector={"disk": "ssd"})), WORKERS) is None


def test_a_selector_no_worker_matches_says_so() -> None:
    reason, message = unplaceable(JobSpec.from_resource(job(nodeSelector={"disk": "nvme"})), WORKERS) or (
        "",
        "",
    )
    assert reason == "NoMatchingNode" and "disk=nvme" in message and "0/2" in message


def test_requests_beyond_every_matching_node_say_which_resource() -> None:
    spec = JobSpec.from_resource(
        job(resources={"reduce": {"cpu": "4", "memory": "1Gi"}}, nodeSelector={"disk": "hdd"})
    )
    reason, message = unplaceable(spec, WORKERS) or ("", "")
    assert reason == "RequestsExceedAllocatable"
    assert "Insufficient cpu" in message and "reduce" in message and "small" in message
    spec = JobSpec.from_resource(job(resources={"map": {"cpu": "1", "memory": "64Gi"}}))
    assert "Insufficient memory" in (unplaceable(spec, WORKERS) or ("", ""))[1]


def test_a_passing_taint_does_not_make_a_job_unplaceable() -> None:
    cordoned = {
        "large": node(
            "large", "8", "32Gi", taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
        )
    }
    assert unplaceable(JobSpec.from_resource(job()), cordoned) is None
    dedicated = {
        "large": node("large", "8", "32Gi", taints=[{"key": "team", "value": "a", "effect": "NoSchedule"}])
    }
    assert unplaceable(JobSpec.from_resource(job()), dedicated)[0] == "NoMatchingNode"  # type: ignore[index]
    tolerated = job(tolerations=[{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}])
    assert unplaceable(JobSpec.from_resource(tolerated), dedicated) is None


def test_the_condition_is_set_while_it_holds_and_cleared_after() -> None:
    body = job(nodeSelector={"disk": "nvme"})
    state = JobState.build(body, [])
    verdict = job_status.decide(state)
    why = unplaceable(state.spec, WORKERS)
    status, transitions = job_status.compute(state, verdict, "fair", 100.0, (2.0, 60.0), unplaceable=why)
    cond = {c["type"]: c for c in status["conditions"]}["Unplaceable"]
    assert (cond["status"], cond["reason"]) == ("True", "NoMatchingNode")
    assert [(t.type, t.reason) for t in transitions] == [("Warning", "NoMatchingNode")]
    # A node that fits joins: the condition turns False (it stays listed, with its transition time).
    state = JobState.build({**body, "status": status}, [])
    status, transitions = job_status.compute(state, verdict, "fair", 110.0, (2.0, 60.0), unplaceable=None)
    cond = {c["type"]: c for c in status["conditions"]}["Unplaceable"]
    assert cond["status"] == "False" and transitions == []
    # A job that never was unplaceable has no such condition.
    plain, _ = job_status.compute(JobState.build(job(), []), verdict, "fair", 100.0, (2.0, 60.0))
    assert "Unplaceable" not in {c["type"] for c in plain["conditions"]}


def pending(reason: str, created: float = 0.0) -> PodAttempt:
    return PodAttempt("p", "map", 0, 0, "n", "Pending", created=created, reason=reason)


def test_a_pod_that_may_start_later_gets_its_grace() -> None:
    assert not pending("ErrImagePull").cannot_start(now=299.0, grace_s=300.0)
    assert not pending("ImagePullBackOff").cannot_start(now=299.0, grace_s=300.0)
    assert pending("ImagePullBackOff").cannot_start(now=301.0, grace_s=300.0)
    assert pending("InvalidImageName").cannot_start(now=1.0, grace_s=300.0), "never fixes itself"
    assert not pending("ContainerCreating").cannot_start(now=10_000.0, grace_s=300.0)


def test_a_node_that_refused_a_pod_is_left_alone_for_the_cool_down() -> None:
    """A node shutting down answers every pod with NodeShutdown while the API still calls it Ready: offered
    tasks at each heartbeat, it made a task burn 89 attempt numbers in 20 s (the live shutdown test, before)."""

    def refused(node: str, reason: str, at: float) -> PodAttempt:
        return PodAttempt("p", "map", 0, 0, node, "Failed", created=at - 1, finished=at, reason=reason)

    attempts = [
        refused("closing", "NodeShutdown", 100.0),
        refused("full", "OutOfcpu", 80.0),
        refused("old", "NodeShutdown", 50.0),  # past the cool-down
        refused("evicting", "Evicted", 100.0),  # about a running pod, not about taking more
        PodAttempt("q", "map", 1, 0, "failing", "Failed", created=99.0, finished=100.0, reason="Error"),
    ]
    assert refusing_nodes(attempts, now=105.0, cooldown_s=30.0) == {"closing", "full"}
    assert refusing_nodes(attempts, now=131.0, cooldown_s=30.0) == set()
