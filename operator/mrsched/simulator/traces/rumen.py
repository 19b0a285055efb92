"""Rumen job traces: Hadoop job histories digested by Rumen's ``TraceBuilder``.

Format (``hadoop-tools/hadoop-rumen`` in apache/hadoop: ``LoggedJob``, ``LoggedTask``, ``LoggedTaskAttempt``;
an example is ``hadoop-tools/hadoop-sls/src/main/data/2jobs2min-rumen-jh.json``, which SLS replays with
``--tracetype=RUMEN``): a file of concatenated JSON objects, one per job. The fields read here:

* job: ``jobID``, ``user``, ``queue``, ``submitTime`` (epoch ms), ``totalMaps``, ``totalReduces``, and the
  task lists ``mapTasks`` and ``reduceTasks`` (``launchTime`` and ``finishTime`` are there too, but unused:
  in a replay, the simulated scheduler decides when a job runs);
* task: ``startTime``/``finishTime`` (ms), ``attempts``, and the byte counters ``inputBytes`` and
  ``outputBytes``. Rumen fills those from the task's counters: for a map, ``HDFS_BYTES_READ`` and
  ``FILE_BYTES_WRITTEN`` (its map output on local disk); for a reduce, ``REDUCE_SHUFFLE_BYTES`` and
  ``HDFS_BYTES_WRITTEN``;
* attempt: ``startTime``/``finishTime`` and ``hdfsBytesWritten``.

Everything else (``jobProperties``, CDFs, resource usage) is ignored. ``-1`` means unknown, throughout.

What a :class:`TraceJob` gets:

* ``submit_s``: ``submitTime`` in seconds after the earliest ``submitTime`` in the file;
* ``maps``/``reduces``: ``totalMaps``/``totalReduces``, or the length of the task list where unknown;
* ``input_bytes``: the sum of the maps' ``inputBytes``;
* ``shuffle_bytes``: the sum of the reduces' ``inputBytes``, or of the maps' ``outputBytes`` when no reduce
  reports it; 0 for a map-only job;
* ``output_bytes``: the sum of the reduces' ``outputBytes``; for a map-only job, which writes its output from
  the maps, the sum of ``hdfsBytesWritten`` over each map's last attempt;
* durations: per task, its last attempt's finish minus start (as SLS replays Rumen traces), else the task's
  own; tasks with neither are left out.

Sums take the tasks whose counter is known and count unknown ones as 0.
"""

from __future__ import annotations

import os

from mrsched.simulator.traces.common import TraceJob, by_submit_time
from mrsched.simulator.traces.jsonrecords import Fields, read_records


def _known_sum(items: list[Fields], key: str) -> tuple[int, bool]:
    values = [v for v in (item.integer(key, -1) for item in items) if v >= 0]
    return sum(values), bool(values)


def _duration_s(task: Fields) -> float | None:
    attempts = task.objects("attempts")
    for source in ([attempts[-1]] if attempts else []) + [task]:
        start, finish = source.integer("startTime", -1), source.integer("finishTime", -1)
        if start >= 0 and finish >= 0:
            if finish < start:
                raise source.error(f"finishTime {finish} is before startTime {start}")
            return (finish - start) / 1000.0
    return None


def _durations(tasks: list[Fields]) -> tuple[float, ...]:
    return tuple(d for d in map(_duration_s, tasks) if d is not None)


def _count(job: Fields, key: str, tasks: list[Fields]) -> int:
    total = job.integer(key, -1)
    return total if total >= 0 else len(tasks)


def _bytes(maps: list[Fields], reduces: list[Fields], n_reduces: int) -> tuple[int, int, int]:
    input_bytes, _ = _known_sum(maps, "inputBytes")
    if n_reduces == 0:
        last_attempts = [attempts[-1] for attempts in (m.objects("attempts") for m in maps) if attempts]
        output_bytes, _ = _known_sum(last_attempts, "hdfsBytesWritten")
        return input_bytes, 0, output_bytes
    shuffle_bytes, known = _known_sum(reduces, "inputBytes")
    if not known:
        shuffle_bytes, _ = _known_sum(maps, "outputBytes")
    output_bytes, _ = _known_sum(reduces, "outputBytes")
    return input_bytes, shuffle_bytes, output_bytes


def _job(record: Fields, submit_s: float) -> TraceJob:
    maps = record.objects("mapTasks")
    reduces = record.objects("reduceTasks")
    n_reduces = _count(record, "totalReduces", reduces)
    input_bytes, shuffle_bytes, output_bytes = _bytes(maps, reduces, n_reduces)
    return TraceJob(
        id=record.text("jobID"),
        submit_s=submit_s,
        input_bytes=input_bytes,
        shuffle_bytes=shuffle_bytes,
        output_bytes=output_bytes,
        maps=_count(record, "totalMaps", maps),
        reduces=n_reduces,
        user=record.text("user", "default"),
        queue=record.text("queue", "default"),
        map_durations_s=_durations(maps),
        reduce_durations_s=_durations(reduces),
    )


def _submit_ms(record: Fields) -> int:
    submit_ms = record.integer("submitTime")
    if submit_ms < 0:
        raise record.error(f"submitTime is unknown ({submit_ms})")
    return submit_ms


def read_rumen(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of a Rumen trace, sorted by submit time (ties in file order); see the module docstring."""
    records = [(_submit_ms(record), record) for record in read_records(path)]
    origin = min((ms for ms, _ in records), default=0)
    return by_submit_time([_job(record, (ms - origin) / 1000.0) for ms, record in records])
