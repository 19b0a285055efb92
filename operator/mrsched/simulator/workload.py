"""Turn a scenario's workload into jobs for one seed: expand repeats, place input replicas, draw arrival gaps,
and replay traces through the documented bytes-to-tasks rule (``mrsched.simulator.traces``)."""

from __future__ import annotations

import random

from mrsched.core.catalog import application
from mrsched.core.model import Hints, Job, Resources, Task
from mrsched.simulator.scenario import JobSpec, Scenario
from mrsched.simulator.traces import assign_users, read_swim_gaps, read_trace, scale_down, task_counts


def _hints(spec: object) -> Hints:
    return Hints(spec.cpu, spec.memory, spec.disk, spec.network)  # type: ignore[attr-defined]


def _replicas(rng: random.Random, nodes: list[str], count: int) -> tuple[str, ...]:
    return tuple(rng.sample(nodes, min(count, len(nodes))))


def _job(spec: JobSpec, job_id: str, submit_s: float, nodes: list[str], rng: random.Random) -> Job:
    maps = [
        Task(job_id, "map", i, spec.input_mb_per_map, _replicas(rng, nodes, spec.replication))
        for i in range(spec.maps)
    ]
    profile = application(spec.app).map
    map_output_mb = sum(profile.output(t.input_mb) for t in maps)
    reduces = [Task(job_id, "reduce", i, map_output_mb / spec.reduces) for i in range(spec.reduces)]
    return Job(
        job_id,
        spec.app,
        submit_s,
        maps,
        reduces,
        user=spec.user,
        queue=spec.queue,
        priority=spec.priority,
        weight=spec.weight,
        map_hints=_hints(spec.map_hints),
        reduce_hints=_hints(spec.reduce_hints),
        reduce_slowstart=spec.reduce_slowstart,
        map_request=Resources(spec.cpu_request, spec.memory_request_mb),
        reduce_request=Resources(spec.cpu_request, spec.memory_request_mb),
    )


def build_jobs(scenario: Scenario, nodes: list[str], seed: int) -> list[Job]:
    """The scenario's jobs for ``seed``: the same seed gives the same replicas and arrival gaps, whatever the
    policy, so that policies are compared on identical input."""
    rng = random.Random(f"workload/{scenario.name}/{seed}")
    specs: list[tuple[JobSpec, str, float]] = []
    counts: dict[str, int] = {}
    for spec in scenario.workload.jobs:
        for r in range(spec.repeat):
            base = spec.id or spec.app
            counts[base] = counts.get(base, 0) + 1
            job_id = base if spec.repeat == 1 and spec.id else f"{base}-{counts[base]}"
            specs.append((spec, job_id, spec.submit_s + r * spec.every_s))
    if scenario.workload.inter_arrival is not None:
        gaps = read_swim_gaps(scenario.resolve(scenario.workload.inter_arrival.swim))
        at = 0.0
        redrawn = []
        for i, (spec, job_id, _) in enumerate(specs):
            at += rng.choice(gaps) if i else 0.0
            redrawn.append((spec, job_id, at))
        specs = redrawn
    jobs = [_job(spec, job_id, submit, nodes, rng) for spec, job_id, submit in specs]
    if scenario.workload.trace is not None:
        jobs += _trace_jobs(scenario, nodes, rng)
    return sorted(jobs, key=lambda j: (j.submit_s, j.id))


def _duration(durations: tuple[float, ...], index: int) -> float | None:
    """A trace's measured time for task ``index`` (cycling when it lists fewer), read as reference-machine CPU
    seconds; None when the trace gives bytes instead."""
    return durations[index % len(durations)] if durations else None


def _traced_replicas(hosts: tuple[str, ...], index: int, nodes: list[str]) -> tuple[str, ...]:
    """The node a trace names for container ``index`` (SLS's ``container.host``), when it is one of ours: where
    its input is, and the host YARN mode asks for; () when the trace names none we have."""
    host = hosts[index] if index < len(hosts) else ""
    return (host,) if host in nodes else ()


def _trace_jobs(scenario: Scenario, nodes: list[str], rng: random.Random) -> list[Job]:
    trace = scenario.workload.trace
    assert trace is not None
    read = read_trace(trace.format, scenario.resolve(trace.path))
    if trace.users is not None:  # on the whole trace, so maxJobs and sizeScale keep each job's user
        read = assign_users(read, trace.users.rule, trace.users.count)
    raw = scale_down(
        read,
        time_scale=trace.time_scale,
        size_scale=trace.size_scale,
        max_jobs=trace.max_jobs,
    )
    jobs = []
    for tj in raw:
        n_maps, n_reduces = task_counts(tj, block_mb=trace.block_mb)
        per_map_mb = tj.input_bytes / 1e6 / n_maps
        job_id = f"trace-{tj.id}"
        maps = [
            Task(
                job_id,
                "map",
                i,
                per_map_mb,
                _traced_replicas(tj.map_hosts, i, nodes) or _replicas(rng, nodes, 3),
                work_s=_duration(tj.map_durations_s, i),
            )
            for i in range(n_maps)
        ]
        shuffle_mb = tj.shuffle_bytes / 1e6
        reduces = [
            Task(
                job_id,
                "reduce",
                i,
                shuffle_mb / max(n_reduces, 1),
                _traced_replicas(tj.reduce_hosts, i, nodes),
                work_s=_duration(tj.reduce_durations_s, i),
            )
            for i in range(n_reduces)
        ]
        job = Job(job_id, trace.app, tj.submit_s, maps, reduces, user=tj.user, queue=tj.queue)
        if trace.reduce_slowstart is not None:
            job.reduce_slowstart = trace.reduce_slowstart
        jobs.append(job)
    return jobs
