"""A node drained with the real ``kubectl drain`` (cordon, then the Eviction API) while a task runs on it
(issue 20, defect 6): the evicted attempt is a disruption, not the task's failure; the task runs again on
another node and the job succeeds without using its backoff.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import OperatorProcess, apply, job_manifest, task_pods, wait_phase

MB = 1 << 20


def running_map(kube: Kube, namespace: str, job: str) -> dict[str, Any] | None:
    for pod in task_pods(kube, namespace, job):
        labels = pod["metadata"]["labels"]
        if labels["mrsched.dev/task-type"] == "map" and (pod.get("status") or {}).get("phase") == "Running":
            return pod
    return None


def test_a_drained_node_s_task_runs_again_elsewhere_without_a_failure(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"medium": 2}, time_scale=4.0)
    apply(
        kube,
        namespace,
        job_manifest(
            "drained",
            # Model mode, wordcount: about 20 s of map on a medium node at 4x emulated time.
            workload={"app": "wordcount"},
            input={"paths": ["in"], "bytes": 300 * MB},
            output={"path": "out"},
            maps=1,
            reduces=1,
            backoffLimit=0,  # a single charged failure would fail the job
            resources={"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}},
        ),
    )
    pod = wait_for(lambda: running_map(kube, namespace, "drained"), 60, "the map to run")
    node = pod["spec"]["nodeName"]
    drained = kube.kubectl(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s", check=False
    )
    assert drained.returncode == 0, drained.stderr
    assert f"evicting pod {namespace}/{pod['metadata']['name']}" in drained.stdout + drained.stderr

    job = wait_phase(kube, namespace, "drained", ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"]["failed"] == 0, "an eviction is not the task's failure"
    assert job["status"]["tasks"]["map"] == {"attempts": "0=2", "succeeded": "0", "failed": ""}
    (again,) = [
        p
        for p in task_pods(kube, namespace, "drained")
        if p["metadata"]["labels"]["mrsched.dev/task-type"] == "map"
    ]
    assert again["metadata"]["name"].endswith("-m00000-a1") and again["spec"]["nodeName"] != node
