"""Disruptions are not the task's failure (issue 20, defect 6): a node drained with the real ``kubectl drain``
(cordon, then the Eviction API), and a graceful node shutdown (the node emulator's kubelet does what the
kubelet's node shutdown manager does: ends each pod within the shutdown grace, writes it Failed with a
``DisruptionTarget`` condition, admits nothing more, then the node turns NotReady), each while a task runs on
the node. The task runs again on another node and a job with ``backoffLimit: 0`` succeeds.
"""

from __future__ import annotations

from typing import Any

from tests.chaos.test_node_not_ready import one_long_map, running_map
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import OperatorProcess, apply, task_pods, wait_phase


def one_map(name: str) -> dict[str, Any]:
    """About 20 s of map at 4x emulated time; a single charged failure would fail the job."""
    job = one_long_map(name)
    job["spec"]["backoffLimit"] = 0
    return job


def ran_again_elsewhere(kube: Kube, namespace: str, name: str, node: str) -> dict[str, Any]:
    job = wait_phase(kube, namespace, name, ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"]["failed"] == 0, "a disruption is not the task's failure"
    assert job["status"]["tasks"]["map"]["attempts"] == "0=2", job["status"]["tasks"]
    maps = {
        p["metadata"]["name"].rsplit("-", 1)[1]: p
        for p in task_pods(kube, namespace, name)
        if p["metadata"]["labels"]["mrsched.dev/task-type"] == "map"
    }
    assert maps["a1"]["spec"]["nodeName"] != node and maps["a1"]["status"]["phase"] == "Succeeded"
    return maps


def test_a_drained_node_s_task_runs_again_elsewhere_without_a_failure(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"medium": 2}, time_scale=4.0)
    apply(kube, namespace, one_map("drained"))
    pod = wait_for(lambda: running_map(kube, namespace, "drained"), 60, "the map to run")
    node = pod["spec"]["nodeName"]
    drained = kube.kubectl(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s", check=False
    )
    assert drained.returncode == 0, drained.stderr
    assert f"evicting pod {namespace}/{pod['metadata']['name']}" in drained.stdout + drained.stderr

    maps = ran_again_elsewhere(kube, namespace, "drained", node)
    assert "a0" not in maps, "the evicted pod is gone once its end is recorded"


def test_a_graceful_node_shutdown_s_task_runs_again_elsewhere_without_a_failure(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulator = emulate({"medium": 2}, time_scale=4.0)
    apply(kube, namespace, one_map("shutdown"))
    pod = wait_for(lambda: running_map(kube, namespace, "shutdown"), 60, "the map to run")
    node = pod["spec"]["nodeName"]
    assert emulator.client.shut_down_node(node, grace_s=5) == [f"{namespace}/{pod['metadata']['name']}"]
    maps = ran_again_elsewhere(kube, namespace, "shutdown", node)
    ended = maps["a0"]["status"]
    assert (ended["phase"], ended["reason"]) == ("Failed", "Terminated"), ended
    disruption = next(c for c in ended["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")
