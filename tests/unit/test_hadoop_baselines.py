"""The three baselines behave as Apache Hadoop 1.2.1 does (issue 18, item 4), on hand-built snapshots.

Each test names the Hadoop source it holds the policy to (apache/hadoop-common, tag release-1.2.1):
JobQueueTaskScheduler.java (FIFO), contrib/fairscheduler FairScheduler.java and CapBasedLoadManager.java (Fair),
contrib/capacity-scheduler CapacityTaskScheduler.java and CapacitySchedulerQueue.java (Capacity).
"""

from __future__ import annotations

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement, Task
from mrsched.policies import make_policy
from mrsched.policies.fifo import fifo_order


def nodes(count: int = 2, *, racks: int = 1, map_slots: int = 2, reduce_slots: int = 1) -> dict[str, Node]:
    return {
        f"n{i}": Node(f"n{i}", 4, 8192, rack=f"r{i % racks}", map_slots=map_slots, reduce_slots=reduce_slots)
        for i in range(count)
    }


def job(
    job_id: str,
    submit: float = 0.0,
    maps: int = 3,
    reduces: int = 1,
    *,
    user: str = "u",
    queue: str = "default",
    replicas: tuple[str, ...] = (),
    priority: int = 0,
) -> Job:
    return Job(
        job_id,
        "wordcount",
        submit,
        [Task(job_id, "map", i, 64.0, replicas) for i in range(maps)],
        [Task(job_id, "reduce", i, 10.0) for i in range(reduces)],
        user=user,
        queue=queue,
        priority=priority,
    )


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
