"""A failed attempt is announced (a TaskFailed Event) exactly once, by the round that records it in the job's
status: the record alone says it was announced, in this operator and in one started after a restart."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mrsched.core.model import Node
from mrsched.operator.jobs.reconcile import JobReconciler
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import PodAttempt
from mrsched.operator.model.roundstats import RoundStats
from mrsched.operator.model.snapshot import NodeInfo

NOW = 1000.0
WORKERS = {"a": NodeInfo(Node("a", 4, 8192), ready=True, schedulable=True, taints=(), labels={})}


class FakeApi:
    """The job's status as the API server keeps it, and the Events written; ``refuse_patches`` fails them."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = {}
        self.events: list[tuple[str, str]] = []  # (reason, message)
        self.refuse_patches = False
        self.deleted: list[str] = []

    def patch_job_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        if self.refuse_patches:
            raise RuntimeError("429 Too Many Requests")
        self.status = {**self.status, **patch}

    def event(self, body: dict[str, Any], kind: str, reason: str, message: str) -> None:
        self.events.append((reason, message))

    def delete_pod(self, namespace: str, name: str, grace_s: float | None = None) -> None:
        assert grace_s is None, "a surplus attempt's node may still run it: never forced"
        self.deleted.append(name)

    def failures_announced(self) -> list[str]:
        return [message for reason, message in self.events if reason == "TaskFailed"]


def body(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "job", "namespace": "ns", "uid": "uid-1", "creationTimestamp": None},
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"paths": ["in"]},
            "output": {"path": "out"},
            "maps": 2,
            "reduces": 1,
            "backoffLimit": 3,
        },
        "status": status,
    }


def attempt(index: int, n: int, phase: str, kind: str = "map") -> PodAttempt:
    return PodAttempt(
        name=f"job-uid-1-{kind[0]}{index:05d}-a{n}",
        kind=kind,  # type: ignore[arg-type]
        index=index,
        attempt=n,
        node="a",
        phase=phase,  # type: ignore[arg-type]
        created=100.0 + n,
        started=101.0 + n,
        finished=110.0 + n if phase in ("Succeeded", "Failed") else None,
        exit_code=0 if phase == "Succeeded" else 1,
    )


def reconcile(reconciler: JobReconciler, api: FakeApi, pods: list[PodAttempt]) -> str:
    state = JobState.build(body(dict(api.status)), pods)
    return reconciler.reconcile(body(dict(api.status)), state, WORKERS, {"a": "rack-1"}, NOW, RoundStats())


def test_a_failure_is_announced_once_by_the_round_that_records_it() -> None:
    api = FakeApi()
    reconciler = JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics())
    pods = [attempt(0, 0, "Failed"), attempt(1, 0, "Running")]
    assert reconcile(reconciler, api, pods) == "Running"
    assert len(api.failures_announced()) == 1 and "m00000-a0" in api.failures_announced()[0]
    assert api.status["tasks"]["map"]["failed"] == "0:0", "recorded by the same round's status patch"
    for _ in range(3):
        reconcile(reconciler, api, pods)
    assert len(api.failures_announced()) == 1
    # A restarted operator remembers nothing but the status: it does not announce it again either.
    reconcile(JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics()), api, pods)
    assert len(api.failures_announced()) == 1
    # The next failure of the same task is a new announcement, once.
    pods = [*pods, attempt(0, 1, "Failed")]
    reconcile(reconciler, api, pods)
    reconcile(reconciler, api, pods)
    assert len(api.failures_announced()) == 2 and "m00000-a1" in api.failures_announced()[1]
    assert "2 of 4 attempts used" in api.failures_announced()[1]


def test_a_failure_whose_status_patch_fails_is_announced_by_the_round_that_records_it() -> None:
    api = FakeApi()
    reconciler = JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics())
    pods = [attempt(0, 0, "Failed"), attempt(1, 0, "Running")]
    api.refuse_patches = True
    with pytest.raises(RuntimeError):  # the loop reports it (job_error) and goes on with the other jobs
        reconcile(reconciler, api, pods)
    assert api.failures_announced() == [], "not announced before it is recorded"
    api.refuse_patches = False
    reconcile(reconciler, api, pods)
    reconcile(reconciler, api, pods)
    assert len(api.failures_announced()) == 1


def test_attempts_no_task_needs_are_ended_gracefully_and_not_charged() -> None:
    """A pod create that timed out and was delivered late leaves two live attempts of one task (the chaos proxy's
    hung write): the older is ended, and so is a live attempt of a task that has succeeded, and every live one of
    a finished job; none counts against the backoff."""
    api = FakeApi()
    reconciler = JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics())
    late = attempt(0, 0, "Running")  # created after its task was placed again as a1
    pods = [late, attempt(0, 1, "Running"), attempt(1, 0, "Succeeded"), attempt(1, 1, "Running")]
    assert reconcile(reconciler, api, pods) == "Running"
    assert sorted(api.deleted) == ["job-uid-1-m00000-a0", "job-uid-1-m00001-a1"]
    assert api.status["maps"]["failed"] == 0 and api.status["maps"]["running"] == 1, api.status["maps"]

    # A finished job ends any attempt still live (one created late, after the job ended), once.
    api = FakeApi()
    api.status = {"phase": "Failed"}
    reconciler = JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics())
    reconcile(reconciler, api, [attempt(0, 0, "Failed"), attempt(1, 0, "Running"), attempt(1, 1, "Pending")])
    assert sorted(api.deleted) == ["job-uid-1-m00001-a0", "job-uid-1-m00001-a1"]


def test_a_changed_kube_scheduler_verdict_is_announced_again_an_unchanged_one_once() -> None:
    """kube-scheduler's first word on a pod is often transient (its PersistentVolumeClaim not yet bound); the lasting
    one (Insufficient cpu) must reach the job's Events too, and each verdict only once."""
    api = FakeApi()
    reconciler = JobReconciler(cast(ClusterApi, api), OperatorConfig(), OperatorMetrics())

    def pending(message: str) -> PodAttempt:
        return PodAttempt(
            name="job-uid-1-m00000-a0",
            kind="map",
            index=0,
            attempt=0,
            node=None,
            phase="Pending",
            created=NOW - 1,
            reason="Unschedulable",
            message=message,
        )

    unbound = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    cpu = "0/1 nodes are available: 1 Insufficient cpu."
    for message in (unbound, unbound, cpu, cpu):
        reconcile(reconciler, api, [pending(message), attempt(1, 0, "Running")])
    announced = [m for reason, m in api.events if reason == "TaskUnschedulable"]
    assert announced == [f"job-uid-1-m00000-a0: {unbound}", f"job-uid-1-m00000-a0: {cpu}"]
    reconciler.forget(set())
    reconcile(reconciler, api, [pending(cpu), attempt(1, 0, "Running")])
    assert len([m for reason, m in api.events if reason == "TaskUnschedulable"]) == 3, (
        "forgotten, so told again"
    )
