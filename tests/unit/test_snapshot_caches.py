"""The snapshot's caches (slot totals, per-version memo) change how fast a round runs, never what it decides.

The Hadoop baselines read cluster-wide sums on every heartbeat (ClusterStatus.getMaxMapTasks, the load factor's
remaining tasks, exceededPadding); the snapshot keeps them between changes. A cache that misses an invalidation
would change placements silently, so the last test replays whole runs with and without the caches and compares
every result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement, Task
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


def _uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    def slot_total(self: ClusterSnapshot, kind: str) -> int:
        return sum(n.map_slots if kind == "map" else n.reduce_slots for n in self.nodes.values())

    monkeypatch.setattr(ClusterSnapshot, "slot_total", slot_total)
    monkeypatch.setattr(ClusterSnapshot, "memo", lambda self, key, compute: compute())


def _scenario() -> Scenario:
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
            },
            "workload": {"jobs": jobs},
            "policies": ["fifo", "fair", "capacity", "adaptive-slots", "lsps"],
            "seeds": [1],
        }
    )


@pytest.mark.parametrize("mode", ["hadoop", "kubernetes"])
def test_whole_runs_are_identical_with_and_without_the_caches(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _scenario()
    cached, _ = run_scenario(scenario, mode=mode)  # type: ignore[arg-type]
    _uncached(monkeypatch)
    plain, _ = run_scenario(scenario, mode=mode)  # type: ignore[arg-type]
    for name in scenario.policies:
        assert cached["policies"][name]["per_seed"] == plain["policies"][name]["per_seed"], name
    assert cached == plain
