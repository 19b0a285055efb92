"""What the node model reports: a finished task's usage (:class:`TaskUsage`) and run (:class:`RunOutcome`),
and the node's cumulative counters (:class:`NodeCounters`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TaskUsage:
    """What a finished task consumed, in the units of the worker's usage report."""

    cpu_s: float = 0.0
    read_bytes: int = 0
    written_bytes: int = 0
    network_bytes: int = 0
    peak_memory_mb: float = 0.0


@dataclass
class RunOutcome:
    """How one task's run on a :class:`~mrsched.core.physics.NodeModel` ended: its start and finish in model
    seconds, what it consumed, and whether the OOM killer ended it (what the policies learn from is
    :class:`mrsched.core.model.TaskOutcome`, which the simulator builds from it)."""

    task_id: str
    started_s: float
    finished_s: float
    usage: TaskUsage
    oom_killed: bool = False

    @property
    def duration_s(self) -> float:
        return self.finished_s - self.started_s


@dataclass
class NodeCounters:
    """Cumulative node-level counters, with node_exporter's meaning (seconds of CPU per mode, bytes)."""

    cpu_busy_s: float = 0.0  # user + system time of tasks and hogs, summed over cores
    cpu_iowait_s: float = 0.0  # idle cores while disk streams wait
    disk_read_bytes: float = 0.0
    disk_written_bytes: float = 0.0
    network_receive_bytes: float = 0.0
    network_transmit_bytes: float = 0.0
