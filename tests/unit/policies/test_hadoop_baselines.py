"""The three baselines behave as Apache Hadoop 1.2.1 does (issue 18, item 4), on hand-built snapshots.

Each test names the Hadoop source it holds the policy to (apache/hadoop-common, tag release-1.2.1):
JobQueueTaskScheduler.java (FIFO), contrib/fairscheduler FairScheduler.java and CapBasedLoadManager.java (Fair),
contrib/capacity-scheduler CapacityTaskScheduler.java and CapacitySchedulerQueue.java (Capacity).
"""

from __future__ import annotations

import pytest

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement
from mrsched.core.policy import PolicyConfigError
from mrsched.policies import make_policy
from mrsched.policies.hadoop.fair import Fair
from mrsched.policies.hadoop.fifo import fifo_order
from mrsched.policies.hadoop.slots import priority_factor
from tests.unit.policies.test_baselines import job


def nodes(count: int = 2, *, racks: int = 1, map_slots: int = 2, reduce_slots: int = 1) -> dict[str, Node]:
    return {
        f"n{i}": Node(f"n{i}", 4, 8192, rack=f"r{i % racks}", map_slots=map_slots, reduce_slots=reduce_slots)
        for i in range(count)
    }


def snapshot(
    ns: dict[str, Node], jobs: list[Job], now: float = 0.0, heartbeat_s: float = 3.0
) -> ClusterSnapshot:
    return ClusterSnapshot(now, ns, {n: [] for n in ns}, jobs, heartbeat_s=heartbeat_s)


def run(snap: ClusterSnapshot, j: Job, node: str, count: int = 1, kind: str = "map") -> None:
    """Start ``count`` pending tasks of ``j`` on ``node``, as if placed earlier."""
    tasks = [t for t in (j.maps if kind == "map" else j.reduces) if t.pending][:count]
    for task in tasks:
        snap.commit(Placement(task, node, Explanation("test", 0.0, "setup")))


def maps_of(placements: list[Placement]) -> list[str]:
    return [p.task.job_id for p in placements if p.task.kind == "map"]


# --- Fair -----------------------------------------------------------------------------------------------------


def test_fair_is_idle_only_while_no_job_waits_on_a_skipped_heartbeat() -> None:
    """Fair.idle lets the simulator skip a heartbeat with nothing to start, unless a job was skipped on the last
    one: that job's locality wait must grow by the time to the next heartbeat (updateLocalityWaitTimes,
    java:579-589), and from then on by nothing. Two Fairs see the same heartbeats; one skips those it calls
    idle: their waits must end the same."""
    fairs, snaps = [], []
    for _ in range(2):
        fair = make_policy("fair", {"assignMultiple": False})
        assert isinstance(fair, Fair)
        j = job("j", maps=1, reduces=0, replicas=("n0",))
        snap = snapshot(nodes(3, racks=1), [j], heartbeat_s=10.0)  # 15 s locality delays
        assert fair.assign(snap, "n1") == []  # j is not node-local on n1: skipped
        run(snap, j, "n0")  # j's map starts elsewhere (as a composing policy such as DARA would start it)
        fairs.append(fair)
        snaps.append(snap)
    (asked, skipping), (snap_a, snap_s) = fairs, snaps
    assert snap_s.nothing_pending() and not skipping.idle(snap_s)  # j still waits on the skipped heartbeat
    for now, node in ((1.0, "n2"), (2.0, "n1"), (6.0, "n2")):
        snap_a.now = snap_s.now = now
        assert asked.assign(snap_a, node) == []
        if not skipping.idle(snap_s):
            assert skipping.assign(snap_s, node) == []
        assert skipping.idle(snap_s)  # after one heartbeat no job waits on one
    assert asked._waits["j"].waited == skipping._waits["j"].waited == 1.0


def test_fair_fills_the_free_slots_in_one_heartbeat_by_default() -> None:
    # mapred.fairscheduler.assignmultiple defaults to true in Hadoop 1.x (FairScheduler.java:190-191), and then
    # maxTasksToAssign is the node's free slots (java:564-574).
    fair = make_policy("fair")
    j = job("j", maps=8, replicas=("n0",))
    placed = fair.assign(snapshot(nodes(1, map_slots=4), [j]), "n0")
    assert maps_of(placed) == ["j"] * 4


def test_fair_assign_multiple_maps_caps_the_maps_of_a_heartbeat() -> None:
    # mapred.fairscheduler.assignmultiple.maps (FairScheduler.java:192-193, 564-574).
    fair = make_policy("fair", {"assignMultiple": True, "assignMultipleMaps": 2})
    j = job("j", maps=8, replicas=("n0",))
    assert maps_of(fair.assign(snapshot(nodes(1, map_slots=4), [j]), "n0")) == ["j", "j"]


def test_fair_load_manager_spreads_the_maps_over_the_nodes() -> None:
    # CapBasedLoadManager.getCap (CapBasedLoadManager.java:45-48): 4 maps wanted on 8 slots: a node of 4 slots
    # runs at most ceil(4 × 4/8) = 2 of them.
    fair = make_policy("fair", {"assignMultiple": True})
    j = job("j", maps=4)
    assert maps_of(fair.assign(snapshot(nodes(2, map_slots=4), [j]), "n0")) == ["j", "j"]


def test_fair_without_assign_multiple_hands_out_one_task_per_heartbeat() -> None:
    # FairScheduler.assignTasks (java:480-504): one task, of the kind the node runs fewer of (maps on a tie).
    fair = make_policy("fair", {"assignMultiple": False})
    j = job("j", maps=10, reduces=2)
    j.finished_maps = 1  # past the 5 % slow-start: reduces may start
    snap = snapshot(nodes(1, map_slots=2, reduce_slots=2), [j])
    assert [p.task.kind for p in fair.assign(snap, "n0")] == ["map"]
    assert [p.task.kind for p in fair.assign(snap, "n0")] == ["reduce"]  # the node now runs 1 map, 0 reduces


def test_fair_default_locality_delay_is_one_and_a_half_heartbeats() -> None:
    # FairScheduler.update (java:672-678): without a configured delay, node and rack delays are
    # min(15 s, 1.5 × the JobTracker's heartbeat interval): 3 s for a 2 s heartbeat.
    fair = make_policy("fair")
    j = job("j", maps=2, replicas=("n0",))
    snap = snapshot(nodes(3, racks=1), [j], heartbeat_s=2.0)
    assert fair.assign(snap, "n1") == []  # not node-local: skipped, starts waiting
    snap.now = 2.9
    assert fair.assign(snap, "n2") == []  # waited 2.9 s < 3 s: still node-local only
    snap.now = 3.0
    got = fair.assign(snap, "n1")
    assert got and "rack-local (allowed rack)" in got[0].explanation.reason
    assert isinstance(fair, Fair)
    assert fair.locality_delays(2.0) == (3.0, 3.0)
    assert fair.locality_delays(20.0) == (15.0, 15.0)  # MAX_AUTOCOMPUTED_LOCALITY_DELAY (java:69-70)
    explicit = make_policy("fair", {"nodeLocalityDelayS": 15})
    assert isinstance(explicit, Fair) and explicit.locality_delays(2.0) == (15.0, 3.0)


def test_fair_locality_wait_grows_only_over_heartbeats_after_a_skip() -> None:
    # updateLocalityWaitTimes (java:579-589) and the end of assignTasks (java:547-553): a job's wait grows by
    # the time to the next heartbeat only when it was looked at and launched nothing; a job that others keep
    # ahead of it is not waiting for locality.
    options = {
        "nodeLocalityDelayS": 5,
        "rackLocalityDelayS": 5,
        "weights": {"a": 100.0},
        "assignMultiple": True,
    }
    fair = make_policy("fair", options)
    ns = nodes(4, racks=2)  # n0, n2 in r0; n1, n3 in r1
    first, b = job("A1", maps=1, user="a"), job("B", maps=5, user="b", replicas=("n0",))
    snap = snapshot(ns, [first, b])
    run(snap, b, "n0")  # b's pool runs 1 map, so the heavy pool a always comes first
    assert maps_of(fair.assign(snap, "n1")) == ["A1"]  # then B is looked at: not local, skipped (t = 0)
    second = job("A2", maps=20, user="a")
    snap.jobs.append(second)
    snap.touch(jobs_changed=True)
    snap.now = 1.0
    assert maps_of(fair.assign(snap, "n3")) == ["A2", "A2"]  # B waited 0 → 1 s, and is not looked at
    snap.jobs.remove(second)
    fair.on_job_finished(second, 20.0)
    snap.touch(jobs_changed=True)
    snap.now = 20.0
    assert fair.assign(snap, "n1") == []  # B has waited 1 s, not 20: node-local only
    snap.now = 26.0
    assert fair.assign(snap, "n1") == []  # 7 s: rack-local allowed, but n1 is in the other rack
    snap.now = 30.0
    got = fair.assign(snap, "n1")  # 11 s ≥ 5 + 5: any node
    assert maps_of(got) == ["B"] and "off-local (allowed off)" in got[0].explanation.reason


def test_fair_job_weight_is_its_priority_factor() -> None:
    # FairScheduler.getJobWeight / getPriorityFactor (java:783-814): HIGH weighs 2, so within a pool a HIGH job
    # running 3 maps (3/2) comes before a NORMAL one running 2 (2/1).
    assert [priority_factor(job("x", priority=p)) for p in (5, 2, 1, 0, -1, -2, -7)] == [
        4.0,
        4.0,
        2.0,
        1.0,
        0.5,
        0.25,
        0.25,
    ]
    fair = make_policy("fair")
    high, normal = job("high", 5.0, maps=10, priority=1), job("normal", 0.0, maps=10)
    high.running_maps, normal.running_maps = 3, 2
    assert maps_of(fair.assign(snapshot(nodes(1, map_slots=1), [normal, high]), "n0")) == ["high"]
    # A pool's weight is only what is configured (PoolSchedulable.getWeight, java:124-126): alice's VERY_HIGH
    # job does not make her pool heavier than bob's.
    fair = make_policy("fair")
    urgent, plain = job("urgent", maps=10, user="alice", priority=2), job("plain", maps=10, user="bob")
    urgent.running_maps, plain.running_maps = 2, 1
    assert maps_of(fair.assign(snapshot(nodes(1, map_slots=1), [urgent, plain]), "n0")) == ["plain"]


def test_fair_pools_tied_on_share_go_by_name() -> None:
    # FairShareComparator (SchedulingAlgorithms.java:90-96) breaks ties by start time, 0 for every pool
    # (PoolSchedulable.java:143-145), then by name: amy before zed although zed's job came first.
    fair = make_policy("fair", {"assignMultiple": False})
    zed, amy = job("z", 0.0, maps=5, user="zed"), job("a", 9.0, maps=5, user="amy")
    assert maps_of(fair.assign(snapshot(nodes(1), [zed, amy]), "n0")) == ["a"]


# --- FIFO -----------------------------------------------------------------------------------------------------


def test_fifo_places_at_most_one_off_switch_map_per_heartbeat() -> None:
    # JobQueueTaskScheduler.assignTasks (java:195-208): "We assign at most 1 off-switch or speculative task".
    fifo = make_policy("fifo")
    far = job("far", maps=8, replicas=("n1",))  # its input is in the other rack
    placed = fifo.assign(snapshot(nodes(2, racks=2, map_slots=4), [far]), "n0")
    assert maps_of(placed) == ["far"] and "off-local" in placed[0].explanation.reason
    # Local maps first; the first job without a local map gets the off-switch one and ends the heartbeat.
    fifo = make_policy("fifo")
    local, other = job("local", 0.0, maps=1, replicas=("n0",)), job("other", 1.0, maps=8, replicas=("n1",))
    placed = fifo.assign(snapshot(nodes(2, racks=2, map_slots=4), [local, other]), "n0")
    assert maps_of(placed) == ["local", "other"]


def test_fifo_caps_a_node_by_the_load_factor() -> None:
    # java:126-134, 153-156: 4 maps left on 8 map slots: a 2-slot node runs ceil(0.5 × 2) = 1.
    fifo = make_policy("fifo")
    j = job("j", maps=4, replicas=("n0",))
    assert maps_of(fifo.assign(snapshot(nodes(4), [j]), "n0")) == ["j"]
    # Reduces (java:218-222): 2 reduces left on 8 reduce slots: a 2-slot node runs ceil(0.25 × 2) = 1, and n0
    # already runs one.
    r = job("r", maps=1, reduces=2)
    r.finished_maps = 1
    snap = snapshot(nodes(4, reduce_slots=2), [r])
    run(snap, r, "n0", kind="reduce")
    assert fifo.assign(snap, "n0") == []
    assert [p.task.kind for p in fifo.assign(snap, "n1")] == ["reduce"]


def test_fifo_padding_leaves_room_when_the_cluster_is_nearly_full() -> None:
    # exceededPadding (java:268-312): on more than 3 nodes, once running maps + min(node slots, 1 % of the
    # queued jobs' maps) reach the cluster's map slots, a heartbeat gets one map (java:184-189).
    fifo = make_policy("fifo")
    big = job("big", maps=200, replicas=("n0",))  # pad min(2, 200 × 0.01) = 2
    snap = snapshot(nodes(4), [big])
    for node in ("n1", "n2", "n3"):
        run(snap, big, node, 2)  # 6 of 8 slots run: 6 + 2 ≥ 8
    assert maps_of(fifo.assign(snap, "n0")) == ["big"]
    roomy = make_policy("fifo", {"capacityPad": 0.0})
    assert maps_of(roomy.assign(snap, "n0")) == ["big"]  # the other slot, now that no pad is kept


def test_fifo_order_uses_hadoops_five_priority_levels() -> None:
    # JobPriority has five levels: +3 and +2 are both VERY_HIGH, so submission order decides.
    higher, high = job("p3", 5.0, priority=3), job("p2", 0.0, priority=2)
    assert [j.id for j in fifo_order([higher, high])] == ["p2", "p3"]


# --- Capacity -------------------------------------------------------------------------------------------------


def test_capacity_gives_an_idle_slot_to_a_user_over_the_limit_when_nobody_else_can_use_it() -> None:
    # The case: 4 slots, alice runs 2 with 8 maps pending, bob runs 1 and has nothing pending. Hadoop
    # counts only users with pending tasks (CapacitySchedulerQueue.update, java:582-604; assignSlotsToJob,
    # java:1139-1196): alice is the only active user, her limit is the queue's 4 slots, and the slot is hers.
    cap = make_policy("capacity", {"minimumUserLimitPercent": 25})
    alice, bob = job("a", 0.0, maps=10, user="alice", replicas=("n0",)), job("b", 1.0, maps=1, user="bob")
    snap = snapshot(nodes(2), [alice, bob])
    run(snap, alice, "n1", 2)
    run(snap, bob, "n0")
    assert maps_of(cap.assign(snap, "n0")) == ["a"]
    # With bob's work pending, the limit is ceil(4 / 2) = 2: alice is skipped and bob gets it.
    cap = make_policy("capacity", {"minimumUserLimitPercent": 25})
    alice, bob = job("a", 0.0, maps=10, user="alice", replicas=("n0",)), job("b", 1.0, maps=3, user="bob")
    snap = snapshot(nodes(2), [alice, bob])
    run(snap, alice, "n1", 2)
    run(snap, bob, "n0")
    assert maps_of(cap.assign(snap, "n0")) == ["b"]


def test_capacity_maximum_caps_a_queue_even_when_the_cluster_is_idle_otherwise() -> None:
    # maximum-capacity (CapacitySchedulerQueue.assignSlotsToQueue, java:1109-1125): 50 % of 8 slots = 4.
    options = {"capacities": {"prod": 25, "dev": 75}, "maximumCapacity": {"prod": 50}, "userLimitFactor": 10}
    cap = make_policy("capacity", options)
    prod = job("p", maps=20, queue="prod", replicas=("n0",))
    snap = snapshot(nodes(2, map_slots=4), [prod])
    run(snap, prod, "n1", 3)
    assert maps_of(cap.assign(snap, "n0")) == ["p"]  # the 4th slot, and no more although 3 are idle
    assert cap.assign(snap, "n0") == []
    with pytest.raises(PolicyConfigError, match="below its capacity"):
        make_policy("capacity", {"capacities": {"prod": 50}, "maximumCapacity": {"prod": 25}})


def test_capacity_a_lone_user_stays_within_the_queue_capacity_times_the_user_limit_factor() -> None:
    # user-limit-factor, 1 by default (CapacitySchedulerConf.java:147-149; capacity_scheduler.xml: "a single
    # user can never take more than the queue's configured capacity irrespective of how idle the cluster is").
    options: dict[str, object] = {"capacities": {"a": 50, "b": 50}}
    solo = job("s", maps=20, queue="a", replicas=("n0",))
    snap = snapshot(nodes(2, map_slots=4), [solo])
    run(snap, solo, "n1", 4)  # queue a's capacity: 4 of 8 slots
    assert make_policy("capacity", options).assign(snap, "n0") == []
    assert maps_of(make_policy("capacity", {**options, "userLimitFactor": 2}).assign(snap, "n0")) == ["s"] * 4


def test_capacity_in_slots_is_rounded_down_from_the_current_slots() -> None:
    # updateCapacities (CapacitySchedulerQueue.java:189-198): (int)(percent × slots / 100). On 3 slots, 60 % and
    # 40 % are 1 slot each: both queues run 1 and are equally full, and the tie goes to dev by name. (Two users
    # a queue, so that the user limit leaves the second user a slot.)
    cap = make_policy("capacity", {"capacities": {"prod": 60, "dev": 40}})
    p1, p2 = job("p1", 0.0, maps=5, queue="prod", user="p1"), job("p2", 1.0, maps=5, queue="prod", user="p2")
    d1, d2 = job("d1", 0.0, maps=5, queue="dev", user="d1"), job("d2", 1.0, maps=5, queue="dev", user="d2")
    snap = snapshot(nodes(3, map_slots=1), [p1, p2, d1, d2])
    run(snap, p1, "n1")
    run(snap, d1, "n2")
    assert maps_of(cap.assign(snap, "n0")) == ["d2"]


def test_capacity_queue_by_user_gives_each_user_an_equal_queue() -> None:
    # Our reading for papers that name users, not queues: each user is a queue of equal capacity.
    alice, bob = job("a", 0.0, maps=10, user="alice"), job("b", 1.0, maps=10, user="bob")
    snap = snapshot(nodes(2), [alice, bob])
    run(snap, alice, "n1", 2)  # alice's queue is full (2 of 4 slots), bob's is empty
    assert maps_of(make_policy("capacity", {"queueBy": "user"}).assign(snap, "n0")) == ["b"]
    assert maps_of(make_policy("capacity").assign(snap, "n0")) == ["a"]  # one queue: FIFO within it


def test_capacity_waits_for_locality_and_places_one_off_switch_map_per_heartbeat() -> None:
    # MapSchedulingMgr.obtainNewTask (CapacityTaskScheduler.java:511-544) and JobInProgress.scheduleOffSwitch
    # (JobInProgress.java:1465-1471): the job's input is on 1 of 2 nodes (wait factor 0.5), so it goes
    # off-switch once it has missed more than min(8 maps, 2 nodes) × 0.5 = 1 opportunity; then the heartbeat's
    # maps end (maximum-tasks-after-offswitch = 0, java:1115-1132).
    cap = make_policy("capacity")
    far = job("far", maps=8, replicas=("n1",))
    snap = snapshot(nodes(2, racks=2, map_slots=4), [far])
    assert cap.assign(snap, "n0") == []  # 1 opportunity missed
    placed = cap.assign(snap, "n0")
    assert maps_of(placed) == ["far"] and "off-switch" in placed[0].explanation.reason


def test_capacity_ignores_priorities_unless_the_queue_supports_them() -> None:
    # supports-priority is false by default (CapacitySchedulerConf.java:150-151): jobs by start time only.
    urgent, early = job("urgent", 5.0, priority=2), job("early", 0.0)
    snap = snapshot(nodes(1, map_slots=1), [urgent, early])
    assert maps_of(make_policy("capacity").assign(snap, "n0")) == ["early"]
    snap = snapshot(nodes(1, map_slots=1), [job("urgent", 5.0, priority=2), job("early", 0.0)])
    assert maps_of(make_policy("capacity", {"supportsPriority": True}).assign(snap, "n0")) == ["urgent"]
