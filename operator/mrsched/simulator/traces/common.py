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

Users (:func:`assign_users`)
----------------------------
SWIM traces record no users, and every job of an SLS or Rumen trace without one is the ``default`` user's.
Policies with per-user shares (Fair's pools, LsPS) need users, so a scenario can give every job one of
``count`` users, ``user-0`` ... ``user-<count-1>``, by one of two rules:

* ``hash``: ``user-k`` with ``k = blake2b(job id, 8-byte digest) mod count`` (the digest read big-endian).
  Independent of the job's size and stable across runs, machines and Python versions (unlike ``hash()``):
  every user submits a sample of the whole job mix, and the users differ only by chance.
* ``size``: ``user-k`` with ``k`` the job's band of map input bytes, ``user-0`` the smallest jobs. The band
  edges are the ``i/count`` quantiles (``i = 1 .. count-1``) of the input bytes of the jobs given, by nearest
  rank without interpolation (edge ``i`` = the input of the job at 0-based rank ``floor(i * n / count)`` in
  ascending order); a job belongs to band ``k`` = the number of edges at or below its input. Each band holds
  about ``n / count`` jobs; jobs of equal size always share a band, so when many jobs have one size (SWIM's
  tiny jobs) a band can be empty and its user submits nothing. A band stands for a team whose jobs are alike
  (interactive queries on a few kB, hourly ETL on GBs, daily batch on TBs), so the users differ in job size
  as LsPS (seed 004) assumes.

Both rules replace any user the trace records. Apply them to the whole trace, before
:func:`scale_down`: dividing sizes keeps their order, and cutting to ``max_jobs`` then keeps each job's user.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

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
    #: Each container's host as the trace names it ("" for none), in file order, when the trace records them (SLS).
    map_hosts: tuple[str, ...] = ()
    reduce_hosts: tuple[str, ...] = ()

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


UserRule = Literal["hash", "size"]
USER_RULES: tuple[UserRule, ...] = ("hash", "size")


def hash_user_index(job_id: str, count: int) -> int:
    """The ``hash`` rule: ``blake2b(job_id)`` (8-byte digest, big-endian) mod ``count``."""
    digest = hashlib.blake2b(job_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def size_band_edges(input_bytes: Iterable[int], count: int) -> list[int]:
    """The ``size`` rule's ``count - 1`` band edges: the ``i/count`` nearest-rank quantiles of ``input_bytes``
    (the value at 0-based rank ``floor(i * n / count)`` in ascending order). Empty when there are no sizes."""
    ordered = sorted(input_bytes)
    if not ordered:
        return []
    return [ordered[i * len(ordered) // count] for i in range(1, count)]


def assign_users(jobs: Iterable[TraceJob], rule: UserRule, count: int) -> list[TraceJob]:
    """``jobs`` in the same order, each given user ``user-<k>`` by ``rule`` (``hash`` or ``size``) among
    ``count`` users; see this module's docstring."""
    if count < 1:
        raise ValueError("count must be at least 1")
    listed = list(jobs)
    if rule == "hash":
        return [replace(j, user=f"user-{hash_user_index(j.id, count)}") for j in listed]
    if rule == "size":
        edges = size_band_edges((j.input_bytes for j in listed), count)
        return [replace(j, user=f"user-{bisect.bisect_right(edges, j.input_bytes)}") for j in listed]
    valid = ", ".join(repr(name) for name in USER_RULES)
    raise ValueError(f"unknown user rule {rule!r}: valid rules are {valid}")


def by_submit_time(jobs: list[TraceJob]) -> list[TraceJob]:
    """``jobs`` sorted by submit time, ties in file order (what every reader returns)."""
    return sorted(jobs, key=lambda j: j.submit_s)
