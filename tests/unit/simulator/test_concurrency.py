"""Concurrency by requests (issue 21): a node takes tasks while their pods' requests fit its allocatable.

The core's arithmetic, the operator's default (no slot label: no cap), and every policy in the simulator's
kubernetes mode by requests: none places a pod past a node's allocatable (the engine refuses it, as a kubelet
would), and a node runs more tasks than Hadoop's default two slots when its cores allow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mrsched.core.catalog import expand_layout
from mrsched.core.model import UNCAPPED, Attempt, ClusterSnapshot, Job, Node, Resources, Task
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.snapshot import read_node, reserve_others
from mrsched.simulator.run import build_simulation, lower_bound
from mrsched.simulator.scenario import load_scenario
from mrsched.simulator.workload import build_jobs

SCENARIOS = Path(__file__).resolve().parents[3] / "bench" / "scenarios"


def _job(job_id: str, maps: int, cpu: float = 1.0, memory_mb: float = 1024.0) -> Job:
    return Job(
        job_id,
        "wordcount",
        0.0,
        [Task(job_id, "map", i) for i in range(maps)],
        [Task(job_id, "reduce", 0)],
        map_request=Resources(cpu, memory_mb),
        reduce_request=Resources(cpu, memory_mb),
    )


def _snapshot(node: Node, *jobs: Job, running: int = 0) -> ClusterSnapshot:
    attempts = [Attempt(jobs[0].maps[i], 1, node.name, 0.0) for i in range(running)]
    for a in attempts:
        a.task.running = True
    jobs[0].running_maps = running
    return ClusterSnapshot(0.0, {node.name: node}, {node.name: attempts}, list(jobs))


def test_a_by_requests_node_counts_free_tasks_by_what_its_allocatable_has_left() -> None:
    node = Node(
        "big", cores=16, memory_mb=65536.0, map_slots=UNCAPPED, reduce_slots=UNCAPPED, by_requests=True
    )
    snapshot = _snapshot(node, _job("a", 40), running=10)
    assert snapshot.capacity("big", "map") == 16
    assert snapshot.free_slots("big", "map") == 6
    assert snapshot.free_slots("big", "reduce") == 6  # maps and reduces share one allocatable
    snapshot.reserved["big"] = Resources(cpu=4.0, memory_mb=1024.0)  # another tenant's pod
    snapshot.touch()
    assert snapshot.free_slots("big", "map") == 2
    assert snapshot.capacity("big", "map") == 12
    wide = _job("wide", 1, cpu=3.0)
    snapshot.jobs.append(wide)
    snapshot.touch(jobs_changed=True)
    assert not snapshot.fits("big", wide, "map")  # 2 cores left, it asks for 3
    assert snapshot.fits("big", snapshot.jobs[0], "map")


def test_memory_binds_as_well_as_cpu_and_a_slot_cap_still_holds() -> None:
    node = Node("n", cores=32, memory_mb=8192.0, map_slots=UNCAPPED, reduce_slots=UNCAPPED, by_requests=True)
    assert _snapshot(node, _job("a", 40, memory_mb=2048.0)).free_slots("n", "map") == 4
    capped = Node("n", cores=32, memory_mb=65536.0, map_slots=3, reduce_slots=1, by_requests=True)
    snapshot = _snapshot(capped, _job("a", 40), running=2)
    assert snapshot.free_slots("n", "map") == 1 and snapshot.capacity("n", "map") == 3


def test_fixed_slots_ignore_requests_as_hadoop_1_did() -> None:
    node = Node("n", cores=1, memory_mb=512.0, map_slots=4, reduce_slots=2)
    assert _snapshot(node, _job("a", 40), running=1).free_slots("n", "map") == 3


def _node_body(labels: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": "w1", "labels": labels},
        "status": {
            "allocatable": {"cpu": "64", "memory": "256Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_the_operator_caps_nothing_without_a_slot_label_and_a_label_caps() -> None:
    config = OperatorConfig()
    node = read_node(_node_body({}), config).node
    assert node.by_requests and node.map_slots == UNCAPPED
    snapshot = _snapshot(node, _job("a", 100))
    assert snapshot.free_slots("w1", "map") == 64  # not Hadoop's 2
    labelled = read_node(_node_body({"mrsched.dev/map-slots": "3"}), config).node
    assert labelled.map_slots == 3 and labelled.by_requests
    assert OperatorConfig.from_env({"MRSCHED_MAP_SLOTS": ""}).map_slots is None
    assert OperatorConfig.from_env({"MRSCHED_MAP_SLOTS": "2"}).map_slots == 2


def test_other_pods_requests_are_reserved_beside_the_snapshots_own_attempts() -> None:
    node = read_node(_node_body({}), OperatorConfig()).node
    snapshot = _snapshot(node, _job("a", 100), running=5)
    reserve_others(snapshot, {"w1": Resources(cpu=12.0, memory_mb=12 * 1024.0)})  # 5 ours + 7 of others
    assert snapshot.reserved["w1"] == Resources(cpu=7.0, memory_mb=7 * 1024.0)
    assert snapshot.free_slots("w1", "map") == 64 - 12


CONTEST = [
    "kube-default",
    "fair",
    "throughput",
    "dara",
    "diagnosis",
    "learning",
    "adaptive-slots",
    "coupling",
    "lsps",
    "greedy-informed",
    "fifo",
]


@pytest.mark.parametrize("policy", CONTEST)
def test_no_policy_places_past_a_nodes_allocatable_and_big_nodes_run_more_than_two(policy: str) -> None:
    """gupta-ch3-comb3 by requests, kubernetes mode: the engine raises on a pod that does not fit (learning,
    which ignores slots, did before it learned requests); the 8-core nodes run more than 2 maps at once; the
    makespan is at or above the lower bound, requests bound included."""
    scenario = load_scenario(SCENARIOS / "gupta-ch3-comb3.yaml").with_concurrency("requests")
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    jobs = build_jobs(scenario, nodes, 1)
    sim = build_simulation(scenario, policy, 1, jobs, mode="kubernetes")
    bound = lower_bound(sim, jobs)
    most: dict[str, int] = {}
    round_ = sim.policy.schedule_round

    def watched(snapshot: ClusterSnapshot, offered: list[str]) -> list:  # type: ignore[type-arg]
        placed = round_(snapshot, offered)
        for name in snapshot.nodes:
            most[name] = max(most.get(name, 0), snapshot.running_on(name, "map"))
        return placed

    sim.policy.schedule_round = watched  # type: ignore[method-assign]
    result = sim.run()
    assert all(r.finish_s is not None for r in result.jobs)
    assert result.makespan_s >= bound["makespan_s"] - 1e-6
    big = [name for name, node in sim.nodes.items() if node.cores >= 8]
    assert max(most[name] for name in big) > 2
    for name, node in sim.nodes.items():
        assert most.get(name, 0) <= node.cores  # one CPU per map pod: never more maps than cores
