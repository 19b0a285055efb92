"""Deleted pods neither re-run finished work, nor reset a task's backoff, nor free an attempt number (issue 20,
defect 2): the job's status records what its tasks did.

Before: a job's state was rebuilt from its pods alone; a finished map whose pod was deleted ran again under the
same attempt number, and a task whose failed pods were deleted never exhausted its backoff limit. Now the job's
status records what its tasks did, and a finalizer keeps each pod until its outcome is recorded.
"""

from __future__ import annotations

import re

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    get_job,
    job_manifest,
    task_pods,
    wait_phase,
)

DONE = ("Succeeded", "Failed")
MB = 1 << 20


def attempts(kube: Kube, namespace: str, job: str) -> dict[str, set[str]]:
    """Task (``m00003``) -> attempt numbers of the pods that exist."""
    found: dict[str, set[str]] = {}
    for pod in task_pods(kube, namespace, job):
        task, attempt = re.fullmatch(r".*-([mrc]\d{5})-a(\d+)", pod["metadata"]["name"]).groups()  # type: ignore[union-attr]
        found.setdefault(task, set()).add(attempt)
    return found


def delete_pods(kube: Kube, namespace: str, names: list[str]) -> None:
    kube.kubectl("delete", "pod", "-n", namespace, "--wait=false", *names)


def test_finished_maps_whose_pods_are_deleted_do_not_run_again(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"medium": 1})  # model mode, 2 map slots: six maps of ~2 s in three waves
    apply(
        kube,
        namespace,
        job_manifest(
            "survivor",
            workload={"app": "wordcount"},
            input={"paths": ["in"], "bytes": 6 * 8 * MB},
            output={"path": "out"},
            maps=6,
            reduces=1,
            reduceSlowStart=1.0,
            resources={"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}},
        ),
    )

    def succeeded_maps() -> list[str] | None:
        names = [
            p["metadata"]["name"]
            for p in task_pods(kube, namespace, "survivor")
            if p["metadata"]["labels"]["mrsched.dev/task-type"] == "map"
            and (p.get("status") or {}).get("phase") == "Succeeded"
        ]
        return names if len(names) >= 2 else None

    # Delete the pods of finished maps while the job runs (the pod GC, a user, a node's clean-up).
    deleted = wait_for(succeeded_maps, 90, "two maps to succeed")
    delete_pods(kube, namespace, deleted)
    job = wait_phase(kube, namespace, "survivor", DONE, 120)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"] == {"total": 6, "pending": 0, "running": 0, "succeeded": 6, "failed": 0}
    tasks = attempts(kube, namespace, "survivor")
    for name in deleted:
        task = re.fullmatch(r".*-(m\d{5})-a\d+", name).group(1)  # type: ignore[union-attr]
        assert task not in tasks, f"{task} ran again after its pod {name} was deleted: {tasks[task]}"
    assert all(a == {"0"} for a in tasks.values()), tasks
    assert job["status"]["tasks"]["map"] == {"attempts": "0-5=1", "succeeded": "0-5", "failed": ""}


def test_deleting_failed_pods_does_not_reset_the_backoff(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"medium": 1}, mode="process")
    apply(
        kube,
        namespace,
        job_manifest(
            "bad-regex",
            workload={"app": "grep", "parameters": {"pattern": "a("}},
            input={"paths": ["x"]},
            output={"path": "never"},
            maps=1,
            reduces=1,
            backoffLimit=2,
        ),
    )
    seen: set[str] = set()

    def failed_and_deleted() -> dict[str, object] | None:
        job = get_job(kube, namespace, "bad-regex")
        if (job.get("status") or {}).get("phase") in DONE:
            return job
        # Each failed pod is deleted as soon as it is seen, whether or not a round has seen it yet: its
        # finalizer holds it until the job's status has recorded the failure.
        failed = [
            p["metadata"]["name"]
            for p in task_pods(kube, namespace, "bad-regex")
            if (p.get("status") or {}).get("phase") == "Failed" and not p["metadata"].get("deletionTimestamp")
        ]
        if failed:
            seen.update(failed)
            delete_pods(kube, namespace, failed)
        return None

    job = wait_for(
        failed_and_deleted, 120, "the job to fail although its failed pods are deleted", interval_s=0.3
    )
    assert job["status"]["reason"] == "BackoffLimitExceeded", job["status"]
    assert "task map-00000 failed 3 times" in job["status"]["message"]
    assert len(seen) >= 2, f"the test deleted failed pods: {seen}"
    assert job["status"]["tasks"]["map"]["failed"] == "0:0.1.2", "three distinct attempt numbers failed"
    assert job["status"]["tasks"]["map"]["attempts"] == "0=3", "no attempt number used twice"
