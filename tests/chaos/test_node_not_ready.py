"""A NotReady node keeps its tasks for the configured grace, as taint-based eviction does; after it they are
placed again, and their pods are never force-deleted (issue 20, defect 3).

Before: the first round that saw the node NotReady force-deleted its pods (grace 0) and re-created the attempt;
a kubelet restart was enough, and the old container could still be running.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import watch

from tests.conftest import NODE_GRACE_S, EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import apply, apply_crds, job_manifest, start_operator, task_pods, wait_phase

DONE = ("Succeeded", "Failed")
MB = 1 << 20


def one_long_map(name: str) -> dict[str, Any]:
    # Model mode, wordcount at 0.234 CPU-s per MB on a 1x core: ~70 s of map on a medium node.
    return job_manifest(
        name,
        workload={"app": "wordcount"},
        input={"paths": ["in"], "bytes": 300 * MB},
        output={"path": "out"},
        maps=1,
        reduces=1,
        resources={"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}},
    )


def ready(kube: Kube, node: str) -> str:
    obj = kube.node(node) or {}
    conditions = obj.get("status", {}).get("conditions", [])
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "missing")


def rescheduled(kube: Kube, namespace: str, job: str) -> str:
    return kube.kubectl(
        "get",
        "events",
        "-n",
        namespace,
        "--field-selector",
        f"involvedObject.name={job},reason=TaskRescheduled",
        "-o",
        "jsonpath={.items[*].message}",
    ).stdout


class PodDeletions:
    """Watches a namespace's pods and records, per pod, the grace period of its deletion: a graceful delete
    first marks the pod (deletionGracePeriodSeconds > 0), a forced one removes it at once (0, or no mark)."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.grace: dict[str, int] = {}
        self._stopped = False
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(kube, namespace), daemon=True)
        self._thread.start()

    def _run(self, kube: Kube, namespace: str) -> None:
        try:
            for event in self._watch.stream(kube.core.list_namespaced_pod, namespace, timeout_seconds=600):
                meta = event["object"].metadata
                if meta.deletion_timestamp is not None or event["type"] == "DELETED":
                    self.grace.setdefault(meta.name, meta.deletion_grace_period_seconds or 0)
        except Exception:  # the connection closed by stop() or the cluster's teardown
            if not self._stopped:
                raise

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()


def running_map(kube: Kube, namespace: str, job: str) -> dict[str, Any] | None:
    for pod in task_pods(kube, namespace, job):
        if (pod.get("status") or {}).get("phase") == "Running":
            return pod
    return None


def test_a_node_not_ready_within_the_grace_keeps_its_task(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    apply_crds(kube)
    operator = start_operator(kube, namespace, tmp_path / "logs")  # the default grace: 300 s
    try:
        emulator = emulate({"medium": 1})
        (node,) = emulator.nodes
        apply(kube, namespace, one_long_map("patient"))
        pod = wait_for(lambda: running_map(kube, namespace, "patient"), 60, "the map to run")
        emulator.client.set_heartbeats(node, False)  # a kubelet restart, a network blip
        wait_for(lambda: ready(kube, node) != "True", NODE_GRACE_S + 30, f"{node} to turn NotReady")
        time.sleep(5)  # ten heartbeats of the operator with the node NotReady
        assert rescheduled(kube, namespace, "patient") == ""
        live = [
            p for p in task_pods(kube, namespace, "patient") if not p["metadata"].get("deletionTimestamp")
        ]
        assert [p["metadata"]["name"] for p in live] == [pod["metadata"]["name"]], "the task kept its pod"
        emulator.client.set_heartbeats(node, True)
        job = wait_phase(kube, namespace, "patient", DONE, 180)
    finally:
        operator.stop()
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["tasks"]["map"]["attempts"] == "0=1", "one attempt: nothing was re-run"


def test_a_node_not_ready_past_the_grace_has_its_task_placed_again_without_force(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    apply_crds(kube)
    grace_s = 6.0
    operator = start_operator(
        kube, namespace, tmp_path / "logs", env={"MRSCHED_NODE_LOST_GRACE_S": str(grace_s)}
    )
    try:
        emulator = emulate({"medium": 2})
        deletions = PodDeletions(kube, namespace)
        apply(kube, namespace, one_long_map("moved"))
        pod = wait_for(lambda: running_map(kube, namespace, "moved"), 60, "the map to run")
        lost = pod["spec"]["nodeName"]
        emulator.client.set_heartbeats(lost, False)
        wait_for(lambda: ready(kube, lost) != "True", NODE_GRACE_S + 30, f"{lost} to turn NotReady")
        not_ready_at = time.time()
        message = wait_for(lambda: rescheduled(kube, namespace, "moved"), 60, "the task to be placed again")
        assert time.time() - not_ready_at >= grace_s - 1.5, "placed again only after the grace"
        assert f"node {lost} NotReady for 6 s" in message, message
        wait_for(
            lambda: pod["metadata"]["name"] in deletions.grace, 30, "the lost attempt's pod to be deleted"
        )
        job = wait_phase(kube, namespace, "moved", DONE, 240)
    finally:
        operator.stop()
        emulator.client.set_heartbeats(lost, True)
        deletions.stop()
    assert deletions.grace[pod["metadata"]["name"]] > 0, "deleted with its grace period, not forced"
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"]["failed"] == 0, "a lost node is not the task's failure"
    assert job["status"]["tasks"]["map"]["attempts"] == "0=2"
