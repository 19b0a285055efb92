"""What the emulated kubelet keeps of each pod it admitted (:class:`PodState`), and the kubelet's own rules for
when it acts again on one: activeDeadlineSeconds, the volume manager's mount retries, and the restarts of a
container that ended in a pod whose restartPolicy restarts it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mrsched.emulator.images import PodPulls
from mrsched.emulator.podstatus import Requests

#: The kubelet's words for a pod killed at its activeDeadlineSeconds (``pkg/kubelet/active_deadline.go``).
DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
#: ``spec.terminationGracePeriodSeconds`` when the pod does not say (the API server's default).
DEFAULT_GRACE_S = 30.0
#: The volume manager's back-off after a failed mount: 500 ms, doubling to 2 min 2 s
#: (``pkg/volume/util/nestedpendingoperations``: initialDurationBeforeRetry, maxDurationBeforeRetry).
MOUNT_RETRY_FIRST_S = 0.5
MOUNT_RETRY_MAX_S = 122.0
#: The kubelet's back-off before it restarts a container that ended in a restartPolicy Always (or OnFailure)
#: pod: 10 s, doubling to 5 min (``pkg/kubelet``: backOffPeriod, MaxContainerBackOff); a container that ran
#: 10 min starts again from 10 s (the back-off's entry is dropped after twice its cap).
RESTART_BACKOFF_FIRST_S = 10.0
RESTART_BACKOFF_MAX_S = 300.0
RESTART_BACKOFF_RESET_S = 600.0


@dataclass
class PodState:
    """One admitted (or rejected) pod, as long as the pod exists: what its next status write needs."""

    uid: str
    node: str
    requests: Requests
    started_at: str = ""  # status.startTime: when the kubelet admitted it
    admitted: float = 0.0  # the same, monotonic
    pod_ip: str = ""
    ran_at: str = ""  # when its containers started (later than started_at if its images had to be pulled)
    running: bool = False  # its task was started
    done: bool = False
    deadline: float = math.inf  # monotonic: activeDeadlineSeconds after admission
    deadline_exceeded: bool = False
    shut_down: bool = False  # ended by its node's graceful shutdown
    pulls: PodPulls | None = None  # while its containers wait for their images
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)  # what its last waiting status said
    sync_at: float = math.inf  # monotonic: its pod worker's next sync while it waits (a pull or mount retry)
    mount_backoff_s: float = 0.0  # the wait before its volumes' next mount, once one failed
    ran_since: float = 0.0  # monotonic: when its containers last started
    restarts: int = 0  # its containers' restartCount
    last_terminated: dict[str, Any] | None = None  # how their previous run ended, once restarted
    restart_backoff_s: float = 0.0

    def next_mount_backoff(self) -> float:
        """The wait before the next mount, after one more failed."""
        return min(2 * self.mount_backoff_s or MOUNT_RETRY_FIRST_S, MOUNT_RETRY_MAX_S)

    def next_restart_backoff(self, now: float) -> float:
        """The wait before the container starts again, after it ended once more at ``now`` (monotonic)."""
        if not self.restart_backoff_s or now - self.ran_since >= RESTART_BACKOFF_RESET_S:
            return RESTART_BACKOFF_FIRST_S
        return min(2 * self.restart_backoff_s, RESTART_BACKOFF_MAX_S)


def pod_address(subnet: int, n: int) -> str:
    """The ``n``-th pod IP of an emulator (``subnet``: its own, 2-254): 10.<subnet>.x.y, outside the loopback
    range, which EndpointSlices refuse (so a Service's endpoints can name the pod, as in a cluster)."""
    return f"10.{subnet}.{(n // 254) % 256}.{n % 254 + 1}"


def loopback_twin(pod_ip: str) -> str:
    """Where a pod's processes listen on this machine for its pod IP (10.a.b.c -> 127.a.b.c): pods here share
    the machine's network, so each binds a loopback address of its own for what it would bind in its network
    namespace; whoever reaches the pod by its IP here (a test, a local Prometheus) goes there."""
    return "127." + pod_ip.split(".", 1)[1]


def restarts_after(pod: dict[str, Any], exit_code: int) -> bool:
    """Whether the kubelet starts the pod's container again after it exited with ``exit_code``."""
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def deadline_why(state: PodState) -> dict[str, str]:
    """The pod-level reason and message of a pod the kubelet killed at its deadline."""
    return {"pod_reason": DEADLINE_REASON, "pod_message": DEADLINE_MESSAGE} if state.deadline_exceeded else {}


def deadline_at(pod: dict[str, Any], admitted: float) -> float:
    seconds = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return math.inf if seconds is None else admitted + float(seconds)
