"""Run a scenario under several policies and seeds, side by side, with the lower bound on makespan."""

from __future__ import annotations

import math
import multiprocessing
import resource
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from mrsched.core.catalog import expand_layout
from mrsched.core.model import Job
from mrsched.core.policy import TruePhysics
from mrsched.core.yarn import Res
from mrsched.policies import make_policy
from mrsched.simulator.bounds import lower_bound
from mrsched.simulator.detection import summarise_detection
from mrsched.simulator.engine import Simulation, SimulationResult
from mrsched.simulator.fitted import target_fitted_constants
from mrsched.simulator.parity import offline_inputs, share_offline_inputs
from mrsched.simulator.scenario import PlacementMode, Scenario, policy_name
from mrsched.simulator.summary import (
    finite_mean,
    map_time_summary,
    mean_of_dicts,
    mean_over,
    physics_label,
    summarise,
)
from mrsched.simulator.workload import build_jobs
from mrsched.simulator.yarn import YarnSimulation, yarn_scheduler


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


def build_yarn_simulation(scenario: Scenario, name: str, seed: int, jobs: list[Job]) -> YarnSimulation:
    """The YARN-mode simulation of policy entry ``name`` (YARN's ``fair`` or ``capacity``) on one seed's jobs."""
    cluster = scenario.cluster_for(name)
    return YarnSimulation(
        cluster,
        jobs,
        yarn_scheduler(policy_name(name), scenario.options_for(name), jobs),
        seed=seed,
        am_resource=Res(cluster.yarn.am_memory_mb, cluster.yarn.am_vcores),
        am_heartbeat_s=cluster.yarn.am_heartbeat_s,
    )


@dataclass(frozen=True)
class PlannedRun:
    """One policy entry on one seed: what a worker process needs to run it (all picklable)."""

    scenario: Scenario
    name: str
    seed: int
    mode: PlacementMode
    load_state: dict[str, Any] | None
    with_bound: bool  # the seed's first entry also computes the seed's lower bound
    with_state: bool  # return the policy's learned state after the run


@dataclass(frozen=True)
class RunOutput:
    result: SimulationResult
    bound: dict[str, float] | None
    state: dict[str, Any] | None
    seconds: float  # the whole run: jobs built, the seed's lower bound if this run computed it, the replay
    bound_seconds: float = 0.0  # of which the lower bound (once per seed, with its first policy's run)
    peak_rss_mib: float = 0.0  # the largest resident set of the process that ran it, so far


def run_one(run: PlannedRun) -> RunOutput:
    started = time.monotonic()
    scenario, name, seed = run.scenario, run.name, run.seed
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]  # input replicas go here
    jobs = build_jobs(scenario, nodes, seed)
    bound, state, bound_seconds = None, None, 0.0
    if run.mode == "yarn":
        yarn = build_yarn_simulation(scenario, name, seed, jobs)
        if run.with_bound:  # the bound is the physics', whatever runs the jobs
            bound_started = time.monotonic()
            bound = lower_bound(
                Simulation(scenario.cluster, jobs, make_policy("fifo"), seed=seed), jobs, mode="yarn"
            )
            bound_seconds = time.monotonic() - bound_started
        result = yarn.run(name)
    else:
        sim = build_simulation(scenario, name, seed, jobs, mode=run.mode, load_state=run.load_state)
        if run.with_bound:
            bound_started = time.monotonic()
            bound = lower_bound(sim, jobs)  # before the run: it needs the jobs untouched
            bound_seconds = time.monotonic() - bound_started
        result = sim.run()
        if run.with_state:
            state = sim.policy.state()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return RunOutput(result, bound, state, time.monotonic() - started, bound_seconds, peak)


#: Runs a sweep's planned runs and returns their outputs in the plan's order, calling ``report`` as each ends:
#: here (:func:`run_locally`) or elsewhere (``mrsched.clustersweep``: an Indexed Job, an index per run).
Executor = Callable[[list[PlannedRun], Callable[[PlannedRun, RunOutput], None]], list[RunOutput]]


def run_locally(workers: int) -> Executor:
    """The executor that runs ``workers`` at once on this machine, each in its own process (one: in this one)."""
    return lambda runs, report: _run_all(runs, workers, report)


def _run_all(
    runs: list[PlannedRun], workers: int, report: Callable[[PlannedRun, RunOutput], None]
) -> list[RunOutput]:
    """Each run's output, in the order of ``runs``: here one after the other, or in ``workers`` processes."""
    if workers <= 1 or len(runs) <= 1:
        outputs = []
        for run in runs:
            outputs.append(run_one(run))
            report(run, outputs[-1])
        return outputs
    # forkserver: each worker forks from a server that imported the simulator once (cheaper than spawn's import
    # per worker), not from this process, whose other threads (a test's, an operator's) may hold locks.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(max_workers=min(workers, len(runs)), mp_context=context) as pool:
        futures = {pool.submit(run_one, run): i for i, run in enumerate(runs)}
        done: dict[int, RunOutput] = {}
        for future in as_completed(futures):
            i = futures[future]
            done[i] = future.result()
            report(runs[i], done[i])
    return [done[i] for i in range(len(runs))]


def run_scenario(
    scenario: Scenario,
    policies: list[str] | None = None,
    seeds: list[int] | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    load_state: dict[str, Any] | None = None,
    saved_state: dict[str, Any] | None = None,
    mode: PlacementMode | None = None,
    workers: int = 1,
    with_bound: bool = True,
    executor: Executor | None = None,
) -> tuple[dict[str, Any], dict[str, SimulationResult]]:
    """Every policy on every seed (identical workload per seed), and the lower bound: the summary that
    results.json holds, and each policy's first-seed result (for plots). ``workers`` > 1 runs them in that
    many processes at once; each run is independent of the others (its own jobs, policy and random streams),
    so the summary is the same as a serial run's.

    Learned state (``policy.state()``, e.g. ThroughputScheduler's posteriors) as the operator keeps it across
    restarts: ``load_state`` maps a policy entry to the state every seed's run of it starts from; when
    ``saved_state`` is a dict, each entry's state after its last seed's run is written into it.

    ``with_bound=False`` leaves out the lower bound (``lower_bound`` None), which draws every task's noise on
    every node: quadratic in the cluster, over an hour for the SWIM day on 1,000 nodes (a speed benchmark's
    runs need no bound).

    ``executor`` runs the planned runs elsewhere (default: :func:`run_locally` with ``workers``); the summary is
    gathered here from their outputs in the plan's order, so it is the same bytes wherever they ran."""
    policies = policies or scenario.policies
    seeds = seeds or scenario.seeds
    mode = mode or scenario.modes[0]
    # Like for like: an offline input one policy is given (DARA's α), every policy that can use it is given.
    scenario, shared = share_offline_inputs(scenario, policies)
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "source": scenario.source,
        "headline": scenario.headline,
        # The target-fitted constants its results rest on (mrsched.simulator.fitted): never reported as met.
        "targetFitted": target_fitted_constants(scenario),
        "mode": mode,
        "concurrency": scenario.cluster.concurrency,
        # The physics it ran with: the switches on and off, speculation, stragglers.
        **physics_label(scenario.cluster),
        # What each policy was given before the run, and what was shared for parity (mrsched.simulator.parity).
        "offlineInputs": offline_inputs(scenario, policies),
        **({"parity": shared} if shared else {}),
        "seeds": seeds,
        "policies": {},
    }
    bounds = []
    raw: dict[str, list[SimulationResult]] = {}
    planned = [
        PlannedRun(
            scenario,
            name,
            seed,
            mode,
            load_state,
            with_bound and name == policies[0],
            saved_state is not None,
        )
        for seed in seeds
        for name in policies
    ]

    def report(run: PlannedRun, done: RunOutput) -> None:
        if progress:
            progress(
                f"{scenario.name}: {run.name} seed {run.seed}: makespan {done.result.makespan_s:.0f} s, "
                f"{done.result.events} events in {done.seconds:.1f} s"
                + (
                    f" (the seed's lower bound {done.bound_seconds:.1f} s of it)"
                    if done.bound is not None
                    else ""
                )
                + f", peak memory {done.peak_rss_mib:.0f} MiB"
            )

    # Gathered in the serial order whatever order they end in: results.json is the same bytes for any ``workers``.
    execute = executor or run_locally(workers)
    for run, done in zip(planned, execute(planned, report), strict=True):
        if done.bound is not None:
            bounds.append(done.bound)
        raw.setdefault(run.name, []).append(done.result)
        if saved_state is not None and done.state is not None:  # each entry's after its last seed's run
            saved_state[run.name] = done.state
    out["lower_bound"] = (
        {
            # numbers: the mean over seeds; labels (capacity_method): every seed's, once each
            k: finite_mean([b[k] for b in bounds])
            if isinstance(bounds[0][k], float)
            else ",".join(dict.fromkeys(str(b[k]) for b in bounds))
            for k in bounds[0]
        }
        if bounds
        else None
    )
    out["lower_bound_per_seed"] = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in b.items()} for b in bounds
    ]  # each seed's, in the order of ``seeds`` (a bound holds seed by seed)
    for name, results in raw.items():
        runs = [summarise(r) for r in results]
        first = runs[0]
        out["policies"][name] = {
            **{
                k: mean_over(runs, k)
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
            "locality": mean_of_dicts([r["locality"] for r in runs]),
            "mean_job_time_by_user_s": mean_of_dicts(
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
