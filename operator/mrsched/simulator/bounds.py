"""Lower bounds on a workload's makespan and mean job time: no schedule, under any policy of a placement mode, does
better (tight, and still bounds)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from mrsched.core.model import Job, Node, Resources, pods_that_fit
from mrsched.core.physics import NodeCapability
from mrsched.simulator.bound_capacity import Pieces, Resource, capacity_bound, per_job
from mrsched.simulator.bound_tasks import TaskTimes, task_times, to_heartbeats, total_response_bound
from mrsched.simulator.engine import Simulation


def lower_bound(sim: Simulation, jobs: list[Job], *, mode: str | None = None) -> dict[str, float]:
    """Lower bounds on the makespan and on the mean job time that no schedule beats, under any policy of the
    run's placement ``mode`` (default the simulation's; ``yarn``: no capacity rule of ours holds there):

    * ``work_bound_s``: everything from the first submission on, with the cluster's whole CPU and disk
      capability busy; ``critical_path_s``: each job's submission, its fastest map, then its fastest reduce
      (:func:`_old_bounds`, the bounds before issue 49, kept: the new ones are never below them);
    * ``per_job_bound_s``: the latest of each job's own bound, its submission plus its maps alone on the empty
      cluster (the longest map; the job's maps packed into the nodes' places, when every policy keeps to
      them; its CPU and disk work on the whole cluster) plus, after them, its reduces' work that must follow
      the maps (the longest; packed likewise);
    * ``capacity_bound_s`` (concurrency by requests, which binds every policy): every task's least pod-time,
      its own noise on each node, packed into the nodes' places for pods with job release dates, as an LP
      (:mod:`mrsched.simulator.bound_capacity`; ``capacity_method`` says whether exact or its dual);
    * ``slot_bound_s``: the same with Hadoop 1's map and reduce slots, for the policies that keep to them
      (``SLOT_KEEPERS``; with concurrency by requests, the requests' places);

    In hadoop mode a task's pod-time is rounded up to whole heartbeats (a place refills only at one) and one
    heartbeat taken off each packing (:func:`~mrsched.simulator.bound_tasks.to_heartbeats`). In YARN mode
    every noise factor is 1 (a container runs its isolated time). ``makespan_s`` is the largest that binds
    every policy. ``mean_job_time_s``: the jobs' own bounds in increasing order matched with the completion
    times of preemptive SRPT on one machine with the cluster's whole capacity (its CPU, its disk; by requests
    its places for pods), the later of each pair, averaged
    (:func:`~mrsched.simulator.bound_tasks.total_response_bound`; at least either alone). It holds for the
    runs in which no job fails (a failed job leaves the mean). Contention and straggling are left out, so both
    are optimistic; ``tests/unit/project/test_bench_results.py`` checks them on every committed result and
    ``tests/unit/simulator/test_bounds.py`` against brute-forced optima."""
    mode = mode or sim.mode
    times = task_times(sim, jobs, noise=mode != "yarn")
    slots_bind = mode != "yarn"  # no slot rule of ours holds in YARN mode
    before = _old_bounds(sim, times, times.first, slots_bind)
    old = _old_bounds(sim, times, None, slots_bind)
    hadoop = mode == "hadoop"
    by_requests = mode != "yarn" and all(n.by_requests for n in sim.nodes.values())
    nodes = [sim.nodes[name] for name in times.nodes]
    caps = [sim.noise_free_capabilities[name] for name in times.nodes]
    held = to_heartbeats(times.full, sim.heartbeat_s) if hadoop else times.full
    slack = sim.heartbeat_s if hadoop else 0.0  # what packing the rounded times may add (to_heartbeats)
    places = _request_places(nodes, jobs) if by_requests else []
    maps_alone, reduces_after = _per_job(times, held, places, caps, slack)
    release = np.array([j.submit_s for j in jobs], dtype=float)
    own = release + maps_alone + reduces_after
    out: dict[str, Any] = {
        **{k: v for k, v in old.items() if k != "makespan_s"},
        "old_makespan_s": old["makespan_s"],
        "old_first_attempt_s": before["makespan_s"],
        "per_job_bound_s": float(own.max()) if len(own) else 0.0,
        "capacity_bound_s": math.nan,
        "capacity_method": "none",
    }
    capacity = math.nan
    if by_requests:
        pieces = _pieces(times, held, release + maps_alone, split=not hadoop)
        capacity, out["capacity_method"] = capacity_bound(
            pieces, _with_coefficients(places, times), np.arange(len(times.tasks))
        )
        out["capacity_bound_s"] = capacity - slack
    if mode != "yarn":
        out["slot_bound_s"] = _slot_keepers_bound(sim, times, held, slack, old, capacity, places)
    binding = [old["work_bound_s"], old["critical_path_s"], out["per_job_bound_s"]]
    if by_requests:
        binding += [out["capacity_bound_s"], old["slot_bound_s"]]
    out["makespan_s"] = float(max(v for v in binding if not math.isnan(v)))
    out["mean_job_time_s"] = float(
        _mean_job_time(times, release, maps_alone + reduces_after, caps, places, nodes)
    )
    return {k: float(v) if isinstance(v, np.floating) else v for k, v in out.items()}


def _request_places(nodes: list[Node], jobs: list[Job]) -> list[Resource]:
    """By requests, a node's places: pods (at most as many as the smallest request in each resource fits),
    CPU and memory, each pod taking its requests (its row's coefficient is set by :func:`_coefficients`)."""
    cpu = min((r.cpu for j in jobs for r in (j.map_request, j.reduce_request)), default=1.0)
    memory = min((r.memory_mb for j in jobs for r in (j.map_request, j.reduce_request)), default=1.0)
    smallest = Resources(cpu, memory)
    return [
        Resource(
            np.array([float(pods_that_fit(n.cores, n.memory_mb, smallest)) for n in nodes]), np.empty(0)
        ),
        Resource(np.array([float(n.cores) for n in nodes]), np.empty(0)),
        Resource(np.array([n.memory_mb for n in nodes]), np.empty(0)),
    ]


def _with_coefficients(places: list[Resource], times: TaskTimes) -> list[Resource]:
    coefficients = [np.ones(len(times.tasks)), times.cpu_request, times.memory_request]
    return [Resource(p.capacity, c) for p, c in zip(places, coefficients, strict=True)]


def _per_job(
    times: TaskTimes, held: np.ndarray, places: list[Resource], caps: list[NodeCapability], slack: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the least time of its maps alone on the empty cluster, and of its reduces' parts that must
    follow them (each: the longest task's least time; the tasks packed into the places, when given, the maps
    with their ``held`` times less the ``slack`` those may add; for maps, also their CPU and disk work over the
    cluster's whole capability)."""
    n_jobs = len(times.jobs)
    maps, reduces = ~times.is_reduce, times.is_reduce
    job_of = times.job_of
    longest_map = np.zeros(n_jobs)
    np.maximum.at(longest_map, job_of[maps], times.shortest[maps])
    longest_reduce = np.zeros(n_jobs)
    np.maximum.at(longest_reduce, job_of[reduces], times.shortest[reduces])
    cpu_rate = sum(c.cpu_rate * c.cores for c in caps)
    disk_rate = sum(c.disk_rate for c in caps)
    work = np.maximum(
        np.bincount(job_of[maps], weights=times.cpu_work[maps], minlength=n_jobs) / cpu_rate,
        np.bincount(job_of[maps], weights=times.disk_work[maps], minlength=n_jobs) / disk_rate,
    )
    maps_alone = np.maximum(longest_map, work)
    reduces_after = longest_reduce
    if places:
        resources = _with_coefficients(places, times)
        coefficients_maps = [r.coefficient[maps] for r in resources]
        coefficients_reduces = [r.coefficient[reduces] for r in resources]
        maps_alone = np.maximum(
            maps_alone, per_job(held[maps], job_of[maps], n_jobs, resources, coefficients_maps) - slack
        )
        reduces_after = np.maximum(
            reduces_after,
            per_job(times.post[reduces], job_of[reduces], n_jobs, resources, coefficients_reduces),
        )
    return maps_alone, reduces_after


def _pieces(times: TaskTimes, held: np.ndarray, maps_done: np.ndarray, *, split: bool) -> Pieces:
    """Every task's pod-time as pieces released with its job; with ``split``, a reduce's part that must follow
    its job's last map released at that job's ``maps_done`` bound, the rest with its job."""
    rows = np.arange(len(times.tasks))
    release = times.release
    if not split or not times.is_reduce.any():
        return Pieces(rows, release, held)
    reduces = np.flatnonzero(times.is_reduce)
    before = held.copy()
    before[reduces] = held[reduces] - times.post[reduces]
    return Pieces(
        np.concatenate([rows, reduces]),
        np.concatenate([release, maps_done[times.job_of[reduces]]]),
        np.vstack([before, times.post[reduces]]),
    )


def _slot_keepers_bound(
    sim: Simulation,
    times: TaskTimes,
    held: np.ndarray,
    slack: float,
    old: dict[str, float],
    capacity: float,
    places: list[Resource],
) -> float:
    """For the policies that keep to the slots: maps packed into the map slots, reduces into the reduce slots,
    each with release dates and their ``held`` times less the ``slack`` those may add (by requests: the
    requests' places, shared, whose packing is the ``capacity`` bound already solved), at least the old slot
    bound."""
    nodes = [sim.nodes[name] for name in times.nodes]
    best = old["slot_bound_s"]
    if places:
        return max(v for v in (best, capacity - slack) if not math.isnan(v))
    for kind, slots in (("map", [n.map_slots for n in nodes]), ("reduce", [n.reduce_slots for n in nodes])):
        rows = np.flatnonzero(times.is_reduce == (kind == "reduce"))
        if not len(rows) or not any(slots):
            continue
        pieces = Pieces(rows, times.release[rows], held[rows])
        slot_places = [Resource(np.array(slots, dtype=float), np.ones(len(times.tasks)))]
        value = capacity_bound(pieces, slot_places, rows)[0] - slack
        best = value if math.isnan(best) else max(best, value)
    return best


def _mean_job_time(
    times: TaskTimes,
    release: np.ndarray,
    own: np.ndarray,
    caps: list[NodeCapability],
    places: list[Resource],
    nodes: list[Node],
) -> float:
    """The mean response time no schedule beats: each job ends no sooner than its own bound (``own``, after
    its release) nor than its work is done on one machine with the cluster's whole capability for it (its
    CPU; its disk; by requests its places for pods: a task holds 1/pods of a node for its pod-time), whose
    earliest completions SRPT gives (:func:`total_response_bound`); the largest over those resources."""
    n_jobs = len(times.jobs)
    if not n_jobs:
        return 0.0
    job_of, done = times.job_of, release + own
    work = [
        (
            np.bincount(job_of, weights=times.cpu_work, minlength=n_jobs),
            sum(c.cpu_rate * c.cores for c in caps),
        ),
        (np.bincount(job_of, weights=times.disk_work, minlength=n_jobs), sum(c.disk_rate for c in caps)),
    ]
    if places:
        pods = places[0].capacity
        node_seconds = (times.full / np.where(pods > 0, pods, np.inf)).min(axis=1)
        work.append((np.bincount(job_of, weights=node_seconds, minlength=n_jobs), float(len(nodes))))
    return max(total_response_bound(release, done, w, rate) for w, rate in work) / n_jobs


def _old_bounds(
    sim: Simulation, times: TaskTimes, factor: np.ndarray | None, slots_bind: bool
) -> dict[str, float]:
    """The bounds of before issue 49, each task's time scaled by ``factor`` (per task and node): the work bound,
    the critical path, and the slot bound (the map phase as the fractional assignment of each job's maps, each
    holding its slot as long as the job's shortest map there, from the first submission). With the least
    factor over every attempt that may succeed, a speculative copy's too (``old_makespan_s``), they are bounds
    and the new makespan bound is never below them; with the first attempt's factors, as they were computed
    when no run speculated (``old_first_attempt_s``), they are not bounds once a faster copy may win."""
    jobs, job_of = times.jobs, times.job_of
    caps = sim.noise_free_capabilities
    maps = ~times.is_reduce
    # A map's least end after its release, a reduce's critical part after its job's last map (all of it, or
    # its own work with shuffleWhileMapsRun); as a bound (``factor`` None), over the attempts that may succeed.
    if factor is None:
        factor, shortest = times.least, times.shortest
    else:
        shortest = np.where(maps[:, None], factor * times.alone, factor * times.alone_post).min(axis=1)
    cpu_capacity = sum(c.cpu_rate * c.cores for c in caps.values())
    disk_capacity = sum(c.disk_rate for c in caps.values())
    first = min((j.submit_s for j in jobs), default=0.0)
    least = factor.min(axis=1)
    work = first + max(
        float((times.cpu_s * least).sum()) / cpu_capacity, float((times.disk_s * least).sum()) / disk_capacity
    )
    fastest = np.full((len(jobs), 2), np.inf)
    np.minimum.at(fastest, (job_of, times.is_reduce.astype(int)), shortest)
    fastest[np.isinf(fastest)] = 0.0
    release = np.array([j.submit_s for j in jobs], dtype=float)
    critical = float((release + fastest.sum(axis=1)).max()) if len(jobs) else 0.0
    shortest_map: dict[str, dict[str, float]] = {}
    held = factor * times.alone
    for j, job in enumerate(jobs):
        rows = np.flatnonzero(maps & (job_of == j))
        if len(rows):
            shortest_map[job.id] = dict(zip(times.nodes, held[rows].min(axis=0).tolist(), strict=True))
    slots = slot_bound(sim, jobs, shortest_map)
    by_requests = slots_bind and all(n.by_requests for n in sim.nodes.values()) and not math.isnan(slots)
    return {
        "makespan_s": max(work, critical, slots if by_requests else 0.0),
        "work_bound_s": work,
        "critical_path_s": critical,
        "slot_bound_s": slots,
    }


def slot_bound(sim: Simulation, jobs: list[Job], shortest_map: dict[str, dict[str, float]]) -> float:
    """A lower bound for the policies that keep to the nodes' map slots (``SLOT_KEEPERS``): the map phase
    alone, as the fractional assignment of every job's maps to the nodes' map slots that finishes soonest (a
    small LP), each map on node n holding its slot at least as long as the job's shortest map there
    (``shortest_map``: noise, remote reads and a trace's work included, no contention). In hadoop mode a slot is
    refilled only at its node's heartbeat, so the time is rounded up to whole heartbeats and one heartbeat taken
    off the result (a slot's last map ends at its own time); a kubernetes-mode round refills it at once. NaN
    when there are no maps."""
    heartbeat = sim.heartbeat_s
    names = [n for n in sim.nodes if _map_capacity(sim.nodes[n], jobs) > 0]
    mapped = [j for j in jobs if j.maps]
    if not mapped or not names:
        return math.nan

    def held(t: float) -> float:
        if sim.mode == "hadoop":
            return math.ceil(t / heartbeat - 1e-9) * heartbeat
        grid = heartbeat / 10  # down to a grid: fewer LP rows, still a bound
        return math.floor(t / grid) * grid

    # Jobs whose maps hold every node's slot equally long are interchangeable in the LP: one row per distinct
    # occupancy vector, with their maps summed (exact, and what makes a whole SWIM day's 5,894 jobs solvable;
    # hence the rounding to a grid).
    rows: dict[tuple[float, ...], float] = {}
    for job in mapped:
        key = tuple(held(shortest_map[job.id][name]) for name in names)
        rows[key] = rows.get(key, 0.0) + float(len(job.maps))
    occupancy = np.array(list(rows), dtype=np.float64)
    n_jobs, n_nodes = occupancy.shape
    # Variables: x[a, b] (maps of group a on node b), then T. Minimise T.
    size = n_jobs * n_nodes + 1
    c = np.zeros(size)
    c[-1] = 1.0
    a_eq = sparse.lil_matrix((n_jobs, size))
    for a in range(n_jobs):
        a_eq[a, a * n_nodes : (a + 1) * n_nodes] = 1.0
    b_eq = np.array(list(rows.values()))
    a_ub = sparse.lil_matrix((n_nodes, size))
    for b, name in enumerate(names):
        for a in range(n_jobs):
            a_ub[b, a * n_nodes + b] = occupancy[a, b]
        a_ub[b, size - 1] = -float(_map_capacity(sim.nodes[name], jobs))
    a_eq, a_ub = a_eq.tocsr(), a_ub.tocsr()
    result = linprog(c, A_ub=a_ub, b_ub=np.zeros(n_nodes), A_eq=a_eq, b_eq=b_eq, bounds=(0, None))
    if not result.success:
        return math.nan
    first = min(j.submit_s for j in mapped)
    # Rounded up to heartbeats, each slot's last map is counted up to one heartbeat too long (to_heartbeats).
    return first + float(result.x[-1]) - (heartbeat if sim.mode == "hadoop" else 0.0)


def _map_capacity(node: Node, jobs: list[Job]) -> int:
    """The maps a node runs at once at most: its map slots, or by requests as many of the smallest map request
    of any job as its cores and memory hold (a larger request, or reduces beside them, only lowers it)."""
    if not node.by_requests:
        return node.map_slots
    smallest = min((j.map_request for j in jobs), key=lambda r: (r.cpu, r.memory_mb), default=Resources())
    return min(node.map_slots, pods_that_fit(node.cores, node.memory_mb, smallest))
