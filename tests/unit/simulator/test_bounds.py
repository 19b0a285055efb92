"""The lower bounds (mrsched.simulator.bounds) against optima found by brute force, and their parts against
closed forms: a bound below the best schedule there is, and not far below it."""

from __future__ import annotations

import itertools
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from mrsched.core.catalog import expand_layout
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement
from mrsched.core.policy import Policy
from mrsched.simulator.bound_capacity import Pieces, Resource, exact, lagrangian
from mrsched.simulator.bound_tasks import attempts_possible, srpt_completions, total_response_bound
from mrsched.simulator.bounds import lower_bound
from mrsched.simulator.engine import Simulation
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.workload import build_jobs

# One pod per node (1 core, 1 GB, pods of 1 CPU and 1 GB): a node runs one task at a time, so a task's time is
# its isolated time (its noise included) and a schedule is which node runs each task, in which order. Every
# schedule starts each task as soon as its node is free and the task may start (a reduce after slow-start):
# given the order, sooner never ends anything later, so enumerating every assignment and order finds the
# optimum of the instance.
CLASSES = {
    "one-slow": {
        "cores": 1,
        "memoryMiB": 1024,
        "physics": {"cpuRate": 1.0, "diskRate": 1.0, "overheadS": 2.0},
        "sources": {"physics": "assumption: a test machine", "cores": "assumption: a test machine"},
    },
    "one-fast": {
        "cores": 1,
        "memoryMiB": 1024,
        "physics": {"cpuRate": 2.5, "diskRate": 1.5, "overheadS": 1.0},
        "sources": {"physics": "assumption: a test machine", "cores": "assumption: a test machine"},
    },
}
INSTANCES = {
    "two jobs, a reduce": [
        {"id": "a", "app": "wordcount", "maps": 2, "reduces": 1, "inputMBPerMap": 32},
        {"id": "b", "app": "pi", "submitS": 4, "maps": 1, "reduces": 0},
    ],
    "late job": [
        {"id": "a", "app": "pi", "maps": 2, "reduces": 0},
        {"id": "b", "app": "grep", "submitS": 12, "maps": 1, "reduces": 1, "inputMBPerMap": 64},
    ],
    "three jobs": [
        {"id": "a", "app": "pi", "maps": 1, "reduces": 0},
        {"id": "b", "app": "wordcount", "submitS": 1, "maps": 1, "reduces": 0, "inputMBPerMap": 64},
        {"id": "c", "app": "pi", "submitS": 2, "maps": 2, "reduces": 0},
    ],
}


def instance(tmp_path: Path, jobs: list[dict[str, Any]]) -> Scenario:
    data = {
        "name": "brute-force",
        "source": "test",
        "headline": "test",
        "cluster": {
            "nodes": [{"class": "one-slow", "count": 1}, {"class": "one-fast", "count": 1}],
            "nodeClasses": CLASSES,
            "concurrency": "requests",
        },
        "workload": {"jobs": jobs},
        "seeds": [1],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


class Scripted(Policy):
    """Runs a given schedule: each node's tasks in the given order, each as soon as the node is free and it may
    start."""

    name = "scripted"

    def __init__(self, plan: dict[str, list[str]]) -> None:
        super().__init__()
        self.plan = {node: list(keys) for node, keys in plan.items()}

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        placed = []
        for node in nodes:
            keys = self.plan.get(node)
            if not keys or snapshot.running[node]:
                continue
            job_id = keys[0].split("/")[0]
            job = next((j for j in snapshot.jobs if j.id == job_id), None)
            if job is None:
                continue  # not submitted yet
            task = next(t for t in job.maps + job.reduces if t.key == keys[0])
            if not task.pending or (task.kind == "reduce" and not job.reduces_allowed()):
                continue
            placement = Placement(task, node, Explanation(self.name, 0.0, "the script"))
            snapshot.commit(placement)
            placed.append(placement)
            keys.pop(0)
        return placed

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])


def schedules(keys: list[str], nodes: list[str]) -> Any:
    """Every assignment of ``keys`` to ``nodes`` and every order on each node."""
    for assignment in itertools.product(nodes, repeat=len(keys)):
        groups = [[k for k, n in zip(keys, assignment, strict=True) if n == node] for node in nodes]
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            yield dict(zip(nodes, (list(o) for o in orders), strict=True))


def fresh(sc: Scenario) -> tuple[list[Job], list[str]]:
    nodes = [n.name for n in expand_layout(sc.cluster.nodes)]
    return build_jobs(sc, nodes, 1), nodes


def bound_and_optimum(sc: Scenario, mode: str) -> tuple[dict, float, float]:
    """The run's bounds, and the least makespan and mean job time over every schedule of the instance."""
    jobs, nodes = fresh(sc)
    bound = lower_bound(Simulation(sc.cluster, jobs, Scripted({}), seed=1, mode=mode), jobs)
    keys = [t.key for j in jobs for t in j.maps + j.reduces]
    best_makespan = best_mean = math.inf
    for plan in schedules(keys, nodes):
        jobs, _ = fresh(sc)
        result = Simulation(sc.cluster, jobs, Scripted(plan), seed=1, mode=mode).run(until_s=5_000.0)
        if any(r.finish_s is None for r in result.jobs):
            continue  # a reduce waiting on its node for a map ordered after it there: no schedule
        best_makespan = min(best_makespan, result.makespan_s)
        best_mean = min(best_mean, statistics.fmean(r.finish_s - r.submit_s for r in result.jobs))
    return bound, best_makespan, best_mean


@pytest.mark.parametrize("name", list(INSTANCES))
def test_the_bounds_are_at_most_the_brute_forced_optimum_and_not_far_below(tmp_path: Path, name: str) -> None:
    bound, best_makespan, best_mean = bound_and_optimum(instance(tmp_path, INSTANCES[name]), "kubernetes")
    assert bound["makespan_s"] <= best_makespan + 1e-6, (bound, best_makespan)
    assert bound["mean_job_time_s"] <= best_mean + 1e-6, (bound, best_mean)
    # Tight: the makespan bound within 20 % of the optimum here (one place per node: the LP's packing is nearly a
    # schedule; 0.87-0.94 when written), the mean job time's within a factor 2 (0.68-0.74: the jobs' own bounds
    # and one machine's SRPT leave out how they delay one another on two nodes), and no bound below the one of
    # before issue 49.
    assert bound["makespan_s"] >= 0.8 * best_makespan, (bound, best_makespan)
    assert bound["mean_job_time_s"] >= 0.5 * best_mean, (bound, best_mean)
    assert bound["makespan_s"] >= bound["old_makespan_s"]


@pytest.mark.parametrize("name", list(INSTANCES))
def test_in_hadoop_mode_the_bounds_are_at_most_the_brute_forced_optimum(tmp_path: Path, name: str) -> None:
    """Hadoop mode starts a task only at its node's heartbeat (3 s): the bound rounds pod-times up to
    heartbeats, less one for each place's last task, and stays below every schedule."""
    bound, best_makespan, best_mean = bound_and_optimum(instance(tmp_path, INSTANCES[name]), "hadoop")
    assert bound["makespan_s"] <= best_makespan + 1e-6, (bound, best_makespan)
    assert bound["mean_job_time_s"] <= best_mean + 1e-6, (bound, best_mean)


@pytest.mark.parametrize("maps, reduces", [(1, 0), (1, 1), (3, 1)])
def test_in_hadoop_mode_a_job_alone_on_one_node_ends_no_sooner_than_its_bound(
    tmp_path: Path, maps: int, reduces: int
) -> None:
    """One job on one node, each task after the last: the last task ends at its own time, not at a heartbeat
    (a bound that rounded every task up to heartbeats exceeded these runs by 0.8-1.8 s)."""
    sc = instance(tmp_path, [{"id": "a", "app": "pi", "maps": maps, "reduces": reduces}])
    cluster = sc.cluster.model_copy(update={"nodes": sc.cluster.nodes[1:]})  # the fast node alone
    node = expand_layout(cluster.nodes)[0].name
    jobs = build_jobs(sc, [node], 1)
    keys = [t.key for j in jobs for t in j.maps + j.reduces]
    bound = lower_bound(Simulation(cluster, jobs, Scripted({}), seed=1, mode="hadoop"), jobs)
    jobs = build_jobs(sc, [node], 1)
    result = Simulation(cluster, jobs, Scripted({node: keys}), seed=1, mode="hadoop").run(until_s=5_000.0)
    assert all(r.finish_s is not None for r in result.jobs)
    assert bound["makespan_s"] <= result.makespan_s + 1e-6, (bound, result.makespan_s)
    assert bound["mean_job_time_s"] <= result.jobs[0].finish_s + 1e-6


def test_a_map_may_succeed_on_a_speculative_copy_of_its_last_retry(tmp_path: Path) -> None:
    """With slots (an attempt may be OOM-killed) every retry may run, and under speculation a copy of the
    last one too (the speculator does not count attempts): one more map attempt the bound must consider."""
    sc = instance(tmp_path, INSTANCES["three jobs"])
    cluster = sc.cluster.model_copy(update={"concurrency": "slots"})
    jobs, _ = fresh(sc)
    sim = Simulation(cluster, jobs, Scripted({}), seed=1, mode="kubernetes")
    assert sim.speculator.spec.enabled
    assert attempts_possible(sim, jobs[0]) == {
        "map": jobs[0].max_attempts + 1,
        "reduce": jobs[0].max_attempts,
    }


def test_srpt_completes_each_job_as_early_as_any_schedule_of_one_machine() -> None:
    # Sizes 4 and 1, both at 0, rate 1: the short first, at 1, then the long at 5 (the long first: 4 and 5).
    assert srpt_completions(np.array([0.0, 0.0]), np.array([4.0, 1.0]), 1.0).tolist() == pytest.approx([1, 5])
    # A short job arriving at 1 preempts the long one: short 1-2, long 0-1 and 2-5.
    assert srpt_completions(np.array([0.0, 1.0]), np.array([4.0, 1.0]), 1.0).tolist() == pytest.approx([2, 5])
    assert srpt_completions(np.array([0.0, 10.0]), np.array([2.0, 2.0]), 2.0).tolist() == pytest.approx(
        [1, 11]
    )
    # Each job's own bound and SRPT's completions, matched in sorted order: max(3, 1) + max(4, 5) - 0 - 0.
    release = np.array([0.0, 0.0])
    assert total_response_bound(release, np.array([4.0, 3.0]), np.array([4.0, 1.0]), 1.0) == pytest.approx(
        8.0
    )


def test_the_lagrangian_bound_is_below_the_lp_and_equal_to_it_for_alike_tasks() -> None:
    rng = np.random.default_rng(1)
    weight = rng.uniform(1.0, 4.0, (30, 3)) * np.array([1.0, 0.5, 2.0])  # three nodes of three speeds
    pieces = Pieces(np.arange(30), np.repeat([0.0, 5.0, 9.0], 10), weight)
    places = [Resource(np.array([2.0, 1.0, 3.0]), np.ones(30))]
    lp, dual = exact(pieces, places, np.arange(30)), lagrangian(pieces, places)
    assert dual <= lp + 1e-6 and dual > 0.8 * lp
    alike = Pieces(np.arange(30), np.zeros(30), np.tile([2.0, 1.0, 4.0], (30, 1)))
    assert lagrangian(alike, places) == pytest.approx(exact(alike, places, np.arange(30)), rel=1e-5)
