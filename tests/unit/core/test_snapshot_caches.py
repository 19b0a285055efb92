"""The snapshot's caches (slot totals, per-version and per-jobs-version memos, task counts) and the policies'
(DARA's sync) change how fast a round runs, never what it decides.

The Hadoop baselines read cluster-wide sums on every heartbeat (ClusterStatus.getMaxMapTasks, the load factor's
remaining tasks, exceededPadding); the snapshot keeps them between changes. A cache that misses an invalidation
would change placements silently, so the last test replays whole runs with and without the caches and compares
every result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement, Task, TaskType, pending_of
from mrsched.policies.dara import Dara
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import Scenario


def _snapshot() -> ClusterSnapshot:
    nodes = {f"n{i}": Node(f"n{i}", 4, 8192, map_slots=2 + i, reduce_slots=1) for i in range(3)}
    job = Job("j", "wordcount", 0.0, [Task("j", "map", i, 64.0) for i in range(4)], [Task("j", "reduce", 0)])
    return ClusterSnapshot(0.0, nodes, {n: [] for n in nodes}, [job])


def test_slot_total_follows_replaced_and_added_nodes() -> None:
    snap = _snapshot()
    assert (snap.slot_total("map"), snap.slot_total("reduce")) == (2 + 3 + 4, 3)
    snap.replace_node("n1", replace(snap.nodes["n1"], map_slots=7, reduce_slots=0))
    assert (snap.slot_total("map"), snap.slot_total("reduce")) == (2 + 7 + 4, 2)
    snap.nodes["n9"] = Node("n9", 4, 8192, map_slots=5, reduce_slots=2)  # a node joined: recounted
    assert (snap.slot_total("map"), snap.slot_total("reduce")) == (2 + 7 + 4 + 5, 4)


def test_memo_is_recomputed_when_a_job_or_attempt_changes() -> None:
    snap = _snapshot()
    calls: list[int] = []

    def running_maps() -> int:
        calls.append(1)
        return sum(j.running_maps for j in snap.jobs)

    assert snap.memo("running", running_maps) == 0
    assert snap.memo("running", running_maps) == 0
    assert len(calls) == 1  # kept while nothing changed
    snap.commit(Placement(snap.jobs[0].maps[0], "n0", Explanation("test", 0.0, "setup")))
    assert snap.memo("running", running_maps) == 1  # a placement is a change
    snap.jobs[0].running_maps -= 1
    snap.touch()  # the owner's way of saying a task ended
    assert snap.memo("running", running_maps) == 0
    assert len(calls) == 3


def test_memo_is_recomputed_when_a_node_is_replaced() -> None:
    # What memo keeps may read a node's slots (coupling's nodes with a free slot): a replaced node (self-adaptive
    # slots' new slot count, a fault's slowdown) changes neither jobs nor attempts, but must not be served stale.
    snap = _snapshot()

    def with_free_map_slot() -> list[str]:
        return [n for n in snap.nodes if snap.free_slots(n, "map") > 0]

    assert snap.memo("free", with_free_map_slot) == ["n0", "n1", "n2"]
    snap.replace_node("n1", replace(snap.nodes["n1"], map_slots=0))
    assert snap.memo("free", with_free_map_slot) == ["n0", "n2"]


def test_task_counts_and_jobs_memo_survive_placements_and_follow_the_owners_changes() -> None:
    """running_tasks / pending_tasks are kept exact by commit (no recount), memo_jobs' values too (a placement
    does not change them), and the owner's touch recounts and recomputes."""
    snap = _snapshot()
    job = snap.jobs[0]
    job.reduce_slowstart = 0.5
    calls: list[int] = []

    def order() -> list[str]:
        calls.append(1)
        return [j.id for j in snap.jobs]

    def recount() -> tuple[int, int, int, int]:
        return (
            sum(j.running_maps for j in snap.jobs),
            sum(j.running_reduces for j in snap.jobs),
            sum(pending_of(j, "map") for j in snap.jobs),
            sum(pending_of(j, "reduce") for j in snap.jobs),
        )

    def counts() -> tuple[int, int, int, int]:
        return (
            snap.running_tasks("map"),
            snap.running_tasks("reduce"),
            snap.pending_tasks("map"),
            snap.pending_tasks("reduce"),
        )

    assert counts() == recount() == (0, 0, 4, 0)  # no reduce before slow-start
    assert snap.memo_jobs("order", order) == ["j"]
    for i, node in enumerate(("n0", "n1")):
        snap.commit(Placement(job.maps[i], node, Explanation("test", 0.0, "setup")))
        assert counts() == recount()
    snap.commit(
        Placement(job.maps[0], "n2", Explanation("test", 0.0, "a second attempt"))
    )  # not newly running
    assert counts() == recount() == (2, 0, 2, 0)
    assert snap.memo_jobs("order", order) == ["j"] and len(calls) == 1, "placements leave it as it was"
    # The owner: two maps end, slow-start is past, so the reduce is pending.
    job.running_maps, job.finished_maps = 0, 2
    job.maps[0].running = job.maps[1].running = False
    snap.touch()
    assert counts() == recount() == (0, 0, 2, 1)
    assert snap.memo_jobs("order", order) == ["j"] and len(calls) == 2
    snap.commit(Placement(job.reduces[0], "n0", Explanation("test", 0.0, "the reduce")))
    assert counts() == recount() == (0, 1, 2, 0)


def _uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    def slot_total(self: ClusterSnapshot, kind: TaskType) -> int:
        return sum(self.capacity(name, kind) for name in self.nodes)  # a slot node's capacity is its slots

    def running_tasks(self: ClusterSnapshot, kind: TaskType) -> int:
        return sum(j.running(kind) for j in self.jobs)

    def pending_tasks(self: ClusterSnapshot, kind: TaskType) -> int:
        return sum(pending_of(j, kind) for j in self.jobs)

    sync = Dara._sync

    def sync_always(self: Dara, snapshot: ClusterSnapshot) -> None:
        self._synced = None  # nothing seen: the whole sync runs
        sync(self, snapshot)

    monkeypatch.setattr(ClusterSnapshot, "slot_total", slot_total)
    monkeypatch.setattr(ClusterSnapshot, "memo", lambda self, key, compute: compute())
    monkeypatch.setattr(ClusterSnapshot, "memo_jobs", lambda self, key, compute: compute())
    monkeypatch.setattr(ClusterSnapshot, "running_tasks", running_tasks)
    monkeypatch.setattr(ClusterSnapshot, "pending_tasks", pending_tasks)
    monkeypatch.setattr(Dara, "_sync", sync_always)


def _scenario(concurrency: str = "slots") -> Scenario:
    """Ten nodes of three classes (padding applies above 3), jobs with and without reduces arriving while
    others run, so the load factor, the padding and the fair shares all move during the run."""
    jobs: list[dict[str, Any]] = []
    for i in range(14):
        app = ("wordcount", "terasort", "grep")[i % 3]
        jobs.append(
            {
                "id": f"j{i}",
                "app": app,
                "submitS": 20 * i,
                "maps": 6 + 5 * (i % 4),
                "reduces": i % 3,
                "inputMBPerMap": 64,
                "user": f"u{i % 3}",
            }
        )
    return Scenario.model_validate(
        {
            "name": "cache-equivalence",
            "source": "test",
            "headline": "test",
            "cluster": {
                "nodes": [
                    {"class": "small", "count": 3, "rack": "r1"},
                    {"class": "medium", "count": 4, "rack": "r1"},
                    {"class": "large", "count": 3, "rack": "r2"},
                ],
                "mapSlots": 2,
                "reduceSlots": 1,
                "concurrency": concurrency,
            },
            "workload": {"jobs": jobs},
            "policies": [
                "fifo",
                "fair",
                "capacity",
                "adaptive-slots",
                "lsps",
                "coupling",
                "dara",
                "diagnosis",
            ],
            "seeds": [1],
        }
    )


@pytest.mark.parametrize(("mode", "concurrency"), [("hadoop", "slots"), ("kubernetes", "requests")])
def test_whole_runs_are_identical_with_and_without_the_caches(
    mode: str, concurrency: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _scenario(concurrency)
    cached, _ = run_scenario(scenario, mode=mode)  # type: ignore[arg-type]
    _uncached(monkeypatch)
    plain, _ = run_scenario(scenario, mode=mode)  # type: ignore[arg-type]
    for name in scenario.policies:
        assert cached["policies"][name]["per_seed"] == plain["policies"][name]["per_seed"], name
    assert cached == plain
