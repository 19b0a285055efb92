"""Run a scenario under several policies and seeds, side by side, with the lower bound on makespan."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from mrsched.core.catalog import expand_layout
from mrsched.core.model import Job, Node, Resources, pods_that_fit
from mrsched.core.physics import NodeCapability, isolated_duration, noise_factor
from mrsched.core.policy import TruePhysics
from mrsched.policies import make_policy
from mrsched.simulator.dataflow import base_demand
from mrsched.simulator.detection import summarise_detection
from mrsched.simulator.engine import Simulation, SimulationResult
from mrsched.simulator.fitted import target_fitted_constants
from mrsched.simulator.scenario import PlacementMode, Scenario, policy_name
from mrsched.simulator.workload import build_jobs


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


def map_time_summary(results: list[SimulationResult]) -> dict[str, Any]:
    """Mean successful map time per app over all seeds, overall and per node class (Table 3.3), and the share
    of each app's maps that ran on each node class."""
    pooled: dict[str, dict[str, list[float]]] = {}
    for r in results:
        for app, by_class in r.map_times.items():
            for cls, times in by_class.items():
                pooled.setdefault(app, {}).setdefault(cls, []).extend(times)
    out: dict[str, Any] = {}
    for app, by_class in sorted(pooled.items()):
        every = [t for times in by_class.values() for t in times]
        out[app] = {
            "mean_s": statistics.fmean(every),
            "by_class_mean_s": {c: statistics.fmean(t) for c, t in sorted(by_class.items())},
            "by_class_share": {c: len(t) / len(every) for c, t in sorted(by_class.items())},
        }
    return out


def summarise(result: SimulationResult) -> dict[str, Any]:
    # Response time (submit to finish) and running time (first task start to finish) of each finished job.
    done = [
        (j, j.finish_s - j.submit_s, j.finish_s - (j.start_s or j.submit_s))
        for j in result.jobs
        if j.finish_s is not None and not j.failed
    ]
    times = sorted(response for _, response, _ in done)

    def pct(p: float) -> float:
        return times[min(len(times) - 1, round(p * (len(times) - 1)))] if times else 0.0

    per_user: dict[str, list[float]] = {}
    for j, response, _ in done:
        per_user.setdefault(j.user, []).append(response)
    total_maps = sum(result.locality.values()) or 1
    return {
        "makespan_s": result.makespan_s,
        "mean_job_time_s": statistics.fmean(times) if times else 0.0,
        "p50_job_time_s": pct(0.5),
        "p95_job_time_s": pct(0.95),
        "mean_job_time_by_user_s": {u: statistics.fmean(v) for u, v in sorted(per_user.items())},
        # Slowdown: response time over running time (1 = never waited to start).
        "mean_slowdown": statistics.fmean(r / max(run, 1e-9) for _, r, run in done) if done else 0.0,
        "mean_starvation_s": statistics.fmean(j.starvation_s for j, _, _ in done) if done else 0.0,
        "mean_reduce_idle_s": statistics.fmean(j.reduce_idle_s for j, _, _ in done) if done else 0.0,
        "locality": {k: v / total_maps for k, v in sorted(result.locality.items())},
        "throughput_work_per_s": result.throughput,
        "failed_jobs": sum(1 for j in result.jobs if j.failed),
        "failed_attempts": result.tasks_failed,
        "tasks_started": result.tasks_started,
        "events": result.events,
        **({"detection": result.extra["detection"]} if "detection" in result.extra else {}),
        "jobs": [
            {
                "id": j.id,
                "user": j.user,
                "submit_s": j.submit_s,
                "start_s": j.start_s,
                "finish_s": j.finish_s,
                "task_s": round(j.task_s, 3),
                "starvation_s": round(j.starvation_s, 3),
                "reduce_idle_s": round(j.reduce_idle_s, 3),
                **_load_ratio(result, j.start_s, j.finish_s),
            }
            for j in result.jobs
        ],
    }


def _load_ratio(result: SimulationResult, start: float | None, end: float | None) -> dict[str, float]:
    """Mean load1/cores over the nodes while the job ran, as the policy's metrics showed it (seed 000's
    utilisation, Fig 8); only for policies that read metrics."""
    trace = result.extra.get("metrics_trace")
    if not trace or start is None or end is None:
        return {}
    points = [ratio for series in trace.values() for t, ratio, _ in series if start <= t <= end]
    if not points:
        return {}
    # Steady state (seed 000 Fig 8 reads utilisation "after the learning phase"): the middle of the run,
    # without the ramp-up of its first 20 % and the reduce tail of its last 20 %.
    lo, hi = start + 0.2 * (end - start), start + 0.8 * (end - start)
    steady = [ratio for series in trace.values() for t, ratio, _ in series if lo <= t <= hi]
    out = {"load_ratio": round(statistics.fmean(points), 4)}
    if steady:
        out["load_ratio_steady"] = round(statistics.fmean(steady), 4)
    return out


def _finite_mean(values: list[float]) -> float | None:
    """The mean, or None (JSON null) when any value is NaN (a bound that could not be computed)."""
    return None if any(math.isnan(v) for v in values) else statistics.fmean(values)


def _mean_of_dicts(dicts: list[dict[str, float]], *, missing: float | None = 0.0) -> dict[str, float]:
    """Key by key, the mean over the seeds; a key a seed lacks counts as ``missing`` there (0 for a locality
    level no map had), or is left out of that key's mean when ``missing`` is None."""
    keys = sorted({k for d in dicts for k in d})
    out = {}
    for k in keys:
        values = [d[k] for d in dicts if k in d]
        if missing is not None:
            values += [missing] * (len(dicts) - len(values))
        out[k] = statistics.fmean(values)
    return out


def _mean(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(r[key] for r in runs)


def build_simulation(
    scenario: Scenario,
    name: str,
    seed: int,
    jobs: list[Job],
    *,
    mode: PlacementMode,
    load_state: dict[str, Any] | None = None,
) -> Simulation:
    """The simulation of one policy entry (``fair``, ``fair:slots4``...) on one seed's jobs, as
    :func:`run_scenario` runs it: the entry's cluster overrides and options, the scenario's monitor."""

    def factory(truth: TruePhysics) -> Any:
        policy = make_policy(policy_name(name), scenario.options_for(name), seed=seed, truth=truth)
        if load_state and name in load_state:
            policy.load_state(load_state[name])
        return policy

    monitor = scenario.monitor
    return Simulation(
        scenario.cluster_for(name),
        jobs,
        factory,
        seed=seed,
        monitor=monitor,
        feedback=monitor is not None and name in monitor.feedback,
        mode=mode,
    )


def _physics_label(scenario: Scenario) -> dict[str, Any]:
    cluster = scenario.cluster
    label: dict[str, Any] = {}
    if cluster.physics.enabled():
        label["physics"] = cluster.physics.enabled()
    if cluster.stragglers.probability > 0:
        label["stragglers"] = cluster.stragglers.model_dump(by_alias=True)
    if cluster.speculation.enabled:
        label["speculation"] = cluster.speculation.policies
    return label


def run_scenario(
    scenario: Scenario,
    policies: list[str] | None = None,
    seeds: list[int] | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    load_state: dict[str, Any] | None = None,
    saved_state: dict[str, Any] | None = None,
    mode: PlacementMode | None = None,
) -> tuple[dict[str, Any], dict[str, SimulationResult]]:
    """Every policy on every seed (identical workload per seed), and the lower bound: the summary that
    results.json holds, and each policy's first-seed result (for plots).

    Learned state (``policy.state()``, e.g. ThroughputScheduler's posteriors) as the operator keeps it across
    restarts: ``load_state`` maps a policy entry to the state every seed's run of it starts from; when
    ``saved_state`` is a dict, each entry's state after its last seed's run is written into it."""
    policies = policies or scenario.policies
    seeds = seeds or scenario.seeds
    mode = mode or scenario.modes[0]
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]  # input replicas go here
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "source": scenario.source,
        "headline": scenario.headline,
        # The target-fitted constants its results rest on (mrsched.simulator.fitted): never reported as met.
        "targetFitted": target_fitted_constants(scenario),
        "mode": mode,
        "concurrency": scenario.cluster.concurrency,
        # The physics switches and Hadoop options it ran with, when any is on (absent: the committed physics).
        **_physics_label(scenario),
        "seeds": seeds,
        "policies": {},
    }
    bounds = []
    raw: dict[str, list[SimulationResult]] = {}
    for seed in seeds:
        for name in policies:
            started = time.monotonic()
            jobs = build_jobs(scenario, nodes, seed)
            sim = build_simulation(scenario, name, seed, jobs, mode=mode, load_state=load_state)
            if name == policies[0]:
                bounds.append(lower_bound(sim, jobs))  # before the run: it needs the jobs untouched
            result = sim.run()
            if saved_state is not None:
                saved_state[name] = sim.policy.state()
            raw.setdefault(name, []).append(result)
            if progress:
                progress(
                    f"{scenario.name}: {name} seed {seed}: makespan {result.makespan_s:.0f} s, "
                    f"{result.events} events in {time.monotonic() - started:.1f} s"
                )
    out["lower_bound"] = {k: _finite_mean([b[k] for b in bounds]) for k in bounds[0]}
    out["lower_bound_per_seed"] = [
        {k: (None if math.isnan(v) else v) for k, v in b.items()} for b in bounds
    ]  # each seed's, in the order of ``seeds`` (a bound holds seed by seed)
    for name, results in raw.items():
        runs = [summarise(r) for r in results]
        first = runs[0]
        out["policies"][name] = {
            **{
                k: _mean(runs, k)
                for k in (
                    "makespan_s",
                    "mean_job_time_s",
                    "p50_job_time_s",
                    "p95_job_time_s",
                    "mean_starvation_s",
                    "mean_reduce_idle_s",
                    "throughput_work_per_s",
                )
            },
            # Each seed's jobs too when there are few (per-job comparisons over seeds, e.g. seed 000 Fig 11).
            "per_seed": [{k: v for k, v in r.items() if k != "jobs" or len(v) <= 50} for r in runs],
            "locality": _mean_of_dicts([r["locality"] for r in runs]),
            "mean_job_time_by_user_s": _mean_of_dicts(
                [r["mean_job_time_by_user_s"] for r in runs], missing=None
            ),
            "makespan_sd_s": statistics.pstdev(r["makespan_s"] for r in runs),
            "makespan_min_s": min(r["makespan_s"] for r in runs),
            "makespan_max_s": max(r["makespan_s"] for r in runs),
            "map_times": map_time_summary(results),
            "failed_jobs": sum(r["failed_jobs"] for r in runs),
            "jobs": first["jobs"],
        }
        if "detection" in first:
            out["policies"][name]["detection"] = summarise_detection([r["detection"] for r in runs])
            for r in out["policies"][name]["per_seed"][1:]:  # the first seed's series and timeline suffice
                r["detection"] = {k: v for k, v in r["detection"].items() if k not in ("series", "timeline")}
    return out, {name: results[0] for name, results in raw.items()}
