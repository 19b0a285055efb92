"""A running task's phases (the resources it uses one after another) and the node's sharing rates: the fluid
model's internal state (:mod:`mrsched.core.physics.fluid_model`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from mrsched.core.physics.outcomes import TaskUsage
from mrsched.core.physics.parameters import TaskDemand


class Phase(Enum):
    """The resources a task uses one after another (seed 002 Eq 3.1's assumption)."""

    OVERHEAD = "overhead"
    NETWORK = "network"
    WAIT = "wait"
    CPU = "cpu"
    DISK = "disk"
    TRANSMIT = "transmit"


_PHASE_ORDER = (Phase.OVERHEAD, Phase.NETWORK, Phase.WAIT, Phase.CPU, Phase.DISK, Phase.TRANSMIT)
_OVERHEAD, _NETWORK, _WAIT, _CPU, _DISK, _TRANSMIT = range(6)


@dataclass(slots=True)
class _Running:
    task_id: str
    demand: TaskDemand  # already scaled by the task's noise factor
    started_s: float
    phase_index: int = 0
    remaining: float = 0.0  # seconds (overhead) or work units of the current phase
    work: float = 0.0  # the current phase's whole work (the tolerance an integration step snaps within)
    startup_s: float = 0.0  # its start-up Ω as drawn (noise and straggler factor included)
    usage: TaskUsage = field(default_factory=TaskUsage)
    #: NIC work added while it ran (NodeModel.add_network), beside the demand's own: kept apart so that a
    #: shuffle's every extension does not rebuild its frozen demand.
    added_network_mb: float = 0.0

    @property
    def phase(self) -> Phase:
        return _PHASE_ORDER[self.phase_index]


@dataclass(slots=True)
class _Rates:
    """A node's sharing until its next change: per phase, the progress per second of a task in it."""

    of_phase: tuple[float, ...]  # indexed like _PHASE_ORDER; a CPU-phase task of t threads progresses t times
    threaded: bool  # some CPU-phase task has more than one thread
    busy_cores: float
    cpu_share: float  # fraction of a core each CPU consumer holds
    disk_streams: float

    def of(self, task: _Running) -> float:
        """The progress per second of ``task``'s current phase."""
        rate = self.of_phase[task.phase_index]
        if self.threaded and task.phase_index == _CPU:  # each of its threads holds its share of a core
            rate *= task.demand.threads
        return rate
