"""Counting what a job has to start and what fits a node: the two counts every policy and the snapshot's
feasibility checks share (re-exported by :mod:`mrsched.core.model`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrsched.core.model import Job, Resources, TaskType

#: The slot cap of a node whose concurrency is by requests and no one capped it: its requests bind first.
UNCAPPED = 1_000_000


def pending_of(job: Job, kind: TaskType) -> int:
    """The tasks of ``kind`` that ``job`` has to start: neither running nor finished (by its counts), and
    reduces only past slow-start (Hadoop's runnable tasks; ``has_pending`` is this being positive)."""
    if kind == "map":
        return max(0, len(job.maps) - job.finished_maps - job.running_maps)
    if not job.reduces_allowed():
        return 0
    return max(0, len(job.reduces) - job.finished_reduces - job.running_reduces)


def pods_that_fit(cpu: float, memory_mb: float, request: Resources) -> int:
    """How many pods of ``request`` fit in ``cpu`` cores and ``memory_mb`` (a little slack for float sums)."""
    by_cpu = math.floor((cpu + 1e-9) / request.cpu) if request.cpu > 0 else UNCAPPED
    by_memory = math.floor((memory_mb + 1e-6) / request.memory_mb) if request.memory_mb > 0 else UNCAPPED
    return max(0, min(by_cpu, by_memory, UNCAPPED))
