"""When a task pod's finalizer may go (``tracking``), and which ended attempts are disruptions rather than the
task's failures (``pods.read_attempt``)."""

from __future__ import annotations

from typing import Any

import pytest

from mrsched.operator.model.pods import TRACKING_FINALIZER, read_attempt
from mrsched.operator.model.tracking import prunable, releasable, tracked


def pod(
    phase: str,
    *,
    uid: str = "job-1",
    node: str | None = "a",
    deleted: str | None = None,
    grace: int = 10,
    finished: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "job-12345-m00000-a0",
        "namespace": "ns",
        "creationTimestamp": "2026-11-26T10:00:00Z",
        "labels": {
            "mrsched.dev/job-uid": uid,
            "mrsched.dev/task-type": "map",
            "mrsched.dev/task-index": "0",
            "mrsched.dev/attempt": "0",
        },
        "finalizers": ["other.example/keep", TRACKING_FINALIZER],
    }
    if deleted:
        meta["deletionTimestamp"] = deleted
        meta["deletionGracePeriodSeconds"] = grace
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if finished:
        status["containerStatuses"] = [
            {
                "state": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": "2026-11-26T10:00:01Z",
                        "finishedAt": finished,
                    }
                }
            }
        ]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def test_the_finalizer_is_found_where_it_is() -> None:
    assert tracked(pod("Running")) == 1
    bare = pod("Running")
    bare["metadata"]["finalizers"] = []
    assert tracked(bare) is None


@pytest.mark.parametrize(
    ("body", "recorded", "departed", "expected"),
    [
        (pod("Succeeded"), {"job-1"}, set(), True),  # finished, and its job's status now has it
        (pod("Failed"), set(), set(), False),  # its job's status was not written this round: hold
        (pod("Running"), {"job-1"}, set(), False),  # still running
        (
            pod("Running", deleted="2026-11-26T10:00:20Z"),
            {"job-1"},
            set(),
            False,
        ),  # the kubelet ends it first
        (pod("Running", deleted="2026-11-26T10:00:20Z", node="gone"), {"job-1"}, set(), True),  # never will
        (pod("Pending", deleted="2026-11-26T10:00:20Z"), {"job-1"}, set(), True),  # never ran
        (pod("Running"), set(), {"job-1"}, True),  # its job is gone: nothing to record
    ],
)
def test_a_pod_goes_once_its_outcome_is_recorded_or_can_never_come(
    body: dict[str, Any], recorded: set[str], departed: set[str], expected: bool
) -> None:
    assert releasable(body, recorded, departed, nodes_up={"a"}) is expected


def test_an_attempt_ended_by_its_deletion_is_a_disruption_not_a_failure() -> None:
    # Asked to go at 10:00:10 (deletionTimestamp 10:00:20 with a 10 s grace), killed at 10:00:11.
    killed = read_attempt(pod("Failed", deleted="2026-11-26T10:00:20Z", finished="2026-11-26T10:00:11Z"))
    assert killed is not None and killed.rejected
    # Failed at 10:00:05, then deleted (a user cleaning up, the pod GC): a failure of the task.
    failed = read_attempt(pod("Failed", deleted="2026-11-26T10:00:20Z", finished="2026-11-26T10:00:05Z"))
    assert failed is not None and not failed.rejected
    evicted = read_attempt(
        pod(
            "Failed",
            finished="2026-11-26T10:00:05Z",
            conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}],
        )
    )
    assert evicted is not None and evicted.rejected


def test_finished_pods_of_jobs_ended_a_ttl_ago_are_pruned_and_nothing_else() -> None:
    def task(name: str, uid: str, phase: str, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"mrsched.dev/job-uid": uid}}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta, "status": {"phase": phase}}

    pods = [
        task("old-done", "old", "Succeeded"),
        task("old-failed", "old", "Failed"),
        task(
            "old-running", "old", "Running"
        ),  # a job's last attempts are ended, not pruned, by their own path
        task("old-going", "old", "Succeeded", deleting=True),
        task("recent-done", "recent", "Succeeded"),
        task("live-job", "live", "Succeeded"),
    ]
    finished = {"old": 1000.0, "recent": 1250.0}
    assert prunable(pods, finished, now=1300.0, ttl_s=300) == [
        ("ns", "old-done", "old"),
        ("ns", "old-failed", "old"),
    ]
    assert prunable(pods, finished, now=1299.0, ttl_s=300) == []


def test_a_finished_jobs_status_stays_as_it_was_once_its_pods_are_pruned() -> None:
    from mrsched.operator.model import status as job_status
    from mrsched.operator.model.jobstate import JobState

    body: dict[str, Any] = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {"workload": {"app": "pi"}, "output": {"path": "o"}, "maps": 1, "reduces": 1},
    }
    pods = [
        {
            "metadata": {
                "name": f"j-u1-{k[0]}00000-a0",
                "namespace": "ns",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {
                    "mrsched.dev/task-type": k,
                    "mrsched.dev/task-index": "0",
                    "mrsched.dev/attempt": "0",
                },
            },
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Succeeded", "startTime": "2026-01-01T00:00:01Z"},
        }
        for k in ("map", "reduce", "commit")
    ]
    now, backoff = 1767225700.0, (2.0, 60.0)
    state = JobState.build(body, [a for p in pods if (a := read_attempt(p)) is not None])
    first, _ = job_status.compute(state, job_status.decide(state), "fair", now, backoff)
    assert first["phase"] == "Succeeded"
    body["status"] = first
    pruned = JobState.build(body, [])  # every pod deleted since
    again, transitions = job_status.compute(pruned, job_status.decide(pruned), "fair", now + 600, backoff)
    assert transitions == []
    assert {k: v for k, v in again.items() if v is not None} == {
        k: v for k, v in first.items() if v is not None
    }
