"""Readers for public MapReduce workload traces, for the simulator to replay.

* ``swim``: SWIM's Facebook 2009/2010 day-long samples (tab-separated bytes per job): :func:`read_swim`;
* ``sls``: Hadoop's Scheduler Load Simulator job traces (concatenated JSON, tasks with durations):
  :func:`read_sls`;
* ``rumen``: Hadoop Rumen job traces (concatenated JSON, tasks with durations and bytes): :func:`read_rumen`.

Every reader returns :class:`TraceJob` values sorted by submit time; :func:`task_counts` turns bytes into
task counts by the documented rule, :func:`assign_users` gives the jobs users by a documented rule (for
traces without users), :func:`scale_down` fits a trace to a small cluster, and malformed input raises
:class:`TraceError` naming the file and the line or record. Pure Python, no cluster dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from mrsched.simulator.traces.common import (
    USER_RULES,
    TraceError,
    TraceJob,
    assign_users,
    scale_down,
    task_counts,
)
from mrsched.simulator.traces.rumen import read_rumen
from mrsched.simulator.traces.sls import read_sls
from mrsched.simulator.traces.swim import read_swim, read_swim_gaps

READERS: dict[str, Callable[[str | os.PathLike[str]], list[TraceJob]]] = {
    "swim": read_swim,
    "sls": read_sls,
    "rumen": read_rumen,
}


def read_trace(format: str, path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of the trace at ``path`` in ``format`` (``swim``, ``sls`` or ``rumen``)."""
    reader = READERS.get(format)
    if reader is None:
        valid = ", ".join(repr(name) for name in READERS)
        raise ValueError(f"unknown trace format {format!r}: valid formats are {valid}")
    return reader(path)


__all__ = [
    "READERS",
    "USER_RULES",
    "TraceError",
    "TraceJob",
    "assign_users",
    "read_rumen",
    "read_sls",
    "read_swim",
    "read_swim_gaps",
    "read_trace",
    "scale_down",
    "task_counts",
]
