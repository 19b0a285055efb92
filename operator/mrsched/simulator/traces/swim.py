"""SWIM workload traces: the day-long samples of Facebook's Hadoop job histories.

SWIM (Statistical Workload Injector for MapReduce, UC Berkeley; Chen, Ganapathi, Griffith and Katz, "The
Case for Evaluating MapReduce Performance Using Workload Suites", MASCOTS 2011) ships synthetic workloads
sampled from Facebook's 2009 and 2010 traces in its ``workloadSuite/`` folder, for example
``FB-2009_samples_24_times_1hr_0.tsv``. The copies this project uses, and their description, are in
``bench/data/traces/swim/`` of the repository (see its README).

Format: one job per line, tab-separated, no header, six columns:

1. job name (``job0``, ``job1``, ...)
2. submit time, seconds from the start of the trace
3. gap to the previous job's submission, seconds
4. map input bytes
5. shuffle bytes (map output read by the reduces)
6. reduce output bytes

The trace has no task counts, durations, users or queues: :func:`read_swim` leaves ``maps``/``reduces`` as
``None`` for :func:`~mrsched.simulator.traces.common.task_counts` to derive from the bytes, and puts every
job in the ``default`` queue of the ``default`` user (a scenario's ``trace.users`` rule gives them users:
:func:`~mrsched.simulator.traces.common.assign_users`). Blank lines are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from mrsched.simulator.traces.common import TraceError, TraceJob, by_submit_time

COLUMNS = 6


def _rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    with Path(path).open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if line.isspace():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != COLUMNS:
                raise TraceError(
                    path, f"line {number}", f"expected {COLUMNS} tab-separated columns, found {len(fields)}"
                )
            yield number, fields


def _seconds(path: str | os.PathLike[str], number: int, column: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise TraceError(
            path, f"line {number}", f"{column} must be a number of seconds, not {value!r}"
        ) from None
    if not seconds >= 0:  # also rejects NaN
        raise TraceError(path, f"line {number}", f"{column} cannot be negative: {value!r}")
    return seconds


def _bytes(path: str | os.PathLike[str], number: int, column: str, value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        raise TraceError(
            path, f"line {number}", f"{column} must be a whole number of bytes, not {value!r}"
        ) from None
    if size < 0:
        raise TraceError(path, f"line {number}", f"{column} cannot be negative: {value!r}")
    return size


def read_swim(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of a SWIM ``.tsv`` trace, sorted by submit time (the files are already in that order)."""
    jobs = []
    for number, (name, submit, _gap, input_b, shuffle_b, output_b) in _rows(path):
        jobs.append(
            TraceJob(
                id=name,
                submit_s=_seconds(path, number, "submit time", submit),
                input_bytes=_bytes(path, number, "input bytes", input_b),
                shuffle_bytes=_bytes(path, number, "shuffle bytes", shuffle_b),
                output_bytes=_bytes(path, number, "output bytes", output_b),
            )
        )
    return by_submit_time(jobs)


def read_swim_gaps(path: str | os.PathLike[str]) -> list[float]:
    """Column 3 of a SWIM trace, in file order: the gaps in seconds between consecutive submissions."""
    return [_seconds(path, number, "gap", fields[2]) for number, fields in _rows(path)]
