"""kube-default's scheduling queue against kube-scheduler v1.35's rules (mrsched.policies.kube.queue): PrioritySort,
unschedulable pods parked until a pod ends, the back-off and the backoffQ popped after the activeQ; and the
operator's reduce pods, created only once no map of their job waits for a node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from mrsched.core.catalog import expand_layout
from mrsched.core.model import Resources, Task
from mrsched.policies.kube.queue import SchedulingQueue, backoff_until
from mrsched.simulator.run import build_simulation
from mrsched.simulator.scenario import load_scenario
from mrsched.simulator.workload import build_jobs

_made = 0


def pod() -> Resources:
    """A request no other pod's is larger or smaller than in both CPU and memory: each pod is tried (one no
    smaller than a pod that fit nowhere is failed without a try, as the last test shows)."""
    global _made
    _made += 1
    return Resources(1.0 + _made, 100_000.0 - _made)


def tasks(job: str, kind: str, n: int) -> list[Task]:
    return [Task(job, kind, i) for i in range(n)]  # type: ignore[arg-type]


def popped(queue: SchedulingQueue, now: float, fits: int = 10**6) -> tuple[list[str], list[str]]:
    """(the pods tried at ``now`` in order, those bound): the first ``fits`` tried are bound."""
    tried: list[str] = []

    def bind(task: Task, priority: int, failures: int) -> bool:
        tried.append(task.key)
        return len(tried) <= fits

    queue.schedule(now, bind)
    return tried, tried[:fits]


def test_priority_first_then_the_pod_that_entered_first() -> None:
    queue = SchedulingQueue()
    early, late, urgent = tasks("a", "map", 2), tasks("b", "map", 2), tasks("c", "map", 1)
    for t in early:
        queue.add(t, 0, pod(), 0.0)
    for t in late:
        queue.add(t, 0, pod(), 5.0)
    queue.add(urgent[0], 10, pod(), 9.0)
    tried, _ = popped(queue, 10.0)
    assert tried == ["c/map/0", "a/map/0", "a/map/1", "b/map/0", "b/map/1"]


def test_a_failed_pod_waits_for_a_pod_to_end_then_queues_behind_pods_that_entered_before_it() -> None:
    queue = SchedulingQueue()
    maps = tasks("a", "map", 3)
    for t in maps:
        queue.add(t, 0, pod(), 0.0)
    assert popped(queue, 0.0, fits=1)[1] == ["a/map/0"]  # a/map/1 fails; a/map/2 is no smaller: failed too
    assert popped(queue, 3.0) == ([], [])  # parked: nothing ended, nothing is tried
    reduce = Task("b", "reduce", 0)
    queue.add(reduce, 0, pod(), 4.0)  # created at slow-start, after the maps last failed
    assert popped(queue, 4.0, fits=0)[0] == ["b/reduce/0"]  # the parked maps are not tried
    queue.assigned_pod_deleted()  # a pod ended at 20 s: the maps and the reduce may fit now
    tried, _ = popped(queue, 20.0, fits=0)
    assert tried == ["a/map/1", "a/map/2", "b/reduce/0"]  # timestamps 0, 0 and 4 s, back-offs long over
    assert (
        popped(queue, 20.0 + 5 * 60 + 1.0, fits=0)[0] == tried
    )  # after 5 min unschedulable they move anyway


def test_the_backoff_doubles_to_ten_seconds_and_a_backing_off_pod_comes_after_the_active_ones() -> None:
    queue = SchedulingQueue()
    (old,) = tasks("a", "map", 1)
    queue.add(old, 0, pod(), 0.0)
    now = 0.0
    for _ in range(5):  # five failures, each right after an event: back-off 1, 2, 4, 8, then 10 s
        queue.assigned_pod_deleted()
        popped(queue, now, fits=0)
        now += 0.5
    (fresh,) = tasks("b", "map", 1)
    queue.add(fresh, 0, pod(), now)  # created after the old pod last failed, never failed itself
    queue.assigned_pod_deleted()
    tried, _ = popped(queue, now + 3.0, fits=0)  # the old pod's 10 s back-off still runs: the backoffQ's
    assert tried == ["b/map/0", "a/map/0"]
    queue.assigned_pod_deleted()
    tried, _ = popped(queue, now + 20.0, fits=0)  # both back-offs over: PrioritySort by their last failures,
    assert tried == ["b/map/0", "a/map/0"]  # both at now + 3 s, b tried (and failed) first


def test_the_backoff_is_one_second_doubled_per_failure_up_to_ten_truncated_to_the_window() -> None:
    """``calculateBackoffDuration`` and ``alignToWindow``: 1, 2, 4, 8, then 10 s from the last failure, the
    expiry truncated to whole seconds; none before a failure."""
    failures = np.arange(0, 8)
    until = backoff_until(np.full(len(failures), 100.25), failures)
    assert until.tolist() == [0.0, 101.0, 102.0, 104.0, 108.0, 110.0, 110.0, 110.0]


def test_a_pod_larger_than_one_that_fit_nowhere_is_not_tried_but_a_smaller_one_is() -> None:
    queue = SchedulingQueue()
    big, small = Task("a", "map", 0), Task("a", "map", 1)
    queue.add(big, 0, Resources(4.0, 4096.0), 0.0)
    queue.add(Task("a", "map", 2), 0, Resources(4.0, 8192.0), 0.0)
    queue.add(small, 0, Resources(1.0, 512.0), 0.0)
    tried, _ = popped(queue, 0.0, fits=0)
    assert tried == ["a/map/0", "a/map/1"]  # a/map/2 asks for at least what a/map/0 did
    assert len(queue) == 3


SCENARIO = {
    "name": "reduces-first",
    "source": "test",
    "headline": "test",
    # 4 pods at once by requests. Without the rule the reduces (created at slow-start, after the third map ends)
    # are fresh pods that pop before the maps backing off after their failed attempts, take all 4 pods and wait
    # for maps that never get one: no job finishes (seen before the rule: every finish_s None).
    "cluster": {"nodes": [{"class": "small", "count": 2}], "concurrency": "requests"},
    "workload": {
        "jobs": [
            {
                "id": f"j{i}",
                "app": "wordcount",
                "submitS": 10 * i,
                "maps": 60,
                "reduces": 4,
                "inputMBPerMap": 16,
            }
            for i in range(3)
        ]
    },
    "seeds": [1],
}


def test_kube_default_never_lets_reduces_take_the_nodes_their_maps_wait_for(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    sc = load_scenario(path)
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = build_simulation(sc, "kube-default", 1, jobs, mode="kubernetes")
    started: list[tuple[float, Task]] = []
    schedule_round = sim.policy.schedule_round

    def recording(snapshot, nodes):  # type: ignore[no-untyped-def]
        placed = schedule_round(snapshot, nodes)
        started.extend((snapshot.now, p.task) for p in placed)
        return placed

    sim.policy.schedule_round = recording  # type: ignore[method-assign]
    result = sim.run(until_s=10_000.0)
    assert all(r.finish_s is not None for r in result.jobs), (
        "a job never finished: reduces held its maps' pods"
    )
    # The queue is no job order: the maps that failed most back off longest (10 s) and the backoffQ pops the
    # earliest expiry first, so the jobs' maps interleave; a later job starts before an earlier one's last map.
    last_j0_map = max(at for at, t in started if t.job_id == "j0" and t.kind == "map")
    first_j1 = min(at for at, t in started if t.job_id == "j1")
    assert first_j1 < last_j0_map


@pytest.mark.parametrize("bound", [True, False])
def test_the_operator_creates_reduce_pods_once_every_map_is_bound(bound: bool) -> None:
    from mrsched.operator.scheduling.unbound import maps_all_bound

    class Attempt:
        def __init__(self, node: str | None) -> None:
            self.live, self.node = True, node

    class TaskState:
        def __init__(self, succeeded: bool, node: str | None) -> None:
            self.succeeded = succeeded
            self.attempts = [] if succeeded else [Attempt(node)]

    class State:
        def of(self, kind: str) -> list[TaskState]:
            return [TaskState(True, None), TaskState(False, "n1"), TaskState(False, "n2" if bound else None)]

    assert maps_all_bound(State()) is bound  # type: ignore[arg-type]
