"""Run a scenario under several policies and seeds, side by side, with the lower bound on makespan."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from mrsched.core.catalog import application, expand_layout
from mrsched.core.model import Job
from mrsched.core.physics import isolated_duration
from mrsched.core.policy import Oracle
from mrsched.policies import make_policy
from mrsched.simulator.engine import Simulation, SimulationResult
from mrsched.simulator.scenario import Scenario
from mrsched.simulator.workload import build_jobs


def lower_bound(sim: Simulation, jobs: list[Job]) -> dict[str, float]:
    """No schedule can finish before either bound (both ignore contention and noise, so both are optimistic):

    * work: everything from the first submission on, with the cluster's whole CPU and disk capability busy:
      first submit + max(Σ θc / Σ_n κc·cores, Σ θd / Σ_n κd), demands at their best node (local input);
    * critical path: each job's submission plus its fastest map and, after it, its fastest reduce, on the
      best node for each.
    """
    caps = sim.noise_free_capabilities
    cpu_capacity = sum(c.cpu_rate * c.cores for c in caps.values())
    disk_capacity = sum(c.disk_rate for c in caps.values())
    cpu_work = disk_work = 0.0
    critical = 0.0
    for job in jobs:
        fastest: dict[str, float] = {}
        for task in job.maps + job.reduces:
            demand = application(job.app).profile(task.kind).demand(task.input_mb)  # all input local
            cpu_work += demand.cpu_s
            disk_work += demand.disk_s
            best = min(isolated_duration(cap, demand) for cap in caps.values())
            fastest[task.kind] = min(fastest.get(task.kind, float("inf")), best)
        critical = max(critical, job.submit_s + fastest.get("map", 0.0) + fastest.get("reduce", 0.0))
    first = min((j.submit_s for j in jobs), default=0.0)
    work = first + max(cpu_work / cpu_capacity, disk_work / disk_capacity)
    return {"makespan_s": max(work, critical), "work_bound_s": work, "critical_path_s": critical}


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
        "locality": {k: v / total_maps for k, v in sorted(result.locality.items())},
        "throughput_work_per_s": result.throughput,
        "failed_jobs": sum(1 for j in result.jobs if j.failed),
        "failed_attempts": result.tasks_failed,
        "tasks_started": result.tasks_started,
        "events": result.events,
        "jobs": [
            {"id": j.id, "user": j.user, "submit_s": j.submit_s, "start_s": j.start_s, "finish_s": j.finish_s}
            for j in result.jobs
        ],
    }


def _mean(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(r[key] for r in runs)


def run_scenario(
    scenario: Scenario,
    policies: list[str] | None = None,
    seeds: list[int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, SimulationResult]]:
    """Every policy on every seed (identical workload per seed), and the lower bound: the summary that
    results.json holds, and each policy's first-seed result (for plots)."""
    policies = policies or scenario.policies
    seeds = seeds or scenario.seeds
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes)]
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "source": scenario.source,
        "headline": scenario.headline,
        "seeds": seeds,
        "policies": {},
    }
    bounds = []
    raw: dict[str, list[SimulationResult]] = {}
    for seed in seeds:
        for name in policies:
            started = time.monotonic()
            jobs = build_jobs(scenario, nodes, seed)

            def factory(oracle: Oracle, name: str = name, seed: int = seed) -> Any:
                return make_policy(name, seed=seed, oracle=oracle)

            sim = Simulation(scenario.cluster, jobs, factory, seed=seed)
            if name == policies[0]:
                bounds.append(lower_bound(sim, jobs))  # before the run: it needs the jobs untouched
            result = sim.run()
            raw.setdefault(name, []).append(result)
            if progress:
                progress(
                    f"{scenario.name}: {name} seed {seed}: makespan {result.makespan_s:.0f} s, "
                    f"{result.events} events in {time.monotonic() - started:.1f} s"
                )
    out["lower_bound"] = {k: statistics.fmean(b[k] for b in bounds) for k in bounds[0]}
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
                    "throughput_work_per_s",
                )
            },
            "per_seed": [{k: v for k, v in r.items() if k != "jobs"} for r in runs],
            "locality": first["locality"],
            "mean_job_time_by_user_s": first["mean_job_time_by_user_s"],
            "failed_jobs": sum(r["failed_jobs"] for r in runs),
            "jobs": first["jobs"],
        }
    return out, {name: results[0] for name, results in raw.items()}
