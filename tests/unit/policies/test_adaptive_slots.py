"""Seed 001's adaptive slots (Elkholy & Sallam, Algorithm 1), hand-computed heartbeat by heartbeat."""

from __future__ import annotations

import json

import pytest

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, NodeMetrics, Placement, Task
from mrsched.core.policy import PolicyConfigError
from mrsched.policies import make_policy
from mrsched.policies.adaptive_slots import AdaptiveSlots, AdaptiveSlotsConfig

U_STAR = 0.95


def make_node(name: str = "n0", threads: int = 4) -> Node:
    # Configured slots 2/2 (Hadoop's default): the policy must use its own m_i, r_i instead.
    return Node(name, threads, 4096.0, map_slots=2, reduce_slots=2)


def make_job(
    job_id: str, maps: int, reduces: int = 0, *, user: str = "u", submit: float = 0.0, finished_maps: int = 0
) -> Job:
    job = Job(
        job_id,
        "x",
        submit,
        [Task(job_id, "map", i) for i in range(maps)],
        [Task(job_id, "reduce", i) for i in range(reduces)],
        user=user,
    )
    for task in job.maps[:finished_maps]:
        task.done = True
    job.finished_maps = finished_maps
    return job


def fresh(u: float | None) -> NodeMetrics:
    return NodeMetrics(cpu_utilisation=u, age_s=1.0, status="fresh")


def make_snapshot(jobs: list[Job], u: float | None = 0.5, nodes: tuple[Node, ...] = ()) -> ClusterSnapshot:
    nodes = nodes or (make_node(),)
    return ClusterSnapshot(
        0.0, {n.name: n for n in nodes}, {n.name: [] for n in nodes}, jobs, {n.name: fresh(u) for n in nodes}
    )


def occupy(snapshot: ClusterSnapshot, job: Job, kind: str, count: int, node: str = "n0") -> None:
    """Start ``count`` pending tasks of ``job`` on ``node`` (what earlier heartbeats placed)."""
    pending = [t for t in job.tasks("map" if kind == "map" else "reduce") if t.pending]
    for task in pending[:count]:
        snapshot.commit(Placement(task, node, Explanation("test", 0.0, "setup")))


def started(maps: int, reduces: int, **options: object) -> AdaptiveSlots:
    """A policy past n0's first heartbeat, at (maps, reduces) slots."""
    policy = AdaptiveSlots(AdaptiveSlotsConfig.model_validate(options))
    policy.load_state({"nodes": {"n0": {"mapSlots": maps, "reduceSlots": reduces}}})
    return policy


# --- first heartbeat ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("threads", "expected"), [(4, (4, 2)), (2, (2, 2)), (12, (8, 2)), (1, (1, 2))])
def test_first_heartbeat_sets_map_slots_to_hardware_threads_and_two_reduce_slots(
    threads: int, expected: tuple[int, int]
) -> None:
    policy = AdaptiveSlots()
    assert policy.slots("n0") is None
    snapshot = make_snapshot([make_job("A", 20)], u=0.1, nodes=(make_node(threads=threads),))
    # All slots full, maps pending and U < U*: still no growth on the first heartbeat (init only).
    decision, _ = policy.update_slots(snapshot, "n0")
    assert decision == "init"
    assert policy.slots("n0") == expected


def test_first_heartbeat_needs_no_metrics() -> None:
    policy = AdaptiveSlots()
    snapshot = make_snapshot([make_job("A", 20)])
    snapshot.metrics.clear()
    assert policy.update_slots(snapshot, "n0")[0] == "init"
    assert policy.slots("n0") == (4, 2)


# --- growth (U < U*) --------------------------------------------------------------------------------------


def test_grows_a_map_slot_when_all_are_busy_and_maps_are_pending() -> None:
    policy = started(4, 2)
    job = make_job("A", 20)
    snapshot = make_snapshot([job], u=0.62)
    occupy(snapshot, job, "map", 4)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "grow-map" and policy.slots("n0") == (5, 2)
    assert "U 0.62 < U* 0.95" in why and "all 4 map slots busy" in why and "16 maps pending" in why


def test_only_one_slot_changes_per_heartbeat_maps_first() -> None:
    policy = started(4, 2)
    job = make_job("A", 20, 5, finished_maps=1)  # 1 of 20 maps done: past the 5 % slow-start
    snapshot = make_snapshot([job])
    occupy(snapshot, job, "map", 4)
    occupy(snapshot, job, "reduce", 2)
    policy.update_slots(snapshot, "n0")
    assert policy.slots("n0") == (5, 2)  # both types full with work pending: the map slot only
    occupy(snapshot, job, "map", 1)
    policy.update_slots(snapshot, "n0")  # a second round on the same utilisation sample: no second step
    assert policy.slots("n0") == (5, 2)
    snapshot.now += 3.0  # the next heartbeat, with a newer sample (age 1 s again)
    policy.update_slots(snapshot, "n0")
    assert policy.slots("n0") == (6, 2)


@pytest.mark.parametrize(
    ("maps", "running_maps", "total_maps", "case"),
    [(4, 3, 20, "map slot free"), (4, 4, 4, "no maps pending"), (8, 8, 20, "map slots at max")],
)
def test_grows_a_reduce_slot_only_when_the_map_branch_is_not_taken(
    maps: int, running_maps: int, total_maps: int, case: str
) -> None:
    policy = started(maps, 2)
    mapper = make_job("M", total_maps)
    reducer = make_job(
        "R", 1, 5, finished_maps=1
    )  # its maps are done: reduces allowed, 3 pending after 2 run
    snapshot = make_snapshot([mapper, reducer])
    occupy(snapshot, mapper, "map", running_maps)
    occupy(snapshot, reducer, "reduce", 2)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "grow-reduce", case
    assert policy.slots("n0") == (maps, 3)
    assert "3 reduces pending" in why


def test_reduces_of_jobs_before_slow_start_do_not_count_as_pending() -> None:
    policy = started(4, 2)
    done = make_job("A", 1, 2, finished_maps=1)
    early = make_job("B", 100, 3)  # 0 of 100 maps done: its reduces may not start yet (A4)
    snapshot = make_snapshot([done, early])
    occupy(snapshot, done, "reduce", 2)  # reduce slots full; map slots all free
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "kept" and policy.slots("n0") == (4, 2)
    assert "no reduces pending" in why


def test_no_growth_when_each_type_has_a_free_slot() -> None:
    policy = started(4, 2)
    job = make_job("A", 20, 5, finished_maps=1)
    snapshot = make_snapshot([job], u=0.1)
    occupy(snapshot, job, "map", 3)
    occupy(snapshot, job, "reduce", 1)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "kept" and policy.slots("n0") == (4, 2)
    assert "1 map slot free" in why and "1 reduce slot free" in why


def test_no_growth_at_the_maximum() -> None:
    policy = started(8, 4)
    job = make_job("A", 20, 10, finished_maps=1)
    snapshot = make_snapshot([job], u=0.1)
    occupy(snapshot, job, "map", 8)
    occupy(snapshot, job, "reduce", 4)
    assert policy.update_slots(snapshot, "n0")[0] == "kept"
    assert policy.slots("n0") == (8, 4)


def test_no_growth_without_pending_work() -> None:
    policy = started(4, 2)
    job = make_job("A", 4, 2, finished_maps=0)
    job_done = make_job("B", 1, 2, finished_maps=1)
    snapshot = make_snapshot([job, job_done], u=0.1)
    occupy(snapshot, job, "map", 4)
    occupy(snapshot, job_done, "reduce", 2)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "kept" and policy.slots("n0") == (4, 2)
    assert "no maps pending" in why and "no reduces pending" in why


# --- shrinking (U >= U*) ------------------------------------------------------------------------------------


def test_utilisation_equal_to_the_target_takes_the_shrink_branch() -> None:
    policy = started(4, 2)
    job = make_job("A", 20)
    snapshot = make_snapshot([job], u=U_STAR)
    occupy(snapshot, job, "map", 3)  # one idle map slot; below U* this would be "kept" (a free slot)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "shrink-map" and policy.slots("n0") == (3, 2)
    assert "U 0.95 >= U* 0.95" in why


def test_shrinks_an_idle_map_slot_before_a_reduce_slot() -> None:
    policy = started(4, 2)
    snapshot = make_snapshot([make_job("A", 20)], u=0.99)  # every slot idle
    assert policy.update_slots(snapshot, "n0")[0] == "shrink-map"
    assert policy.slots("n0") == (3, 2)


def test_shrinks_a_reduce_slot_when_no_map_slot_is_idle() -> None:
    policy = started(4, 2)
    job = make_job("A", 20, 2, finished_maps=1)
    snapshot = make_snapshot([job], u=0.99)
    occupy(snapshot, job, "map", 4)
    occupy(snapshot, job, "reduce", 1)
    assert policy.update_slots(snapshot, "n0")[0] == "shrink-reduce"
    assert policy.slots("n0") == (4, 1)


def test_shrinks_a_reduce_slot_when_map_slots_are_at_the_minimum() -> None:
    policy = started(1, 2)
    snapshot = make_snapshot([make_job("A", 20)], u=0.99)  # the one map slot is idle but at m_Min
    assert policy.update_slots(snapshot, "n0")[0] == "shrink-reduce"
    assert policy.slots("n0") == (1, 1)


def test_no_shrink_at_the_minimum() -> None:
    policy = started(1, 1)
    snapshot = make_snapshot([make_job("A", 20)], u=1.0)
    decision, why = policy.update_slots(snapshot, "n0")
    assert decision == "kept" and policy.slots("n0") == (1, 1)
    assert "map slots at min 1" in why and "reduce slots at min 1" in why


def test_no_shrink_when_every_slot_is_busy_and_no_task_is_killed() -> None:
    policy = started(4, 2)
    job = make_job("A", 20, 2, finished_maps=1)
    snapshot = make_snapshot([job], u=1.0)
    occupy(snapshot, job, "map", 4)
    occupy(snapshot, job, "reduce", 2)
    placements = policy.assign(snapshot, "n0")
    assert placements == [] and policy.slots("n0") == (4, 2)  # A6: the overloaded node stays where it is
    assert snapshot.running_on("n0", "map") == 4 and snapshot.running_on("n0", "reduce") == 2
    assert policy.state()["nodes"]["n0"]["changes"] == 0


# --- metrics fallback ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metrics", "said"),
    [
        (NodeMetrics(age_s=60.0, status="stale"), "metrics stale: slot counts kept"),
        (NodeMetrics(status="missing"), "metrics missing: slot counts kept"),
        (NodeMetrics(status="unavailable"), "metrics unavailable: slot counts kept"),
        (None, "metrics missing: slot counts kept"),
        (fresh(None), "no CPU utilisation: slot counts kept"),
    ],
)
def test_unusable_metrics_keep_the_slot_counts_and_still_assign(
    metrics: NodeMetrics | None, said: str
) -> None:
    policy = started(4, 2)
    job = make_job("A", 20)
    snapshot = make_snapshot([job])
    if metrics is None:
        snapshot.metrics.clear()
    else:
        snapshot.metrics["n0"] = metrics
    occupy(snapshot, job, "map", 3)  # full after one more: with U known and low this would grow next time
    placements = policy.assign(snapshot, "n0")
    assert [p.task.kind for p in placements] == ["map"]  # within the kept 4 map slots
    assert said in placements[0].explanation.reason
    assert policy.assign(snapshot, "n0") == []  # full, U unknown: no growth, nothing placed
    assert policy.slots("n0") == (4, 2)
    node_state = policy.state()["nodes"]["n0"]
    assert node_state["fallbacks"] == 2 and node_state["changes"] == 0
    assert node_state["metrics"] == (metrics.status if metrics is not None else "missing")


# --- filling the slots ----------------------------------------------------------------------------------------


def test_tasks_go_into_the_grown_slot_only() -> None:
    policy = started(4, 2)
    job = make_job("A", 20)
    snapshot = make_snapshot([job], u=0.62)
    occupy(snapshot, job, "map", 4)
    placements = policy.assign(snapshot, "n0")
    assert [p.task.kind for p in placements] == ["map"]  # m_i 5 − 4 running = exactly one
    explanation = placements[0].explanation
    assert explanation.policy == "adaptive-slots"
    assert explanation.reason.startswith("map slots 5, reduce slots 2 (+1 map slot: U 0.62 < U* 0.95")
    assert "; Fair order: pool u furthest below its share" in explanation.reason


def test_the_node_in_the_snapshot_is_left_as_it_was() -> None:
    policy = AdaptiveSlots()
    snapshot = make_snapshot([make_job("A", 20)])
    node = snapshot.nodes["n0"]
    assert len(policy.assign(snapshot, "n0")) == 4  # m_i = 4 threads, not the node's 2 configured slots
    assert snapshot.nodes["n0"] is node and node.map_slots == 2


def test_free_slots_are_filled_in_one_heartbeat_unless_fair_says_otherwise() -> None:
    job = make_job("A", 20, 5, finished_maps=1)
    snapshot = make_snapshot([job])
    placed = AdaptiveSlots().assign(snapshot, "n0")
    assert [p.task.kind for p in placed].count("map") == 4 and [p.task.kind for p in placed].count(
        "reduce"
    ) == 2
    one = make_policy("adaptive-slots", {"fair": {"assignMultiple": False}})
    job2 = make_job("B", 20, 5, finished_maps=1)
    placed = one.assign(make_snapshot([job2]), "n0")
    # Hadoop 1.x without assignmultiple: one task per heartbeat, the kind the node runs fewer of (maps on a tie;
    # FairScheduler.assignTasks, FairScheduler.java:480-504 at release-1.2.1).
    assert [p.task.kind for p in placed] == ["map"]


def test_jobs_get_the_free_slots_in_fair_order() -> None:
    policy = AdaptiveSlots()
    nodes = (make_node("n0"), make_node("n1"))
    first = make_job("A", 20, user="alice", submit=0.0)
    second = make_job("B", 20, user="bob", submit=1.0)
    snapshot = make_snapshot([first, second], nodes=nodes)
    occupy(snapshot, first, "map", 3, node="n1")
    placements = policy.assign(snapshot, "n0")
    # bob's pool runs 0 maps, alice's 3: bob gets slots until both run 3, then the tie goes to the earlier
    # pool (alice). FIFO would have given all four to A.
    assert [p.task.job_id for p in placements] == ["B", "B", "B", "A"]


# --- state, options ---------------------------------------------------------------------------------------


def test_state_round_trips_and_a_restored_node_is_not_reinitialised() -> None:
    policy = AdaptiveSlots()
    job = make_job("A", 50)
    snapshot = make_snapshot([job], u=0.5)
    policy.assign(snapshot, "n0")  # init: 4 maps placed
    for _ in range(2):  # two heartbeats, each with a newer sample: grow to 5, then to 6
        snapshot.now += 3.0
        policy.assign(snapshot, "n0")
    saved = json.loads(json.dumps(policy.state()))
    assert saved == {
        "nodes": {
            "n0": {
                "mapSlots": 6,
                "reduceSlots": 2,
                "cpuUtilisation": 0.5,
                "metrics": "fresh",
                "changes": 2,
                "fallbacks": 0,
            }
        }
    }
    restored = AdaptiveSlots()
    restored.load_state(saved)
    assert restored.slots("n0") == (6, 2) and restored.slot_counts() == {"n0": (6, 2)}
    snapshot.metrics["n0"] = NodeMetrics(status="unavailable")
    restored.assign(snapshot, "n0")
    assert restored.slots("n0") == (6, 2)  # not back to 4/2 threads
    assert restored.state()["nodes"]["n0"]["changes"] == 2


def test_load_state_tolerates_empty_and_partial_state() -> None:
    policy = AdaptiveSlots()
    policy.load_state({})
    policy.load_state(
        {"nodes": {"n0": {"mapSlots": 5}, "n1": "junk", "n2": {"mapSlots": 20, "reduceSlots": 0}}}
    )
    assert policy.slots("n0") is None
    assert policy.slots("n2") == (8, 1)  # clamped to today's bounds


@pytest.mark.parametrize(
    "options",
    [
        {"maxMapSlots": 0},
        {"minMapSlots": 5, "maxMapSlots": 4},
        {"minReduceSlots": 3, "maxReduceSlots": 2},
        {"utilisationTarget": 0.0},
        {"utilisationTarget": 1.5},
        {"fair": {"jobOrder": "random"}},
        {"fair": {"noSuchOption": 1}},
        {"noSuchOption": 1},
    ],
)
def test_bad_options_are_rejected(options: dict[str, object]) -> None:
    with pytest.raises(PolicyConfigError):
        make_policy("adaptive-slots", options)


def test_options_reach_the_policy_and_its_fair() -> None:
    policy = make_policy(
        "adaptive-slots",
        {"utilisationTarget": 0.8, "maxMapSlots": 3, "initialReduceSlots": 1, "fair": {"poolBy": "queue"}},
    )
    assert isinstance(policy, AdaptiveSlots) and policy.needs_metrics
    assert policy.fair.cfg.assign_multiple and policy.fair.cfg.pool_by == "queue"
    snapshot = make_snapshot([make_job("A", 20)], u=0.85)
    policy.assign(snapshot, "n0")
    assert policy.slots("n0") == (3, 1)  # 4 threads clamped to maxMapSlots 3
    policy.assign(snapshot, "n0")
    # U 0.85 >= U* 0.8 (it would grow under the default 0.95): the shrink branch, but no map slot is idle and
    # the idle reduce slot is at its minimum 1.
    assert policy.slots("n0") == (3, 1)
