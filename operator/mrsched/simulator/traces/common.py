"""What every trace reader returns, the rule from bytes to task counts, and scaling a trace down.

A :class:`TraceJob` is one job of a trace, whatever the format: when it was submitted (seconds from the start
of the trace), how many bytes it reads, shuffles and writes, and, where the format records them, its task
counts and task durations. SWIM traces carry bytes only, SLS traces carry tasks and durations only, Rumen
traces carry both.

Bytes to task counts (:func:`task_counts`)
------------------------------------------
When a trace gives no task counts, they follow from the bytes, as Hadoop itself would derive them with one
input split per HDFS block and a fixed amount of shuffle data per reducer:

* ``maps = max(1, ceil(input_bytes / (block_mb MiB)))``: one map per block of input, at least one (a job
  with no input still runs one map). ``block_mb`` defaults to 128, the HDFS block size since Hadoop 2.
* ``reduces = 0`` if ``shuffle_bytes == 0`` (a map-only job), else ``max(1, ceil(shuffle_bytes /
  (reduce_mb MiB)))``: one reduce per ``reduce_mb`` (default 1024) of map output read by the reduces.

Both sizes are configurable; 1 MiB is 2**20 bytes. A count the trace gives is used as it is, except that a
job always has at least one map.

Scaling down (:func:`scale_down`)
---------------------------------
A day-long trace from a 600- or 3,000-machine cluster is too large for a small simulated cluster.
``scale_down`` divides every submit time by ``time_scale`` and every byte size by ``size_scale``: every job
by the same factor, so the shape of the job-size distribution (most jobs small, a heavy tail of large ones)
and the ratios between jobs are kept. Task counts and durations that the trace records are kept as they are.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace

MIB = 1 << 20


class TraceError(ValueError):
    """A trace file that does not follow its format; names the file and where in it the problem is."""

    def __init__(self, path: str | os.PathLike[str], where: str, message: str) -> None:
        self.path = os.fspath(path)
        self.where = where
        self.message = message
        super().__init__(f"{self.path}: {where}: {message}")

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, str, str]]:
        return (TraceError, (self.path, self.where, self.message))


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace. ``submit_s`` is seconds from the start of the trace; bytes are whole bytes;
    ``maps``/``reduces`` are ``None`` when the trace does not record them (see :func:`task_counts`)."""

    id: str
    submit_s: float
    input_bytes: int
    shuffle_bytes: int
    output_bytes: int
    maps: int | None = None
    reduces: int | None = None
    user: str = "default"
    queue: str = "default"
    map_durations_s: tuple[float, ...] = ()
    reduce_durations_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.input_bytes < 0 or self.shuffle_bytes < 0 or self.output_bytes < 0:
            raise ValueError(f"job {self.id}: byte sizes cannot be negative")
        if (self.maps is not None and self.maps < 0) or (self.reduces is not None and self.reduces < 0):
            raise ValueError(f"job {self.id}: task counts cannot be negative")


def task_counts(job: TraceJob, block_mb: float = 128.0, reduce_mb: float = 1024.0) -> tuple[int, int]:
    """``(maps, reduces)`` for ``job``: the trace's own counts where it gives them, else the rule in this
    module's docstring (one map per ``block_mb`` MiB of input, one reduce per ``reduce_mb`` MiB shuffled)."""
    if block_mb <= 0 or reduce_mb <= 0:
        raise ValueError("block_mb and reduce_mb must be positive")
    maps = max(1, job.maps if job.maps is not None else math.ceil(job.input_bytes / (block_mb * MIB)))
    if job.reduces is not None:
        reduces = job.reduces
    elif job.shuffle_bytes == 0:
        reduces = 0
    else:
        reduces = max(1, math.ceil(job.shuffle_bytes / (reduce_mb * MIB)))
    return maps, reduces


def _scaled(size: int, size_scale: float) -> int:
    return 0 if size == 0 else max(1, round(size / size_scale))


def scale_down(
    jobs: Iterable[TraceJob],
    *,
    time_scale: float = 1.0,
    size_scale: float = 1.0,
    max_jobs: int | None = None,
) -> list[TraceJob]:
    """The first ``max_jobs`` jobs in submission order, with submit times divided by ``time_scale`` and
    shifted so that the first job submits at 0, and byte sizes divided by ``size_scale`` (rounded; a
    non-zero size stays at least 1 byte). Sorted by submit time, ties kept in their input order."""
    if time_scale <= 0 or size_scale <= 0:
        raise ValueError("time_scale and size_scale must be positive")
    if max_jobs is not None and max_jobs < 0:
        raise ValueError("max_jobs cannot be negative")
    ordered = sorted(jobs, key=lambda j: j.submit_s)
    if max_jobs is not None:
        ordered = ordered[:max_jobs]
    if not ordered:
        return []
    origin = ordered[0].submit_s
    return [
        replace(
            j,
            submit_s=(j.submit_s - origin) / time_scale,
            input_bytes=_scaled(j.input_bytes, size_scale),
            shuffle_bytes=_scaled(j.shuffle_bytes, size_scale),
            output_bytes=_scaled(j.output_bytes, size_scale),
        )
        for j in ordered
    ]


def by_submit_time(jobs: list[TraceJob]) -> list[TraceJob]:
    """``jobs`` sorted by submit time, ties in file order (what every reader returns)."""
    return sorted(jobs, key=lambda j: j.submit_s)
