"""The kubelet's admission check, quantities and status shapes."""

from __future__ import annotations

import pytest

from mrsched.emulator.podstatus import (
    TERMINATION_MESSAGE_LIMIT,
    Requests,
    admit,
    log_fallback,
    milli_value,
    pod_requests,
    terminated_status,
    truncate_message,
    whole_value,
)


@pytest.mark.parametrize(
    "text, milli, whole",
    [
        ("500m", 500, 1),
        ("2", 2000, 2),
        ("1Gi", 2**30 * 1000, 2**30),
        ("1.5G", 15 * 10**11, 15 * 10**8),
        ("128Mi", 128 * 2**20 * 1000, 128 * 2**20),
        ("1e3", 10**6, 1000),
        ("100k", 10**8, 10**5),
        ("1E", 10**21, 10**18),  # exa: the hand-written parser raised on it
        ("1Ei", 2**60 * 1000, 2**60),
        ("0.1m", 1, 1),  # both round up, as Quantity.MilliValue and Value do
        (3, 3000, 3),
    ],
)
def test_quantities_are_read_as_kubernetes_reads_them(text: str | int, milli: int, whole: int) -> None:
    assert milli_value(text) == milli and whole_value(text) == whole


def _pod(*containers: dict[str, str], init: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    spec: dict = {
        "containers": [{"name": f"c{i}", "resources": {"requests": c}} for i, c in enumerate(containers)]
    }  # type: ignore[type-arg]
    if init:
        spec["initContainers"] = [{"name": "init", "resources": {"limits": init}}]
    return {"metadata": {"uid": "u"}, "spec": spec}


def test_pod_requests_sum_containers_and_take_the_larger_init_container() -> None:
    assert pod_requests(_pod({"cpu": "250m", "memory": "1Gi"}, {"cpu": "1"})) == Requests(1250, 2**30)
    # An init container's limit stands in for its request; the pod needs the larger of init and the sum.
    assert pod_requests(_pod({"cpu": "100m"}, init={"cpu": "2", "memory": "1Mi"})) == Requests(2000, 2**20)


def test_admission_refuses_with_the_kubelets_reason_and_message() -> None:
    allocatable = {"cpu": "2", "memory": "4Gi", "pods": "3"}
    assert admit(Requests(1000, 0), Requests(1000, 0), 1, allocatable) is None
    cpu = admit(Requests(1500, 0), Requests(1000, 0), 1, allocatable)
    assert cpu is not None and cpu.reason == "OutOfcpu"
    assert cpu.message == "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
    memory = admit(Requests(0, 5 * 2**30), Requests(), 0, allocatable)
    assert memory is not None and memory.reason == "OutOfmemory"
    pods = admit(Requests(), Requests(), 3, allocatable)
    assert pods is not None and pods.reason == "OutOfpods"


def test_terminated_status_keeps_every_condition_and_the_kubelets_reasons() -> None:
    pod = {"metadata": {"uid": "u1"}, "spec": {"containers": [{"name": "task", "image": "img"}]}}
    ok = terminated_status(pod, exit_code=0, started_at="a", finished_at="b")
    failed = terminated_status(pod, exit_code=2, started_at="a", finished_at="b", message="boom")
    assert ok["phase"] == "Succeeded" and failed["phase"] == "Failed"
    assert ok["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert failed["containerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 2,
        "reason": "Error",
        "startedAt": "a",
        "finishedAt": "b",
        "message": "boom",
        "containerID": "emulated://u1/task",
    }
    assert {c["type"] for c in ok["conditions"]} == {
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    }


def test_messages_are_cut_at_the_kubelets_limits() -> None:
    long = "é" * 3000  # 6000 bytes
    cut = truncate_message(long)
    assert len(cut.encode()) <= TERMINATION_MESSAGE_LIMIT and long.startswith(cut)
    log = b"".join(f"line {i}\n".encode() for i in range(500))
    tail = log_fallback(log)
    assert tail.endswith("line 499") and len(tail.splitlines()) <= 80
