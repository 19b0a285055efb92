"""Hadoop's baselines on hand-built snapshots: FIFO order, Fair's max-min shares, delay scheduling, Capacity,
and kube-default's scoring."""

from __future__ import annotations

import pytest

from mrsched.core.model import ClusterSnapshot, Job, Node, Resources, Task
from mrsched.core.policy import PolicyConfigError
from mrsched.policies import make_policy
from mrsched.policies.hadoop.fair import compute_fair_shares


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


def snapshot(ns: dict[str, Node], jobs: list[Job], now: float = 0.0) -> ClusterSnapshot:
    return ClusterSnapshot(now, ns, {n: [] for n in ns}, jobs)


def test_fifo_runs_jobs_in_submission_order_then_priority() -> None:
    # Node-local input: Hadoop's FIFO hands out at most one off-switch map (maps without locations are off-switch)
    # per heartbeat, so the jobs' maps have their input on n0 to fill both slots.
    fifo = make_policy("fifo")
    early, late = job("early", 0.0, maps=1, replicas=("n0",)), job("late", 5.0, maps=3, replicas=("n0",))
    snap = snapshot(nodes(1), [late, early])
    placed = fifo.assign(snap, "n0")
    assert [p.task.job_id for p in placed if p.task.kind == "map"] == ["early", "late"]
    urgent = job("urgent", 9.0, maps=2, priority=1, replicas=("n0",))
    snap = snapshot(nodes(1), [early, urgent])
    assert {p.task.job_id for p in fifo.assign(snap, "n0") if p.task.kind == "map"} == {"urgent"}


def test_fifo_fills_free_map_slots_and_hands_out_one_reduce_after_slowstart() -> None:
    fifo = make_policy("fifo")
    j = job("j", 0.0, maps=10, reduces=3, replicas=("n0",))  # node-local maps: no off-switch limit
    snap = snapshot(nodes(1, map_slots=2, reduce_slots=2), [j])
    placed = fifo.assign(snap, "n0")
    assert [p.task.kind for p in placed] == ["map", "map"]  # no map done yet: reduces wait (5 % slow-start)
    j.finished_maps = 1
    snap.touch()  # the owner's contract: a changed job invalidates the policies' per-version caches
    placed = fifo.assign(snap, "n0")
    assert [p.task.kind for p in placed] == ["reduce"]  # slots full of maps, one reduce per heartbeat


def test_compute_fair_shares_matches_the_max_min_solution_with_weights_and_minimums() -> None:
    # A: weight 1, minShare 4, demand 5; B: weight 2, demand 100; C: weight 1, demand 3; 20 slots.
    # The ratio R = 6 gives A = min(5, max(4, 6)) = 5, B = 2·6 = 12, C = min(3, 6) = 3: 20 in all.
    assert compute_fair_shares([1, 2, 1], [4, 0, 0], [5, 100, 3], 20) == pytest.approx([5, 12, 3])
    # A minimum share binds: A gets 8 although its weighted share would be 4.
    assert compute_fair_shares([1, 1], [8, 0], [10, 10], 12) == pytest.approx([8, 4])
    # More slots than demand: everyone gets what it asks.
    assert compute_fair_shares([1, 3], [0, 0], [2, 3], 100) == pytest.approx([2, 3])


def test_fair_serves_the_pool_furthest_below_its_share() -> None:
    fair = make_policy("fair", {"assignMultiple": True})
    hog = job("hog", 0.0, maps=20, user="alice")
    newcomer = job("new", 10.0, maps=20, user="bob")
    hog.running_maps = 3  # alice already runs 3 maps elsewhere
    snap = snapshot(nodes(1), [hog, newcomer])
    placed = fair.assign(snap, "n0")
    assert [p.task.job_id for p in placed if p.task.kind == "map"] == ["new", "new"]


def test_fair_min_share_puts_a_needy_pool_first() -> None:
    fair = make_policy("fair", {"minShares": {"bob": 5}, "weights": {"alice": 10.0}})
    alice, bob = job("a", 0.0, maps=20, user="alice"), job("b", 0.0, maps=20, user="bob")
    bob.running_maps = 2
    snap = snapshot(nodes(1), [alice, bob])
    assert fair.assign(snap, "n0")[0].task.job_id == "b"


def test_delay_scheduling_waits_for_a_local_node_then_relaxes() -> None:
    fair = make_policy("fair", {"nodeLocalityDelayS": 5, "rackLocalityDelayS": 5})
    ns = nodes(3, racks=3)
    j = job("j", 0.0, maps=2, replicas=("n0",))
    snap = snapshot(ns, [j], now=0.0)
    assert fair.assign(snap, "n1") == []  # not local: skipped, starts waiting
    snap.now = 4.0
    assert fair.assign(snap, "n2") == []  # still within the node-locality delay
    got = fair.assign(snap, "n0")
    assert got and "node-local" in got[0].explanation.reason  # the local node takes it at once
    snap.now = 6.0
    assert fair.assign(snap, "n1") == []  # waiting started again after the launch
    snap.now = 16.5  # both delays passed: off-rack allowed
    off = fair.assign(snap, "n1")
    assert off and "off-local" in off[0].explanation.reason


def test_capacity_gives_the_slot_to_the_queue_furthest_below_its_capacity() -> None:
    cap = make_policy("capacity", {"capacities": {"prod": 75, "dev": 25}})
    prod, dev = job("p", 0.0, maps=10, queue="prod"), job("d", 0.0, maps=10, queue="dev")
    prod.running_maps = 2  # 2 of prod's 6 slots (75 % of 8): a third used
    dev.running_maps = 1  # 1 of dev's 2 slots (25 % of 8): half used
    snap = snapshot(nodes(2), [prod, dev])
    assert cap.assign(snap, "n0")[0].task.job_id == "p"
    prod, dev = job("p", 0.0, maps=10, queue="prod"), job("d", 0.0, maps=10, queue="dev")
    prod.running_maps, dev.running_maps = 4, 0  # prod two thirds used, dev idle
    assert cap.assign(snapshot(nodes(2), [prod, dev]), "n1")[0].task.job_id == "d"


def test_kube_default_spreads_by_least_allocated_and_respects_requests() -> None:
    kd = make_policy("kube-default", seed=1)
    ns = {"big": Node("big", 8, 16384), "small": Node("small", 2, 4096)}
    j = job("j", 0.0, maps=3)
    j.map_request = Resources(cpu=2, memory_mb=1024)
    snap = snapshot(ns, [j])
    placed = kd.schedule_round(snap, list(ns))
    # The first pod scores best on the empty big node; small fits exactly one 2-CPU pod.
    assert placed[0].node == "big"
    assert sum(1 for p in placed if p.node == "small") <= 1
    assert len(placed) == 3


def test_bad_policy_options_are_named() -> None:
    with pytest.raises(PolicyConfigError, match=r"unknown policy 'fiffo'; known policies: .*fifo"):
        make_policy("fiffo")
    with pytest.raises(
        PolicyConfigError, match=r"option nodeLocalityDelayS: Input should be greater than or equal"
    ):
        make_policy("fair", {"nodeLocalityDelayS": -1})
    with pytest.raises(PolicyConfigError, match="the greedy-informed policy needs the true physics"):
        make_policy("greedy-informed").schedule_round(snapshot(nodes(1), [job("j", 0)]), ["n0"])


@pytest.mark.parametrize("name", ["fifo", "fair", "capacity"])
def test_a_placement_the_node_could_not_admit_is_placed_again_at_once(name: str) -> None:
    # The operator drops a placement whose pod does not fit the node's allocatable (a waiting reduce holds a
    # CPU the slot count does not know of), and tells the policy the task is pending again. The task goes back
    # to the front of its job's index, as Hadoop's failMap does: the next heartbeat places it, with no
    # locality wait (the regression: it was found only by the off-rack scan, after both delays, per task).
    policy = make_policy(name)
    j = job("j", 0.0, maps=4, reduces=0)
    ns = nodes(2, map_slots=1)
    snap = snapshot(ns, [j], now=0.0)
    first = policy.assign(snap, "n0")
    assert [p.task.index for p in first] == [0]
    policy.assign(snap, "n1")  # takes map 1; the index drops map 0 (running) from its queue
    # Map 0 was never created: the next round sees it pending, and the owner announces it.
    dropped = first[0].task
    dropped.running, j.running_maps = False, j.running_maps - 1
    policy.on_task_requeued(dropped)
    snap = ClusterSnapshot(1.0, ns, {"n0": [], "n1": [a for a in snap.running["n1"]]}, [j])
    again = policy.assign(snap, "n0")
    assert [p.task.index for p in again] == [0], "the dropped map first, on the next heartbeat"


def test_every_policy_with_options_reads_them_typed_through_configured() -> None:
    # One way to reach a policy's own options (Configured[XConfig].cfg), not a re-typed copy of self.config per
    # policy: the regression was Throughput's `self.cfg: ThroughputConfig = self.config  # type: ignore`.
    from mrsched.core.policy import Configured, PolicyConfig, registered

    with_options = {name: cls for name, cls in registered().items() if cls.Config is not PolicyConfig}
    assert "throughput" in with_options and "fair" in with_options
    untyped = sorted(name for name, cls in with_options.items() if not issubclass(cls, Configured))
    assert untyped == [], f"policies with options outside Configured: {untyped}"
