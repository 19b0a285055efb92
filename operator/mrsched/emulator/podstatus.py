"""Pod statuses as a kubelet writes them, and the kubelet's admission check.

Pure functions over plain dicts (the JSON the API server takes), so that the emulator's behaviour can be read
and tested apart from its I/O. The shapes and reasons follow the kubelet: admission failures are
``OutOfcpu``/``OutOfmemory``/``OutOfpods`` with "Pod was rejected: Node didn't have enough resource: ...";
finished containers are ``Completed``, ``Error`` or ``OOMKilled``; termination messages are cut at 4096 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

#: The kubelet reads at most this many bytes of a container's termination message.
TERMINATION_MESSAGE_LIMIT = 4096
#: With FallbackToLogsOnError, the kubelet uses at most this many bytes of the log's tail.
LOG_FALLBACK_LIMIT = 2048


def milli_value(value: str | int | float) -> int:
    """A quantity in thousandths, rounded up: ``resource.Quantity.MilliValue``, what the kubelet and
    kube-scheduler count CPU in (parsed by the kubernetes client's ``parse_quantity``, ``1E`` and ``1e3``
    included)."""
    quantity: Decimal = parse_quantity(value)  # type: ignore[no-untyped-call]
    return math.ceil(quantity * 1000)


def whole_value(value: str | int | float) -> int:
    """A quantity as a whole number, rounded up: ``resource.Quantity.Value`` (memory bytes, pods)."""
    quantity: Decimal = parse_quantity(value)  # type: ignore[no-untyped-call]
    return math.ceil(quantity)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Requests:
    """What a pod asks of its node, in the kubelet's units: millicores, bytes, pods."""

    milli_cpu: int = 0
    memory_bytes: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.milli_cpu + other.milli_cpu, self.memory_bytes + other.memory_bytes)


def pod_requests(pod: dict[str, Any]) -> Requests:
    """Effective requests as the scheduler and kubelet compute them: the sum over containers, at least the
    largest init container's (limits stand in for missing requests, as the API server defaults them)."""

    def of(container: dict[str, Any]) -> Requests:
        res = container.get("resources") or {}
        want = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return Requests(milli_value(want.get("cpu", 0)), whole_value(want.get("memory", 0)))

    spec = pod.get("spec") or {}
    total = Requests()
    for container in spec.get("containers") or []:
        total = total + of(container)
    for init in spec.get("initContainers") or []:
        one = of(init)
        total = Requests(max(total.milli_cpu, one.milli_cpu), max(total.memory_bytes, one.memory_bytes))
    return total


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str


def admit(request: Requests, used: Requests, pods_used: int, allocatable: dict[str, Any]) -> Rejection | None:
    """The kubelet's resource fit check at admission (its ``OutOf<resource>`` rejections); None admits."""
    pods_cap = whole_value(allocatable.get("pods", 110))
    if pods_used + 1 > pods_cap:
        return Rejection(
            "OutOfpods",
            f"Node didn't have enough resource: pods, requested: 1, used: {pods_used}, capacity: {pods_cap}",
        )
    checks = (
        (
            "cpu",
            request.milli_cpu,
            used.milli_cpu,
            milli_value(allocatable.get("cpu", 0)),
        ),
        (
            "memory",
            request.memory_bytes,
            used.memory_bytes,
            whole_value(allocatable.get("memory", 0)),
        ),
    )
    for name, want, have, cap in checks:
        if want and have + want > cap:
            return Rejection(
                f"OutOf{name}",
                f"Node didn't have enough resource: {name}, requested: {want}, used: {have}, capacity: {cap}",
            )
    return None


def _condition(kind: str, status: bool, at: str, reason: str | None = None) -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": at,
        "lastProbeTime": None,
    }
    if reason:
        cond["reason"] = reason
    return cond


def rejected_status(rejection: Rejection) -> dict[str, Any]:
    return {
        "phase": "Failed",
        "reason": rejection.reason,
        "message": f"Pod was rejected: {rejection.message}",
    }


def _container_statuses(
    pod: dict[str, Any],
    *,
    running: bool,
    state: dict[str, Any],
    restarts: int = 0,
    last_state: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One status per container of the pod, all in ``state`` (the emulator runs a pod's task as one unit);
    ``restarts`` and ``last_state``: how often it was restarted, and how its previous run ended."""
    uid = pod["metadata"]["uid"]
    statuses = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        name, image = container["name"], container.get("image", "")
        container_id = f"emulated://{uid}/{name}"
        kind, detail = next(iter(state.items()))
        if kind == "terminated":
            detail = {**detail, "containerID": container_id}
        statuses.append(
            {
                "name": name,
                "image": image,
                "imageID": f"emulated://{image}",
                "containerID": container_id,
                "ready": running,
                "started": running,
                "restartCount": restarts,
                "state": {kind: detail},
                **({"lastState": last_state} if last_state else {}),
            }
        )
    return statuses


def running_status(
    pod: dict[str, Any],
    *,
    started_at: str,
    host_ip: str,
    pod_ip: str,
    containers_started_at: str | None = None,
    restarts: int = 0,
    last_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``started_at`` is the pod's startTime (its admission); its containers may have started later, once their
    images were pulled (``containers_started_at``), or again after a restart (``restarts``, ``last_state``)."""
    ran = containers_started_at or started_at
    return {
        "phase": "Running",
        **_sandbox(started_at, host_ip, pod_ip),
        "conditions": [
            _condition("PodReadyToStartContainers", True, started_at),
            _condition("Initialized", True, started_at),
            _condition("Ready", True, ran),
            _condition("ContainersReady", True, ran),
            _condition("PodScheduled", True, started_at),
        ],
        "containerStatuses": _container_statuses(
            pod, running=True, state={"running": {"startedAt": ran}}, restarts=restarts, last_state=last_state
        ),
    }


def crash_loop_status(
    pod: dict[str, Any],
    *,
    started_at: str,
    host_ip: str,
    pod_ip: str,
    restarts: int,
    last_terminated: dict[str, Any],
    backoff_s: float,
    at: str,
) -> dict[str, Any]:
    """A restartPolicy Always (or OnFailure, after a failure) pod whose container ended: still Running, not
    Ready, its container waiting out the restart back-off (``CrashLoopBackOff``, in the kubelet's words) with
    how its last run ended."""
    meta = pod["metadata"]
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    unready = f"containers with unready status: [{' '.join(names)}]"
    statuses = _container_statuses(
        pod,
        running=False,
        state={"waiting": {}},
        restarts=restarts,
        last_state={"terminated": last_terminated},
    )
    for status in statuses:
        status["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {backoff_s:.0f}s restarting failed container={status['name']} "
                f"pod={meta['name']}_{meta['namespace']}({meta['uid']})",
            }
        }
    not_ready = {**_condition("Ready", False, at, "ContainersNotReady"), "message": unready}
    return {
        "phase": "Running",
        **_sandbox(started_at, host_ip, pod_ip),
        "conditions": [
            _condition("PodReadyToStartContainers", True, started_at),
            _condition("Initialized", True, started_at),
            not_ready,
            {**_condition("ContainersReady", False, at, "ContainersNotReady"), "message": unready},
            _condition("PodScheduled", True, started_at),
        ],
        "containerStatuses": statuses,
    }


def _sandbox(started_at: str, host_ip: str, pod_ip: str) -> dict[str, Any]:
    """What the pod shows once its sandbox runs: addresses and startTime (activeDeadlineSeconds counts from it)."""
    return {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started_at,
    }


def waiting_status(
    pod: dict[str, Any], *, started_at: str, host_ip: str, pod_ip: str, waiting: dict[str, tuple[str, str]]
) -> dict[str, Any]:
    """Pending with its sandbox up while containers cannot start: ``waiting`` gives a container's (reason,
    message), e.g. ``ErrImagePull``; a container not named there waits as ``ContainerCreating`` (the emulator
    starts a pod's containers together)."""
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    unready = f"containers with unready status: [{' '.join(names)}]"
    statuses = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        reason, message = waiting.get(container["name"], ("ContainerCreating", ""))
        state = {"reason": reason, **({"message": message} if message else {})}
        statuses.append(
            {
                "name": container["name"],
                "image": container.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": state},
            }
        )
    not_ready = {**_condition("Ready", False, started_at, "ContainersNotReady"), "message": unready}
    return {
        "phase": "Pending",
        **_sandbox(started_at, host_ip, pod_ip),
        "conditions": [
            _condition("PodReadyToStartContainers", True, started_at),
            _condition("Initialized", True, started_at),
            not_ready,
            {**not_ready, "type": "ContainersReady"},
            _condition("PodScheduled", True, started_at),
        ],
        "containerStatuses": statuses,
    }


def terminated_state(
    pod: dict[str, Any],
    exit_code: int,
    started_at: str,
    finished_at: str,
    message: str = "",
    reason: str | None = None,
) -> dict[str, Any]:
    """A container's ``state.terminated``: the kubelet's reason is Completed or Error unless one is given."""
    terminated: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason or ("Completed" if exit_code == 0 else "Error"),
        "startedAt": started_at,
        "finishedAt": finished_at,
        "containerID": f"emulated://{pod['metadata']['uid']}",
    }
    if message:
        terminated["message"] = truncate_message(message)
    return terminated


def terminated_status(
    pod: dict[str, Any],
    *,
    exit_code: int,
    started_at: str,
    finished_at: str,
    message: str = "",
    reason: str | None = None,
    pod_reason: str = "",
    pod_message: str = "",
) -> dict[str, Any]:
    """The pod after its (single) container ended. ``reason`` defaults to the kubelet's: Completed or Error;
    ``pod_reason`` and ``pod_message`` say why the kubelet ended the pod (``DeadlineExceeded``)."""
    succeeded = exit_code == 0
    terminated = terminated_state(pod, exit_code, started_at, finished_at, message, reason)
    return {
        "phase": "Succeeded" if succeeded else "Failed",
        **({"reason": pod_reason, "message": pod_message} if pod_reason else {}),
        # The whole list, since statuses are written with merge patches that replace lists.
        "conditions": [
            _condition("PodReadyToStartContainers", False, finished_at),
            _condition("Initialized", True, started_at, "PodCompleted" if succeeded else None),
            _condition("Ready", False, finished_at, "PodCompleted" if succeeded else "PodFailed"),
            _condition("ContainersReady", False, finished_at, "PodCompleted" if succeeded else "PodFailed"),
            _condition("PodScheduled", True, started_at),
        ],
        "containerStatuses": _container_statuses(pod, running=False, state={"terminated": terminated}),
    }


#: The kubelet's word for a container of a terminated pod that never ran (``TerminatePod``).
UNKNOWN_CONTAINER_MESSAGE = "The container could not be located when the pod was terminated"


def never_started_status(
    pod: dict[str, Any], *, started_at: str, finished_at: str, pod_reason: str = "", pod_message: str = ""
) -> dict[str, Any]:
    """Failed before its containers ran (deleted, or past its deadline, while its images could not be pulled):
    as the kubelet's ``TerminatePod`` leaves it, each container terminated with ``ContainerStatusUnknown``, 137."""
    status = terminated_status(
        pod,
        exit_code=137,
        started_at=started_at,
        finished_at=finished_at,
        message=UNKNOWN_CONTAINER_MESSAGE,
        reason="ContainerStatusUnknown",
        pod_reason=pod_reason,
        pod_message=pod_message,
    )
    for container in status["containerStatuses"]:
        container["imageID"] = ""
        container.pop("containerID", None)
        terminated = container["state"]["terminated"]
        for key in ("containerID", "startedAt", "finishedAt"):
            terminated.pop(key, None)
    return status


#: The kubelet's graceful node shutdown (``pkg/kubelet/nodeshutdown``): what it writes on each pod it ends, and
#: on each pod it refuses to admit meanwhile.
SHUTDOWN_REASON = "Terminated"
SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."
SHUTDOWN_REJECTION = Rejection("NodeShutdown", "Pod was rejected as the node is shutting down.")


def shut_down_status(status: dict[str, Any]) -> dict[str, Any]:
    """A terminated pod's ``status`` as the node shutdown manager leaves it: Failed whatever its containers'
    exit, with its reason and message, and the ``DisruptionTarget`` condition (``TerminationByKubelet``) that
    tells a controller the pod's end was not its own doing."""
    at = next(c["lastTransitionTime"] for c in status["conditions"] if c["type"] == "Ready")
    disruption = {
        **_condition("DisruptionTarget", True, at, "TerminationByKubelet"),
        "message": SHUTDOWN_MESSAGE,
    }
    return {
        **status,
        "phase": "Failed",
        "reason": SHUTDOWN_REASON,
        "message": SHUTDOWN_MESSAGE,
        "conditions": [disruption, *status["conditions"]],
    }


def truncate_message(message: str) -> str:
    """Cut to the kubelet's 4096-byte limit without splitting a UTF-8 character."""
    data = message.encode()
    if len(data) <= TERMINATION_MESSAGE_LIMIT:
        return message
    return data[:TERMINATION_MESSAGE_LIMIT].decode(errors="ignore")


def log_fallback(log_tail: bytes) -> str:
    """FallbackToLogsOnError: the last 2048 bytes (at most 80 lines) of the container's log."""
    lines = log_tail.splitlines()[-80:]
    return b"\n".join(lines)[-LOG_FALLBACK_LIMIT:].decode(errors="replace")
