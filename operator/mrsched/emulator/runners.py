"""How the emulator runs a pod's task: the protocol, and model mode against the hidden physics model.

Both runners (this module's :class:`ModelRunner`, :class:`mrsched.emulator.processes.ProcessRunner`) have the
same shape: ``start`` a pod's task on a node, ``kill`` it (the pod is gone: nothing to report) or
``terminate`` it (the kubelet killed a container whose pod lives on: its exit is reported), ``poll`` for the
tasks that ended, say when the next one is due (``next_deadline``) and report the node's usage for its metrics.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from mrsched.core.physics import Fault, NodeCapability, NodeModel, TaskUsage
from mrsched.core.report import TaskReport
from mrsched.emulator.workload import WorkloadError, container_env, demand_from_env

#: Exit code of a task stopped by SIGTERM (128 + 15, as container runtimes report it): the worker catches the
#: signal, writes its report and exits with it.
SIGTERM_EXIT_CODE = 143
#: What the worker's report says when SIGTERM stopped it (``mrworker.cli``).
SIGTERM_ERROR = "terminated by SIGTERM before the task finished"


@dataclass(frozen=True)
class TaskExit:
    """A task that ended: what the kubelet would write into the container's terminated state."""

    pod_key: str
    exit_code: int
    message: str = ""
    reason: str | None = None  # None: the kubelet's default (Completed or Error)
    started_wall: float = 0.0
    finished_wall: float = 0.0


@dataclass
class NodeUsage:
    """Cumulative counters for one node in wall-clock seconds and bytes, as node_exporter reports them."""

    cpu_busy_s: float = 0.0
    cpu_iowait_s: float = 0.0
    disk_read_bytes: float = 0.0
    disk_written_bytes: float = 0.0
    network_receive_bytes: float = 0.0
    network_transmit_bytes: float = 0.0
    runnable: float = 0.0  # threads running or waiting now (what the load average averages)
    memory_used_bytes: float = 0.0


class TaskRunner(Protocol):
    def mount(self, pod_key: str, pod: dict[str, Any]) -> str | None:
        """Set up the pod's volumes before its containers start, as the kubelet's volume manager does: None once
        they are ready, else why not (the pod then waits in ContainerCreating and the kubelet tries again)."""
        ...

    def start(
        self,
        pod_key: str,
        node: str,
        pod: dict[str, Any],
        *,
        shuffle_from: Mapping[str, float] | None = None,
        waited_s: float = 0.0,
        address: str = "",
    ) -> None:
        """Start the pod's task; a reduce that waited ``waited_s`` wall seconds for its job's maps fetches its
        shuffle from ``shuffle_from`` (map output by node; model mode only); ``address``: the loopback address that
        stands for the pod's IP here, which its processes bind for the wildcard address (process mode only)."""
        ...

    def kill(self, pod_key: str) -> None: ...

    def terminate(self, pod_key: str, grace_s: float) -> bool:
        """Stop the task as the kubelet stops a container it kills while the pod stays (activeDeadlineSeconds):
        SIGTERM, SIGKILL after ``grace_s``; its exit comes through :meth:`poll`. False if it was not running."""
        ...

    def poll(self) -> list[TaskExit]: ...
    def next_deadline(self) -> float: ...
    def usage(self, node: str) -> NodeUsage: ...
    def remove_node(self, node: str) -> list[str]: ...
    def close(self) -> None: ...


class ModelRunner:
    """Model mode: task durations from the per-node physics (``mrsched.core.physics``), never from the pod.

    ``time_scale`` model seconds pass per wall second, so a 60 s task with time_scale 10 takes 6 s of wall
    time; usage counters are reported in wall time so that rates read from Prometheus stay consistent.
    """

    def __init__(
        self,
        capabilities: dict[str, NodeCapability],
        *,
        seed: int = 0,
        time_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self._clock = clock
        self._origin = clock()
        self.time_scale = time_scale
        self._models = {name: NodeModel(name, cap, seed=seed) for name, cap in capabilities.items()}
        self._node_of: dict[str, str] = {}  # pod key -> node, for modelled tasks
        self._forever: dict[str, str] = {}  # pod key -> node, for pods without finite work
        self._immediate: list[TaskExit] = []
        self._started_wall: dict[str, float] = {}
        self._waited: dict[str, float] = {}  # pod key -> wall seconds a reduce waited for its maps
        self._lock = threading.Lock()

    def model_now(self) -> float:
        return (self._clock() - self._origin) * self.time_scale

    def _wall(self, model_s: float) -> float:
        return self._origin + model_s / self.time_scale

    def mount(self, pod_key: str, pod: dict[str, Any]) -> str | None:
        return None  # the model runs no process: nothing of the pod's is read

    def start(
        self,
        pod_key: str,
        node: str,
        pod: dict[str, Any],
        *,
        shuffle_from: Mapping[str, float] | None = None,
        waited_s: float = 0.0,
        address: str = "",
    ) -> None:
        with self._lock:
            now_wall = self._clock()
            self._started_wall[pod_key] = now_wall
            if waited_s > 0:
                self._waited[pod_key] = waited_s
            try:
                demand = demand_from_env(container_env(pod), node, shuffle_from)
            except WorkloadError as err:
                report = TaskReport("failed", error=str(err))
                self._immediate.append(TaskExit(pod_key, 2, report.to_json(), None, now_wall, now_wall))
                return
            if demand is None:
                self._forever[pod_key] = node
                return
            self._node_of[pod_key] = node
            self._models[node].start(pod_key, demand, self.model_now())

    def kill(self, pod_key: str) -> None:
        with self._lock:
            self._forever.pop(pod_key, None)
            self._started_wall.pop(pod_key, None)
            self._waited.pop(pod_key, None)
            node = self._node_of.pop(pod_key, None)
            if node is not None:
                self._models[node].stop(pod_key, self.model_now())

    def terminate(self, pod_key: str, grace_s: float) -> bool:
        """The modelled worker catches SIGTERM at once (well inside any grace period): it reports what it did so
        far, as failed, and exits 143."""
        with self._lock:
            started = self._started_wall.pop(pod_key, None)
            if started is None:
                return False
            now_wall = self._clock()
            waited = self._waited.pop(pod_key, 0.0)
            self._forever.pop(pod_key, None)
            node = self._node_of.pop(pod_key, None)
            stopped = self._models[node].stop(pod_key, self.model_now()) if node is not None else None
            usage = stopped or TaskUsage()
            report = TaskReport(
                "failed",
                cpu_user_s=usage.cpu_s * 0.9,
                cpu_system_s=usage.cpu_s * 0.1,
                read_bytes=usage.read_bytes,
                written_bytes=usage.written_bytes,
                network_bytes=usage.network_bytes,
                peak_memory_bytes=int(usage.peak_memory_mb * 1e6),
                wall_s=(now_wall - started + waited) * self.time_scale,
                error=SIGTERM_ERROR,
            )
            self._immediate.append(
                TaskExit(pod_key, SIGTERM_EXIT_CODE, report.to_json(), None, started, now_wall)
            )
            return True

    def poll(self) -> list[TaskExit]:
        with self._lock:
            exits, self._immediate = self._immediate, []
            now = self.model_now()
            for model in self._models.values():
                model.advance(now)
                for outcome in model.pop_finished():
                    if self._node_of.pop(outcome.task_id, None) is None:
                        continue  # killed meanwhile
                    usage = outcome.usage
                    # The worker's clock runs from its start, so a reduce's includes its wait for the maps.
                    waited = self._waited.pop(outcome.task_id, 0.0) * self.time_scale
                    report = TaskReport(
                        "failed" if outcome.oom_killed else "succeeded",
                        cpu_user_s=usage.cpu_s * 0.9,
                        cpu_system_s=usage.cpu_s * 0.1,
                        read_bytes=usage.read_bytes,
                        written_bytes=usage.written_bytes,
                        network_bytes=usage.network_bytes,
                        peak_memory_bytes=int(usage.peak_memory_mb * 1e6),
                        wall_s=outcome.duration_s + waited,
                        error="killed: out of memory" if outcome.oom_killed else "",
                    )
                    exits.append(
                        TaskExit(
                            outcome.task_id,
                            137 if outcome.oom_killed else 0,
                            report.to_json(),
                            "OOMKilled" if outcome.oom_killed else None,
                            self._started_wall.pop(outcome.task_id, self._wall(outcome.started_s)),
                            self._wall(outcome.finished_s),
                        )
                    )
            return exits

    def next_deadline(self) -> float:
        with self._lock:
            if self._immediate:
                return self._clock()
            soonest = min((m.next_event_s() for m in self._models.values()), default=math.inf)
            return self._wall(soonest) if soonest < math.inf else math.inf

    def add_fault(self, node: str, fault: Fault) -> None:
        """Inject a fault; ``fault.start_s`` and ``end_s`` are model seconds from now."""
        with self._lock:
            now = self.model_now()
            model = self._models[node]
            model.advance(now)
            end = None if fault.end_s is None else now + fault.end_s
            model.add_fault(replace(fault, start_s=now + fault.start_s, end_s=end))

    def clear_faults(self, node: str) -> None:
        with self._lock:
            self._models[node].clear_faults(self.model_now())

    def faults(self, node: str) -> list[Fault]:
        with self._lock:
            return list(self._models[node].faults)

    def usage(self, node: str) -> NodeUsage:
        with self._lock:
            model = self._models[node]
            model.advance(self.model_now())
            c = model.counters
            scale = self.time_scale
            return NodeUsage(
                cpu_busy_s=c.cpu_busy_s / scale,
                cpu_iowait_s=c.cpu_iowait_s / scale,
                disk_read_bytes=c.disk_read_bytes,
                disk_written_bytes=c.disk_written_bytes,
                network_receive_bytes=c.network_receive_bytes,
                network_transmit_bytes=c.network_transmit_bytes,
                runnable=model.runnable(),
                memory_used_bytes=model.memory_used_mb() * 1e6,
            )

    def remove_node(self, node: str) -> list[str]:
        with self._lock:
            gone = [k for k, n in {**self._node_of, **self._forever}.items() if n == node]
            for key in gone:
                self._node_of.pop(key, None)
                self._forever.pop(key, None)
                self._started_wall.pop(key, None)
                self._waited.pop(key, None)
            now = self.model_now()
            for key in self._models[node].running_ids:
                self._models[node].stop(key, now)
            return gone

    def close(self) -> None:
        pass
