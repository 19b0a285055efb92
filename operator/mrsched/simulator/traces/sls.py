"""SLS job traces: the native input of Hadoop YARN's Scheduler Load Simulator.

Format (``hadoop-tools/hadoop-sls`` in apache/hadoop: ``SchedulerLoadSimulator.md``, "SLS JSON input file
format"; parsed by ``AMRunner``, ``AMDefinitionSLS`` and ``TaskContainerDefinition``): a file of
concatenated JSON objects, not an array, one per job (``rumen2sls.sh`` writes them from a Rumen trace)::

    {
      "am.type" : "mapreduce",          // optional, default "mapreduce"
      "job.start.ms" : 0,               // submission, ms from the start of the simulation
      "job.end.ms" : 95375,             // optional
      "job.queue.name" : "sls_queue_1",
      "job.id" : "job_1",               // optional
      "job.user" : "default",           // optional, default "default"
      "job.count" : 1,                  // optional: this many identical jobs
      "job.tasks" : [ {
        "count" : 1,                    // optional: this many identical containers
        "container.host" : "/default-rack/node1",
        "container.start.ms" : 6664,
        "container.end.ms" : 23707,
        "container.duration.ms" : 17043, // optional, or legacy "duration.ms"; else end - start
        "container.priority" : 20,
        "container.type" : "map"        // "map" or "reduce", default "map"
      }, ... ]
    }

Newer SLS versions accept a first object such as ``{"num.nodes": 3, "num.racks": 1}`` describing the cluster;
it is skipped. Like SLS, a task's duration is ``container.duration.ms``, else ``duration.ms``, else end minus
start, and must be positive; a job of ``job.count`` > 1, or without ``job.id``, gets SLS's id, the zero-based
number of the job in the file. Only ``mapreduce`` jobs are read: other AM types are not MapReduce jobs.

The trace carries no bytes at all: every :class:`TraceJob` has ``input_bytes``, ``shuffle_bytes`` and
``output_bytes`` of 0, and its work is in its task counts and ``map_durations_s``/``reduce_durations_s``
(container durations in seconds, in file order, one per container), with each container's host
(``map_hosts``/``reduce_hosts``: the host part of ``container.host``, "" for a container without one; empty
when no container of the job names a host), which YARN mode asks for as SLS's AM does.
"""

from __future__ import annotations

import os

from mrsched.simulator.traces.common import TraceJob, by_submit_time
from mrsched.simulator.traces.jsonrecords import Fields, read_records

CLUSTER_KEYS = frozenset({"num.nodes", "num.racks"})


def _is_cluster_header(record: Fields) -> bool:
    return bool(record.data) and set(record.data) <= CLUSTER_KEYS


def _duration_ms(task: Fields) -> int:
    if task.has("container.duration.ms"):
        duration = task.integer("container.duration.ms")
    elif task.has("duration.ms"):
        duration = task.integer("duration.ms")
    elif task.has("container.start.ms") and task.has("container.end.ms"):
        duration = task.integer("container.end.ms") - task.integer("container.start.ms")
    else:
        raise task.error("a task needs container.duration.ms, or container.start.ms and container.end.ms")
    if duration <= 0:
        raise task.error(f"task duration must be positive, not {duration} ms")
    return duration


def _host(task: Fields) -> str:
    """The host part of a container's ``container.host`` ("/rack/host", as SLSUtils.getRackHostName splits it),
    or "" when it names none."""
    return task.text("container.host", "").rstrip("/").rsplit("/", 1)[-1]


def _tasks(job: Fields) -> tuple[list[float], list[float], list[str], list[str]]:
    tasks = job.objects("job.tasks")
    if not tasks:
        raise job.error("a job needs at least one task in job.tasks")
    maps: list[float] = []
    reduces: list[float] = []
    hosts: dict[str, list[str]] = {"map": [], "reduce": []}
    for task in tasks:
        kind = task.text("container.type", "map")
        if kind not in ("map", "reduce"):
            raise task.error(f"container.type must be 'map' or 'reduce', not {kind!r}")
        count = max(1, task.integer("count", 1))
        (maps if kind == "map" else reduces).extend([_duration_ms(task) / 1000.0] * count)
        hosts[kind].extend([_host(task)] * count)
    return maps, reduces, hosts["map"], hosts["reduce"]


def read_sls(path: str | os.PathLike[str]) -> list[TraceJob]:
    """The jobs of an SLS trace, sorted by submit time (ties in file order); see the module docstring."""
    jobs: list[TraceJob] = []
    for record in read_records(path):
        if _is_cluster_header(record):
            continue
        am_type = record.text("am.type", "mapreduce")
        if am_type != "mapreduce":
            raise record.error(f"only mapreduce jobs can be replayed, not am.type {am_type!r}")
        start_ms = record.integer("job.start.ms")
        if start_ms < 0:
            raise record.error(f"job.start.ms cannot be negative: {start_ms}")
        copies = max(1, record.integer("job.count", 1))
        given_id = record.text("job.id", "") if copies == 1 else ""
        maps, reduces, map_hosts, reduce_hosts = _tasks(record)
        for _ in range(copies):
            jobs.append(
                TraceJob(
                    id=given_id or str(len(jobs)),
                    submit_s=start_ms / 1000.0,
                    input_bytes=0,
                    shuffle_bytes=0,
                    output_bytes=0,
                    maps=len(maps),
                    reduces=len(reduces),
                    user=record.text("job.user", "default"),
                    queue=record.text("job.queue.name", "default"),
                    map_durations_s=tuple(maps),
                    reduce_durations_s=tuple(reduces),
                    map_hosts=tuple(map_hosts) if any(map_hosts) else (),
                    reduce_hosts=tuple(reduce_hosts) if any(reduce_hosts) else (),
                )
            )
    return by_submit_time(jobs)
