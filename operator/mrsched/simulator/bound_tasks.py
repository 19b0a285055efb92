"""What every task needs at least, on every node: the inputs of the lower bounds (:mod:`mrsched.simulator.bounds`).

A task's time on a node is at least its isolated time there (seed 002 Eq 3.2, :func:`isolated_duration`: alone
on the idle node, no contention) times the smallest noise factor any of its possible attempts draws on that node
(the physics draws a log-normal factor per node and attempt, ``noise_factor``; which attempts may be the one
that succeeds: :func:`attempts_possible`); straggler
factors and contention only lengthen it. Its input is read locally or from a node of its rack, whichever is
sooner (another rack only costs more), and only its own copy of replicated writes counts
(``replicaWritesRemote``: other nodes write the rest).

A reduce holds its pod from placement to its end, at least its isolated time; of that, what must follow its
job's last map (``post``) is all of it, or with ``shuffleWhileMapsRun`` its own CPU and disk work alone (its
start-up and fetches may overlap the maps).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numpy as np

from mrsched.core.model import Job, Task
from mrsched.core.physics import NodeCapability, TaskDemand, isolated_duration, noise_factor
from mrsched.simulator.engine import Simulation


@dataclass(frozen=True)
class TaskTimes:
    """Per task (rows, in job order) and node (columns, ``nodes``): its isolated times and noise factors."""

    nodes: list[str]
    jobs: list[Job]
    tasks: list[Task]
    job_of: np.ndarray  # row -> index into ``jobs``
    is_reduce: np.ndarray  # row -> bool
    alone: np.ndarray  # isolated pod-time on the node, noise off
    alone_post: np.ndarray  # of a reduce, the isolated part after its job's last map (0 for a map)
    first: np.ndarray  # the noise factor of its first attempt on the node
    least: np.ndarray  # the least noise factor of any of its possible attempts on the node
    cpu_s: np.ndarray  # row -> CPU work (reference-core seconds), noise off
    disk_s: np.ndarray  # row -> disk work (reference-disk seconds) of all its copies, noise off
    #: row -> the least time of its critical part: a map's from its release to its end, a reduce's after its
    #: job's last map (a speculative copy starts only after the first attempt has run lagS: _least_end)
    shortest: np.ndarray
    cpu_request: np.ndarray  # row -> its pod's CPU request
    memory_request: np.ndarray  # row -> its pod's memory request (MB)

    @property
    def release(self) -> np.ndarray:
        """row -> its job's submission time."""
        return np.array([self.jobs[j].submit_s for j in self.job_of], dtype=float)

    @property
    def full(self) -> np.ndarray:
        """The least time the task holds a pod on each node."""
        out: np.ndarray = self.least * self.alone
        return out

    @property
    def post(self) -> np.ndarray:
        """The least time of a reduce's part that must follow its job's last map, on each node."""
        out: np.ndarray = self.least * self.alone_post
        return out

    @property
    def cpu_work(self) -> np.ndarray:
        """row -> the least CPU work it does, anywhere."""
        out: np.ndarray = self.cpu_s * self.least.min(axis=1)
        return out

    @property
    def disk_work(self) -> np.ndarray:
        """row -> the least disk work it and its copies' nodes do."""
        out: np.ndarray = self.disk_s * self.least.min(axis=1)
        return out


def _own_demands(sim: Simulation, job: Job, task: Task) -> tuple[TaskDemand, TaskDemand, TaskDemand]:
    """(local, remote, the whole-cluster work demand) of ``task``: its input on its node or over the network from
    its rack, its own copy of replicated writes; the third with every copy (other nodes write them)."""
    local = sim.dataflow.base(job.app, task)
    remote = (
        local
        if sim.dataflow.replayed(task)
        else replace(local, read_mb=max(0.0, local.read_mb - task.input_mb), network_mb=task.input_mb)
    )
    copies = sim.dataflow.write_copies(job.app, task)
    if copies > 1:
        return (
            replace(local, write_mb=local.write_mb / copies),
            replace(remote, write_mb=remote.write_mb / copies),
            remote,
        )
    return local, remote, remote


def attempts_possible(sim: Simulation, job: Job) -> dict[str, int]:
    """Per task kind, the highest attempt of a task of ``job`` that may be the one that succeeds, under any
    policy. An attempt fails here only when the OOM killer ends it (``NodeModel.start``), which cannot happen
    by requests while every task uses no more memory than its pod requests (the requests on a node fit its
    memory); then a map's second attempt can only be a speculative copy (maps only, ``cluster.speculation``).
    Otherwise any of the job's ``max_attempts``, and for a map one more under speculation (a speculative copy
    of its last retry)."""
    safe = all(n.by_requests for n in sim.nodes.values()) and all(
        sim.dataflow.base(job.app, tasks[0]).memory_mb <= job.request(tasks[0].kind).memory_mb + 1e-9
        for tasks in (job.maps, job.reduces)
        if tasks
    )
    copy = 1 if sim.speculator.spec.enabled else 0
    if not safe:
        return {"map": max(1, job.max_attempts) + copy, "reduce": max(1, job.max_attempts)}
    return {"map": 1 + copy, "reduce": 1}


def _least_end(first: np.ndarray, second: np.ndarray | None, alone: np.ndarray, lag_s: float) -> float:
    """The least time from a map's release to its end: its first attempt's, or a speculative copy's, which
    starts only once the first has run ``lag_s`` (``SpeculationSpec.lagS``; ``second`` None: no copy)."""
    end = float((first * alone).min())
    return end if second is None else min(end, lag_s + float((second * alone).min()))


def _post_map(demand: TaskDemand, overlaps: bool) -> TaskDemand:
    """The part of a reduce's demand that must follow its job's last map."""
    return replace(demand, startup=False, network_mb=0.0) if overlaps else demand


def task_times(sim: Simulation, jobs: list[Job], *, noise: bool = True) -> TaskTimes:
    """Every task's isolated times and noise factors on every node (module docstring); ``noise`` False: every
    factor 1 (YARN mode runs each container its isolated time). Nodes of one class share their isolated times;
    only the noise is drawn per node and attempt (most of the cost: one seeded generator each)."""
    caps = sim.noise_free_capabilities
    nodes = sorted(caps)
    classes: dict[NodeCapability, list[int]] = {}
    for column, name in enumerate(nodes):
        classes.setdefault(caps[name], []).append(column)
    sigma = [sim.capabilities[name].noise_sigma if noise else 0.0 for name in nodes]
    overlaps = sim.physics.shuffle_while_maps_run
    tasks = [t for job in jobs for t in job.maps + job.reduces]
    job_of = np.array([j for j, job in enumerate(jobs) for _ in job.maps + job.reduces], dtype=np.int64)
    rows, columns = len(tasks), len(nodes)
    alone, alone_post = np.zeros((rows, columns)), np.zeros((rows, columns))
    first, least = np.ones((rows, columns)), np.ones((rows, columns))
    cpu_s, disk_s, shortest = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    cpu_request, memory_request = np.zeros(rows), np.zeros(rows)
    second = np.ones(columns)
    lag_s = sim.speculator.spec.lag_s
    row = 0
    for job in jobs:
        possible = attempts_possible(sim, job)
        for task in job.maps + job.reduces:
            attempts = range(2, possible[task.kind] + 1)
            local, remote, work = _own_demands(sim, job, task)
            for column, (name, s) in enumerate(zip(nodes, sigma, strict=True)):
                if s > 0:
                    f = noise_factor(sim.seed, name, f"{task.key}#1", s)
                    others = [noise_factor(sim.seed, name, f"{task.key}#{k}", s) for k in attempts]
                    first[row, column] = f
                    least[row, column] = min([f, *others])
                    second[column] = others[0] if others else 1.0
            for cap, cols in classes.items():
                alone[row, cols] = min(isolated_duration(cap, local), isolated_duration(cap, remote))
                if task.kind == "reduce":
                    alone_post[row, cols] = min(
                        isolated_duration(cap, _post_map(local, overlaps)),
                        isolated_duration(cap, _post_map(remote, overlaps)),
                    )
            cpu_s[row], disk_s[row] = local.cpu_s, work.disk_s
            if task.kind == "reduce":
                shortest[row] = float((least[row] * alone_post[row]).min())
            elif (
                len(attempts) == 1 and possible["reduce"] == 1
            ):  # a speculative copy is its only other attempt
                shortest[row] = _least_end(first[row], second, alone[row], lag_s)
            else:
                shortest[row] = float((least[row] * alone[row]).min())
            request = job.request(task.kind)
            cpu_request[row], memory_request[row] = request.cpu, request.memory_mb
            row += 1
    is_reduce = np.array([t.kind == "reduce" for t in tasks], dtype=bool)
    return TaskTimes(
        nodes,
        jobs,
        tasks,
        job_of,
        is_reduce,
        alone,
        alone_post,
        first,
        least,
        cpu_s,
        disk_s,
        shortest,
        cpu_request,
        memory_request,
    )


def to_heartbeats(times: np.ndarray, heartbeat_s: float) -> np.ndarray:
    """In hadoop mode a pod's place is filled again only at its node's next heartbeat (every start is at one,
    and a node heartbeats every ``heartbeat_s`` while it runs anything, going dormant only at a heartbeat): a
    task holds it a whole number of heartbeats, but for the last on each place, which ends at its own time.
    So a packing of these times ends at most one heartbeat after the schedule it relaxes: whatever is
    computed from them is a bound once ``heartbeat_s`` is subtracted."""
    return np.ceil(times / heartbeat_s - 1e-9) * heartbeat_s


def srpt_completions(release: np.ndarray, work: np.ndarray, rate: float) -> np.ndarray:
    """The completion times, in increasing order, of preemptive shortest-remaining-work-first on one machine of
    ``rate``. SRPT completes at least as many jobs by every time as any preemptive schedule of one machine
    (1|r_j, pmtn|): its k-th completion is the earliest any schedule's k-th can be, on any cluster whose summed
    capacity for that work is ``rate``."""
    if rate <= 0 or not len(work):
        return np.zeros(len(work))
    order = np.argsort(release, kind="stable")
    releases, sizes = release[order].astype(float), work[order] / rate
    done: list[float] = []
    now, i, n = -math.inf, 0, len(sizes)
    heap: list[tuple[float, int]] = []
    while i < n or heap:
        if not heap:
            now = max(now, releases[i])
        while i < n and releases[i] <= now + 1e-12:
            heapq.heappush(heap, (sizes[i], i))
            i += 1
        left, j = heapq.heappop(heap)
        until = releases[i] if i < n else math.inf
        if now + left <= until + 1e-12:  # done before the next arrival
            now += left
            done.append(now)
        else:  # the next arrival may preempt: run until it, then choose again
            heapq.heappush(heap, (left - (until - now), j))
            now = until
    return np.sort(np.array(done))


def total_response_bound(release: np.ndarray, own: np.ndarray, work: np.ndarray, rate: float) -> float:
    """A lower bound on Σ (C_j − r_j): each job ends no sooner than ``own`` (its own bound, an absolute time)
    nor than its work is done on the one machine of ``rate``, whose k-th completion is SRPT's at the earliest;
    matching the jobs' own bounds and SRPT's completions in sorted order gives the least Σ max of the two (the
    cost max(a, s) is Monge: sorted matching is optimal)."""
    if not len(own):
        return 0.0
    srpt = srpt_completions(release, work, rate) if rate > 0 else np.zeros(len(own))
    return float(np.maximum(np.sort(own), srpt).sum() - release.sum())
