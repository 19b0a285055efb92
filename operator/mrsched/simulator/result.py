"""What a simulation run produces: per-job records and the run's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The policies that keep to the nodes' map slots, which the slot bound holds for: Hadoop's baselines, the
#: slot policies composed on Fair (coupling, lsps), ThroughputScheduler and greedy-informed. Not kube-default
#: (pod requests), adaptive-slots, learning, dara and diagnosis, which decide a node's concurrency themselves.
#: A variant with its own cluster override (``fair:slots3``) runs on other slots.
SLOT_KEEPERS = ("fifo", "fair", "capacity", "throughput", "coupling", "lsps", "greedy-informed")


@dataclass
class JobRecord:
    id: str
    user: str
    app: str
    submit_s: float
    start_s: float | None = None
    finish_s: float | None = None
    failed: bool = False
    maps: int = 0
    reduces: int = 0
    starvation_s: float = 0.0  # seed 003 §III: mean wait of reduces started after the last map finished
    #: Seconds the job's reduces held their slots before its last map finished (seed 003 §I: idle reduces).
    reduce_idle_s: float = 0.0
    #: Summed duration of the job's task attempts (start to end): ÷ its run time is its mean concurrent
    #: tasks (seed 000 Fig 11 compares them per node).
    task_s: float = 0.0


@dataclass
class SimulationResult:
    policy: str
    seed: int
    jobs: list[JobRecord]
    makespan_s: float
    locality: dict[str, int]
    utilisation: dict[str, list[tuple[float, float]]]  # node -> [(time, busy cores / cores)]
    throughput: float  # seed 002 Eq 4.4 over the whole run: work (isolated task time) done per second
    events: int
    tasks_started: int
    tasks_failed: int
    extra: dict[str, Any] = field(default_factory=dict)
    #: Successful map attempts' durations (start to finish, seconds) by app and by node class: seed 002
    #: Table 3.3's "average mapping time" per application.
    map_times: dict[str, dict[str, list[float]]] = field(default_factory=dict)
