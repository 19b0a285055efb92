"""Lower bounds on a workload's makespan: no schedule, under any policy or placement mode, finishes sooner."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from mrsched.core.model import Job, Node, Resources, pods_that_fit
from mrsched.core.physics import NodeCapability, isolated_duration, noise_factor
from mrsched.simulator.dataflow import base_demand
from mrsched.simulator.engine import Simulation


def lower_bound(sim: Simulation, jobs: list[Job]) -> dict[str, float]:
    """No schedule, under any policy and in either placement mode, can finish before either bound (and, when every
    node's concurrency is by requests, the slot bound: :func:`slot_bound`):

    * work: everything from the first submission on, with the cluster's whole CPU and disk capability busy:
      first submit + max(Σ cpu work / Σ_n κc·cores, Σ disk work / Σ_n κd);
    * critical path: each job's submission plus its fastest map and, after it, its fastest reduce, on the
      best node for each.

    Each task's work is its demand as the engine builds it (``base_demand``: a trace's measured ``work_s``
    included), scaled by the smallest noise factor its first attempt would draw on any node (the physics'
    log-normal noise is drawn per node and task; failed attempts only add work); its disk work leaves out the
    input read, which a non-local map or a reduce's shuffle takes over the network instead, and its time is the
    shorter of reading its input locally or from a node of its rack. With ``cluster.physics`` switches: a task's
    time counts only its own copy of replicated writes (``replicaWritesRemote``; the work bound all of them), and
    a reduce's neither its start-up nor its fetches (``shuffleWhileMapsRun``: both may overlap the maps).
    Contention and slots are left out, so both bounds are optimistic; ``tests/unit/test_bench_results.py``
    checks that every committed result is at or above them."""
    caps = sim.noise_free_capabilities
    sigma = {name: cap.noise_sigma for name, cap in sim.capabilities.items()}
    cpu_capacity = sum(c.cpu_rate * c.cores for c in caps.values())
    disk_capacity = sum(c.disk_rate for c in caps.values())
    # Nodes of one class share their noise-free capability: a task's isolated time is computed once per class,
    # only the noise factor once per node (the draws are most of the bound's cost: one seeded generator each).
    classes: dict[NodeCapability, list[str]] = {}
    for name, cap in caps.items():
        classes.setdefault(cap, []).append(name)
    cpu_work = disk_work = 0.0
    critical = 0.0
    shortest_map: dict[str, dict[str, float]] = {}  # job -> node -> its shortest map there (the slot bound's)
    for job in jobs:
        fastest: dict[str, float] = {}
        for task in job.maps + job.reduces:
            local = base_demand(job.app, task, measured_time=sim.physics.replay_measured_time)
            remote = (
                local
                if sim.dataflow.replayed(task)
                else replace(local, read_mb=max(0.0, local.read_mb - task.input_mb), network_mb=task.input_mb)
            )
            # replicaWritesRemote: a task's time counts its own copy of the writes; other nodes write the rest.
            copies = sim.dataflow.write_copies(job.app, task)
            own, own_remote = (
                (
                    replace(local, write_mb=local.write_mb / copies),
                    replace(remote, write_mb=remote.write_mb / copies),
                )
                if copies > 1
                else (local, remote)
            )
            if task.kind == "reduce" and sim.physics.shuffle_while_maps_run:
                # An early reduce may start up and copy everything while the maps still run: its critical part
                # after the last map is its own work alone.
                own, own_remote = (
                    replace(own, startup=False),
                    replace(own_remote, startup=False, network_mb=0.0),
                )
            attempt = f"{task.key}#1"
            least = shortest = math.inf
            held = shortest_map.setdefault(job.id, {}) if task.kind == "map" else None
            for cap, names in classes.items():
                isolated = min(isolated_duration(cap, own), isolated_duration(cap, own_remote))
                for name in names:
                    factor = noise_factor(sim.seed, name, attempt, sigma[name]) if sigma[name] > 0 else 1.0
                    least = min(least, factor)
                    # Every term of a task's time, its start-up overhead too, scales with its noise factor.
                    t = factor * isolated
                    shortest = min(shortest, t)
                    if held is not None:
                        held[name] = min(held.get(name, math.inf), t)
            cpu_work += local.cpu_s * least
            disk_work += remote.disk_s * least
            fastest[task.kind] = min(fastest.get(task.kind, math.inf), shortest)
        critical = max(critical, job.submit_s + fastest.get("map", 0.0) + fastest.get("reduce", 0.0))
    first = min((j.submit_s for j in jobs), default=0.0)
    work = first + max(cpu_work / cpu_capacity, disk_work / disk_capacity)
    slots = slot_bound(sim, jobs, shortest_map)
    # By requests the engine refuses every pod that does not fit, whoever placed it: the map phase's bound by
    # the nodes' request capacity then holds for every policy, and is part of the makespan bound.
    by_requests = all(n.by_requests for n in sim.nodes.values()) and not math.isnan(slots)
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
    refilled only at its node's heartbeat, so the time is rounded up to whole heartbeats; a kubernetes-mode round
    refills it at once. NaN when there are no maps."""
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
    return first + float(result.x[-1])


def _map_capacity(node: Node, jobs: list[Job]) -> int:
    """The maps a node runs at once at most: its map slots, or by requests as many of the smallest map request
    of any job as its cores and memory hold (a larger request, or reduces beside them, only lowers it)."""
    if not node.by_requests:
        return node.map_slots
    smallest = min((j.map_request for j in jobs), key=lambda r: (r.cpu, r.memory_mb), default=Resources())
    return min(node.map_slots, pods_that_fit(node.cores, node.memory_mb, smallest))
