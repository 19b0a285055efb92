"""Seed 003's Coupling Scheduler (Tan, Meng & Zhang) on hand-computed cases (digest tan-coupling.md §1).

* Algorithm 1, the mismatch gate: δ, the worked example M = 427, R = 8, line 6's ``+1``, line 9's bonus.
* Eq 1: transfer costs with hops 0 / 2 / 4 (A1) on a 2-rack cluster, and the candidate list L(J) over V_r.
* Algorithm 2: the selecting heartbeat, the rounds of N heartbeats (1, 2-3, 4-7, any node), the drop after 4N.
* Eq 3 / Algorithm 3: β, p_j, α by A8, K_1 and K_2 over the other nodes (A7), the launch frequency, A9.
* End to end in the simulator: a small job behind two large ones starves less than under Fair.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from mrsched.core.catalog import expand_layout
from mrsched.core.model import (
    ClusterSnapshot,
    Explanation,
    Job,
    Node,
    Placement,
    Task,
    TaskOutcome,
)
from mrsched.core.policy import Policy, TruePhysics
from mrsched.policies import make_policy
from mrsched.policies.coupling import (
    Coupling,
    beta,
    delta,
    launch_probability,
    mismatch,
    transfer_costs,
)
from mrsched.simulator.engine import Simulation
from mrsched.simulator.scenario import Scenario
from mrsched.simulator.workload import build_jobs

# --- builders ------------------------------------------------------------------------------------------------


def make_job(
    job_id: str,
    maps: int,
    reduces: int,
    *,
    finished_maps: int = 0,
    running_maps: int = 0,
    replicas: list[tuple[str, ...]] | None = None,
    user: str = "u",
    output: dict[str, float] | None = None,
) -> Job:
    """A job whose first ``finished_maps`` maps are done and the next ``running_maps`` run (counts only)."""
    reps = replicas or [() for _ in range(maps)]
    job = Job(
        job_id,
        "grep",
        0.0,
        [Task(job_id, "map", i, 64.0, reps[i % len(reps)]) for i in range(maps)],
        [Task(job_id, "reduce", i, 10.0) for i in range(reduces)],
        user=user,
    )
    for task in job.maps[:finished_maps]:
        task.done = True
    for task in job.maps[finished_maps : finished_maps + running_maps]:
        task.running = True
    job.finished_maps, job.running_maps = finished_maps, running_maps
    job.map_output_mb = dict(output or {})
    return job


def make_snapshot(nodes: list[Node], jobs: list[Job]) -> ClusterSnapshot:
    return ClusterSnapshot(0.0, {n.name: n for n in nodes}, {n.name: [] for n in nodes}, jobs)


def start(snapshot: ClusterSnapshot, task: Task, node: str) -> None:
    """What an earlier heartbeat placed: ``task`` runs on ``node``."""
    snapshot.commit(Placement(task, node, Explanation("test", 0.0, "setup")))


def coupling(seed: int = 0, **options: Any) -> Coupling:
    policy = make_policy("coupling", options, seed=seed)
    assert isinstance(policy, Coupling)
    return policy


def reduces_of(placements: list[Placement]) -> list[Placement]:
    return [p for p in placements if p.task.kind == "reduce"]


# --- Algorithm 1: the mismatch gate --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reduces", "expected"),
    [(1, 0.2835), (2, 0.4866), (3, 0.6321), (5, 0.8111), (8, 0.9305), (12, 0.9817), (27, 0.9999)],
)
def test_delta_matches_the_digest_table_for_threshold_3(reduces: int, expected: float) -> None:
    assert delta(reduces, 3.0) == pytest.approx(expected, abs=5e-5)


def test_delta_follows_the_threshold() -> None:
    # threshold 8, R = 8: δ = 1 − e^(−1) = 0.6321.
    assert delta(8, 8.0) == pytest.approx(0.6321, abs=5e-5)
    job = make_job("j", 100, 8, finished_maps=8)
    # unit = 0.6321 · 100/8 = 7.90; 8/7.90 = 1.0125 ⇒ (1.0125 − 1)/8 > 0 with threshold 8, but with threshold 3
    # unit = 11.63 and 8/11.63 − 1 < 0.
    assert mismatch(job, threshold=8.0) > 0 > mismatch(job, threshold=3.0)


def test_worked_example_m427_r8_first_reduce_at_50_finished_maps() -> None:
    # unit = δ·M/R = 0.9305·427/8 = 49.67 maps pay for one reduce.
    assert delta(8) * 427 / 8 == pytest.approx(49.67, abs=0.005)
    assert mismatch(make_job("j", 427, 8, finished_maps=49)) <= 0  # 49/49.67 − 1 = −0.0134
    m50 = mismatch(make_job("j", 427, 8, finished_maps=50))
    assert m50 > 0
    assert m50 == pytest.approx(0.00084, abs=0.00002)  # (50/49.67 − 1)/8 (digest: +0.0008)


@pytest.mark.parametrize("running", [True, False])
def test_second_reduce_needs_100_finished_maps_when_one_reduce_has_launched(running: bool) -> None:
    def job(finished: int) -> Job:
        j = make_job("j", 427, 8, finished_maps=finished)
        if running:
            j.running_reduces = 1
            j.reduces[0].running = True
        else:  # a finished reduce counts the same (line 6: finished + running)
            j.finished_reduces = 1
            j.reduces[0].done = True
        return j

    assert mismatch(job(99)) < 0  # 99/49.67 = 1.993 < 2
    assert mismatch(job(100)) > 0  # 100/49.67 = 2.013 > 2
    assert mismatch(job(100)) == pytest.approx((100 / 49.667 - 2) / 8, abs=1e-4)


def test_eighth_reduce_needs_398_finished_maps() -> None:
    job = make_job("j", 427, 8, finished_maps=397, running_maps=20)
    job.running_reduces = 7
    for t in job.reduces[:7]:
        t.running = True
    assert mismatch(job) < 0  # 397/49.67 = 7.993 < 8
    job.finished_maps = 398
    assert mismatch(job) > 0  # 8.013 > 8: 93.2 % of the maps


def test_line6_plus_one_keeps_the_first_reduce_back_until_a_unit_of_maps_is_done() -> None:
    # Without the +1, any finished map (1/49.67 > 0) would make the mismatch positive.
    one = make_job("j", 427, 8, finished_maps=1)
    assert mismatch(one) == pytest.approx((1 / 49.667 - 1) / 8, abs=1e-5)  # −0.1225
    assert mismatch(one) < 0
    # R = 1: δ = 0.2835, unit = 0.2835·100 = 28.35 maps; 28 < unit, 29 > unit.
    assert mismatch(make_job("k", 100, 1, finished_maps=28)) < 0
    assert mismatch(make_job("k", 100, 1, finished_maps=29)) == pytest.approx(29 / 28.347 - 1, abs=1e-4)


def test_line9_no_pending_maps_gives_four_plus_one_over_pending_reduces() -> None:
    # All 10 maps launched (7 finished, 3 running), 3 reduces of which 1 runs: 4 + 1/2.
    job = make_job("j", 10, 3, finished_maps=7, running_maps=3)
    job.running_reduces = 1
    job.reduces[0].running = True
    assert mismatch(job) == pytest.approx(4.5)
    fresh = make_job("k", 10, 4, finished_maps=10)
    assert mismatch(fresh) == pytest.approx(4.25)


def test_no_pending_reduce_gives_zero_whatever_the_map_progress() -> None:
    job = make_job("j", 10, 2, finished_maps=9)
    job.running_reduces, job.finished_reduces = 1, 1
    job.reduces[0].running, job.reduces[1].done = True, True
    assert mismatch(job) == 0.0
    assert mismatch(make_job("map-only", 10, 0, finished_maps=10)) == 0.0
    assert mismatch(make_job("map-only", 10, 0, finished_maps=3)) == 0.0


def test_a_job_with_its_maps_all_launched_outranks_any_job_still_mapping() -> None:
    # The largest line-7 value: R = 1, 99 of 100 maps finished, nothing launched: 99/28.35 − 1 = 2.49 < 4.
    mapping = make_job("mapping", 100, 1, finished_maps=99, user="a")
    done_a = make_job("done-a", 10, 5, finished_maps=10, user="b")  # 4 + 1/5 = 4.2
    done_b = make_job("done-b", 10, 2, finished_maps=10, user="c")  # 4 + 1/2 = 4.5: fewest pending wins
    assert mismatch(mapping) == pytest.approx(99 / (delta(1) * 100) - 1)
    assert mismatch(mapping) < 4 < mismatch(done_a) < mismatch(done_b)
    nodes = [Node("n0", 4, 8192, reduce_slots=1)]
    for seed in range(5):
        policy = coupling(seed)
        chosen = policy.select(make_snapshot(nodes, [mapping, done_a, done_b]))
        assert chosen is not None and chosen[0].id == "done-b"
        chosen = policy.select(make_snapshot(nodes, [mapping, done_a]))
        assert chosen is not None and chosen[0].id == "done-a"


def test_select_returns_nothing_when_no_mismatch_is_positive() -> None:
    nodes = [Node("n0", 4, 8192, reduce_slots=1)]
    policy = coupling()
    lagging = make_job("j", 427, 8, finished_maps=49)
    assert policy.select(make_snapshot(nodes, [lagging, make_job("m", 5, 0, finished_maps=5)])) is None
    placements = policy.assign(make_snapshot(nodes, [lagging]), "n0")
    assert reduces_of(placements) == [] and policy.waiting.candidate is None


# --- Eq 1: transfer costs and the candidate list L(J) -----------------------------------------------------

# Two racks: r0 = a0 a1 a2, r1 = b0 b1 b2. Map output (MB): a0 100, a1 50, b0 30, b2 10; W = 190, W_r0 = 150,
# W_r1 = 40. C(v) = Σ_u w(u)·h(v, u), h = 0 / 2 / 4:
#   C(a0) = 2·50 + 4·(30 + 10)          = 260        C(b0) = 4·(100 + 50) + 2·10 = 620
#   C(a1) = 2·100 + 4·40                = 360        C(b1) = 4·150 + 2·(30 + 10) = 680
#   C(a2) = 2·(100 + 50) + 4·40         = 460        C(b2) = 4·150 + 2·30        = 660
HAND_COSTS = {"a0": 260.0, "a1": 360.0, "a2": 460.0, "b0": 620.0, "b1": 680.0, "b2": 660.0}
OUTPUT = {"a0": 100.0, "a1": 50.0, "b0": 30.0, "b2": 10.0}


def two_racks(reduce_slots: int = 1) -> list[Node]:
    return [
        Node(f"{r}{i}", 4, 8192, rack=f"rack-{r}", map_slots=2, reduce_slots=reduce_slots)
        for r in ("a", "b")
        for i in range(3)
    ]


def test_transfer_costs_match_the_hand_sum_with_hops_0_2_4() -> None:
    job = make_job("j", 8, 4, finished_maps=8, output=OUTPUT)
    snapshot = make_snapshot(two_racks(), [job])
    costs = transfer_costs(job, snapshot, list(snapshot.nodes))
    assert costs == pytest.approx(HAND_COSTS)


def test_transfer_costs_on_one_rack_are_twice_the_data_elsewhere() -> None:
    # A1 [DERIVED]: on one rack C(v) = 2·(W − w(v)).
    nodes = [Node(f"n{i}", 4, 8192) for i in range(3)]
    job = make_job("j", 4, 1, finished_maps=4, output={"n0": 30.0, "n1": 70.0})
    costs = transfer_costs(job, make_snapshot(nodes, [job]), ["n0", "n1", "n2"])
    assert costs == pytest.approx({"n0": 140.0, "n1": 60.0, "n2": 200.0})


def test_candidate_list_is_ordered_by_cost_over_nodes_with_a_free_reduce_slot() -> None:
    job = make_job("j", 8, 4, finished_maps=8, output=OUTPUT)
    other = make_job("x", 1, 1, finished_maps=1)
    snapshot = make_snapshot(two_racks(), [job, other])
    policy = coupling()
    assert policy.candidate_list(snapshot, job) == ["a0", "a1", "a2", "b0", "b2", "b1"]
    start(snapshot, other.reduces[0], "a0")  # the cheapest node has no free reduce slot: not in V_r
    assert policy.candidate_list(snapshot, job) == ["a1", "a2", "b0", "b2", "b1"]
    assert coupling(candidateNodes=3).candidate_list(snapshot, job) == ["a1", "a2", "b0"]  # at most D


def test_candidate_list_is_at_most_seven_long_by_default() -> None:
    nodes = [Node(f"n{i}", 4, 8192, reduce_slots=1) for i in range(10)]
    job = make_job("j", 10, 2, finished_maps=10, output={f"n{i}": 10.0 * (10 - i) for i in range(10)})
    ranked = coupling().candidate_list(make_snapshot(nodes, [job]), job)
    assert ranked == [f"n{i}" for i in range(7)]


def test_candidate_list_breaks_ties_at_random() -> None:
    nodes = [Node(f"n{i}", 4, 8192, reduce_slots=1) for i in range(3)]
    job = make_job("j", 4, 1, finished_maps=4, output={"n0": 50.0, "n1": 50.0})
    firsts = {coupling(seed).candidate_list(make_snapshot(nodes, [job]), job)[0] for seed in range(30)}
    assert firsts == {"n0", "n1"}  # both tied centralities win sometimes; n2 (cost 200) never


# --- Algorithm 2: wait scheduling --------------------------------------------------------------------------

#: Nodes n0..n7 ranked by Eq 1 (outputs 70, 60, ..., 0 MB on one rack): L1 = {n0}, L2 = {n1, n2},
#: L3 = {n3..n6}; n7 is 8th (outside L); "busy" has its only reduce slot taken, so it is never in V_r.
RANKED = [f"n{i}" for i in range(8)]
N = 9  # nodes in the cluster, busy included
GROUP_OF = {"n0": 1, "n1": 2, "n2": 2, "n3": 3, "n4": 3, "n5": 3, "n6": 3, "n7": 4}


def wait_cluster(*, j_reduce_on_n0: bool = False) -> ClusterSnapshot:
    nodes = [
        Node(n, 4, 8192, map_slots=1, reduce_slots=2 if (j_reduce_on_n0 and n == "n0") else 1) for n in RANKED
    ]
    nodes.append(Node("busy", 4, 8192, map_slots=1, reduce_slots=1))
    output = {f"n{i}": 10.0 * (7 - i) for i in range(7)}
    job = make_job("J", 10, 3, finished_maps=10, output=output, user="j")  # maps done: mismatch 4 + 1/3
    other = make_job("X", 1, 1, finished_maps=1, user="x")
    snapshot = make_snapshot(nodes, [job, other])
    start(snapshot, other.reduces[0], "busy")  # X: no pending reduce, mismatch 0
    if j_reduce_on_n0:
        start(snapshot, job.reduces[2], "n0")
    return snapshot


def test_wait_cluster_ranking_is_as_the_table_says() -> None:
    snapshot = wait_cluster()
    assert coupling().candidate_list(snapshot, snapshot.job("J")) == RANKED[:7]


def test_the_selecting_heartbeat_launches_nothing_even_on_the_centrality() -> None:
    policy, snapshot = coupling(), wait_cluster()
    assert policy.assign(snapshot, "n0") == []
    assert policy.waiting.candidate == "J" and policy.waiting.wait == 0
    assert policy.waiting.selected_mismatch == pytest.approx(4 + 1 / 3)
    got = policy.assign(snapshot, "n0")  # the next heartbeat of the centrality (round 1) launches
    assert [(p.task.key, p.node) for p in got] == [("J/reduce/0", "n0")]
    assert policy.waiting.candidate is None


def expected_launch(heartbeat: int, node: str) -> bool:
    """Algorithm 2 after selection: heartbeats 1..N group 1, N+1..2N group 2, 2N+1..3N group 3, then any."""
    round_ = (heartbeat - 1) // N + 1
    return round_ == 4 or GROUP_OF[node] == round_


@pytest.mark.parametrize("heartbeat", range(1, 4 * N + 1))
def test_only_the_round_s_group_can_take_the_reduce(heartbeat: int) -> None:
    for node in RANKED:
        policy, snapshot = coupling(), wait_cluster()
        assert policy.assign(snapshot, "busy") == []  # selects J
        for _ in range(heartbeat - 1):
            assert policy.assign(snapshot, "busy") == []  # busy never qualifies (no free reduce slot)
        assert policy.waiting.wait == heartbeat - 1
        got = policy.assign(snapshot, node)
        launched = [(p.task.job_id, p.node) for p in reduces_of(got)]
        if expected_launch(heartbeat, node):
            assert launched == [("J", node)], (heartbeat, node)
            assert policy.waiting.candidate is None and policy.waiting.wait == 0
            assert f"wait round {(heartbeat - 1) // N + 1}" in got[0].explanation.reason
        else:
            assert launched == [], (heartbeat, node)
            assert policy.waiting.candidate == "J" and policy.waiting.wait == heartbeat


def test_after_4n_heartbeats_the_candidate_is_dropped_and_reselected() -> None:
    policy, snapshot = coupling(), wait_cluster()
    assert policy.assign(snapshot, "busy") == []
    for _ in range(4 * N):
        assert policy.assign(snapshot, "busy") == []
    assert policy.waiting.candidate == "J" and policy.waiting.wait == 4 * N
    assert policy.assign(snapshot, "n0") == []  # heartbeat 4N+1: dropped, even from the centrality
    assert policy.waiting.candidate is None and policy.waiting.wait == 0
    assert policy.assign(snapshot, "n0") == []  # re-selection launches nothing
    assert policy.waiting.candidate == "J" and policy.waiting.wait == 0
    assert [p.node for p in policy.assign(snapshot, "n0")] == ["n0"]  # round 1 again


def test_no_second_reduce_of_the_job_on_a_node_in_rounds_1_to_3_but_in_round_4() -> None:
    # n0 (the centrality, 2 reduce slots, one free) already runs a reduce of J.
    for heartbeat in range(1, 4 * N + 1):
        policy, snapshot = coupling(), wait_cluster(j_reduce_on_n0=True)
        assert snapshot.job("J").running_reduces == 1
        assert policy.candidate_list(snapshot, snapshot.job("J"))[0] == "n0"
        assert policy.assign(snapshot, "busy") == []
        for _ in range(heartbeat - 1):
            policy.assign(snapshot, "busy")
        got = reduces_of(policy.assign(snapshot, "n0"))
        if heartbeat <= 3 * N:
            assert got == [], heartbeat
        else:
            assert [p.node for p in got] == ["n0"], heartbeat


def test_a_failed_launch_jumps_to_the_next_group_s_round() -> None:
    # With L(J) frozen at selection (A3 alternative), the centrality's slot fills up meanwhile: its heartbeat
    # fails to launch, and wait jumps to N + 1 (the paper's line 9), so the 2nd node may take it at once.
    policy, snapshot = coupling(recomputeCandidates=False), wait_cluster()
    assert policy.assign(snapshot, "busy") == []
    assert policy.waiting.frozen == RANKED[:7]
    filler = make_job("Y", 1, 1, finished_maps=1, user="y")
    snapshot.jobs.append(filler)
    snapshot.touch(jobs_changed=True)
    start(snapshot, filler.reduces[0], "n0")
    assert policy.assign(snapshot, "n0") == []
    assert policy.waiting.wait == N + 1
    assert [p.node for p in policy.assign(snapshot, "n1")] == ["n1"]


def test_a_node_running_the_job_s_reduce_does_not_trigger_the_jump_even_when_full() -> None:
    policy, snapshot = coupling(recomputeCandidates=False), wait_cluster(j_reduce_on_n0=True)
    assert policy.assign(snapshot, "busy") == []
    assert policy.waiting.frozen is not None and policy.waiting.frozen[0] == "n0"
    filler = make_job("Y", 1, 1, finished_maps=1, user="y")
    snapshot.jobs.append(filler)
    snapshot.touch(jobs_changed=True)
    start(snapshot, filler.reduces[0], "n0")  # n0 now full, and it runs a reduce of J
    assert policy.assign(snapshot, "n0") == []
    assert policy.waiting.wait == 1  # step 7's condition is false: no launch attempt, no jump


def test_at_most_one_reduce_per_heartbeat_cluster_wide() -> None:
    # Every node has 2 free reduce slots and three jobs have maps done: still one reduce per heartbeat, and the
    # heartbeat after a launch (which selects again) launches none.
    nodes = [Node(f"n{i}", 4, 8192, map_slots=1, reduce_slots=2) for i in range(4)]
    jobs = [make_job(f"J{k}", 4, 4, finished_maps=4, user=f"u{k}", output={f"n{k}": 40.0}) for k in range(3)]
    snapshot = make_snapshot(nodes, jobs)
    policy = coupling(seed=3)
    per_heartbeat = []
    for r in range(40):
        per_heartbeat.append(len(reduces_of(policy.assign(snapshot, f"n{r % 4}"))))
    assert max(per_heartbeat) == 1
    assert sum(per_heartbeat) >= 6
    for a, b in itertools.pairwise(per_heartbeat):
        assert not (a and b)  # no two consecutive heartbeats launch
    placed = sum(j.running_reduces for j in jobs)
    assert placed == sum(per_heartbeat)
    for name in snapshot.nodes:
        keys = [a.task.job_id for a in snapshot.running[name]]
        assert len(keys) <= 2


# --- Eq 3: the launch probability p_j ------------------------------------------------------------------------


def test_beta_sample_values() -> None:
    assert beta(427, 10) == pytest.approx(1.0, abs=5e-4)
    assert beta(15, 10) == pytest.approx(0.80, abs=0.005)  # 0.1 + 0.9·(1 − e^−1.5) = 0.7992
    assert beta(5, 40) == pytest.approx(0.21, abs=0.005)  # 0.1 + 0.9·(1 − e^−0.125) = 0.2058
    assert beta(2, 0.5) == pytest.approx(0.1 + 0.9 * (1 - math.exp(-2)))  # max{N̂_m, 1}
    assert beta(0, 10) == pytest.approx(0.1)


@pytest.mark.parametrize(("b", "expected"), [(0.1, 0.26), (0.5, 0.45), (1.0, 0.63)])
def test_launch_probability_sample_values(b: float, expected: float) -> None:
    assert launch_probability(0.8, 7 / 15, b, 8) == pytest.approx(expected, abs=0.005)


def test_launch_probability_limits() -> None:
    assert launch_probability(0.8, 0.5, 0.5, 0.0) == 1.0  # N̂_m = 0: nowhere better to wait for
    assert launch_probability(1.0, 0.0, 0.5, 10.0) == 1.0  # no other node has the data
    assert launch_probability(0.8, 1.0, 1.0, 50.0) == pytest.approx(0.2)  # 1 − α


#: 16 nodes: v = n0 (no input, free map slot); n1..n7 hold the job's input (K_1 = 7); n9..n15 have their map
#: slot taken (K_2 = 8 of the K = 15 others: n1..n8). p̂ = 7/15, N̂_m = 15·8/15 = 8.
def peek_cluster(
    tag: str = "", *, v_rack: str = "r0", reduce_on_v: bool = False, local_on_v: bool = False
) -> tuple[ClusterSnapshot, Job, Job]:
    nodes = [Node("n0", 4, 8192, rack=v_rack, map_slots=1, reduce_slots=1)]
    nodes += [Node(f"n{i}", 4, 8192, rack="r0", map_slots=1, reduce_slots=1) for i in range(1, 16)]
    replicas = [(f"n{1 + i % 7}",) for i in range(70)]
    if local_on_v:
        replicas[0] = ("n0",)
    peeked = make_job(f"P{tag}", 70, 1, replicas=replicas, user="p")
    # The other job runs 7 maps on n9..n15 and has 7 node-local maps pending on v, after P in Fair's order.
    other = make_job(f"R{tag}", 14, 0, replicas=[("n0",)], user="r")
    snapshot = make_snapshot(nodes, [peeked, other])
    for i, task in enumerate(other.maps[:7]):
        start(snapshot, task, f"n{9 + i}")
    if reduce_on_v:
        start(snapshot, peeked.reduces[0], "n0")
    return snapshot, peeked, other


@pytest.mark.parametrize(("b", "expected"), [(0.1, 0.26), (0.5, 0.45), (1.0, 0.63)])
def test_peek_probability_on_a_snapshot_with_rack_data_and_no_reduce_uses_alpha_08(
    b: float, expected: float
) -> None:
    snapshot, peeked, _ = peek_cluster()
    p, why = coupling(beta=b).peek_probability(snapshot, "n0", peeked)
    assert p == pytest.approx(expected, abs=0.005)
    assert "α = 0.8" in why and "N̂_m = 8.0" in why and "p̂ = 0.47" in why


def test_peek_probability_alpha_07_when_v_runs_a_reduce_of_the_job() -> None:
    snapshot, peeked, _ = peek_cluster(reduce_on_v=True)
    p, why = coupling(beta=1.0).peek_probability(snapshot, "n0", peeked)
    assert p == pytest.approx(0.6734, abs=0.0005)  # 1 − 0.7·(7/15)·(1 − e^−8)
    assert "α = 0.7" in why


def test_peek_probability_alpha_1_when_v_s_rack_holds_none_of_the_input() -> None:
    snapshot, peeked, _ = peek_cluster(v_rack="r1")
    p, why = coupling(beta=1.0).peek_probability(snapshot, "n0", peeked)
    assert p == pytest.approx(0.5335, abs=0.0005)  # 1 − 1.0·(7/15)·(1 − e^−8)
    assert "α = 1.0" in why
    # Another job's reduce on v does not count for α_j of this job.
    snapshot, peeked, _ = peek_cluster(v_rack="r1", reduce_on_v=True)
    assert coupling(beta=1.0).peek_probability(snapshot, "n0", peeked)[0] == pytest.approx(0.5335, abs=5e-4)


def test_peek_probability_with_adaptive_beta() -> None:
    # M_p = 70, N̂_m = 8: β = 0.1 + 0.9·(1 − e^(−70/8)) = 0.99986; p = 1 − 0.8·(7/15)^β·(1 − e^−8) = 0.6267.
    snapshot, peeked, _ = peek_cluster()
    p, why = coupling().peek_probability(snapshot, "n0", peeked)
    assert p == pytest.approx(0.6267, abs=0.0005)
    assert "β = 1.00" in why


def test_k1_and_k2_exclude_the_heartbeating_node() -> None:
    # Counting v would give K = 16, K_1 = 7, K_2 = 9: p = 1 − 0.8·(7/16)·(1 − e^−9) = 0.650, not 0.627.
    snapshot, peeked, _ = peek_cluster()
    assert coupling(beta=1.0).peek_probability(snapshot, "n0", peeked)[0] == pytest.approx(0.6268, abs=5e-4)
    # Two nodes: the only other node holds the input but is full, so N̂_m = 0 and p_j = 1 (the paper's limit).
    nodes = [Node("v", 4, 8192, map_slots=1), Node("u", 4, 8192, map_slots=1)]
    job = make_job("j", 4, 1, replicas=[("u",)], user="a")
    busy = make_job("b", 1, 0, user="b")
    snapshot = make_snapshot(nodes, [job, busy])
    start(snapshot, busy.maps[0], "u")
    p, why = coupling(beta=1.0).peek_probability(snapshot, "v", job)
    assert p == 1.0 and "N̂_m = 0.0" in why and "p̂ = 1.00" in why


def test_a_node_holding_input_launches_at_once() -> None:
    for seed in range(50):
        snapshot, _, _ = peek_cluster(local_on_v=True)
        got = coupling(seed, beta=0.1).assign(snapshot, "n0")
        assert [(p.task.key, p.node) for p in got] == [("P/map/0", "n0")]
        assert got[0].explanation.score == 1.0 and "node-local" in got[0].explanation.reason


# --- Algorithm 3: random peeking over many heartbeats ------------------------------------------------------


def test_a_non_local_candidate_launches_with_frequency_p_and_a_skip_leaves_the_slot_empty() -> None:
    policy = coupling(seed=11, beta=0.5)  # p_j = 0.4537
    draws, launched = 2000, 0
    for i in range(draws):
        snapshot, peeked, other = peek_cluster(str(i))
        assert policy.fair.fair_order(snapshot, "map")[0] is peeked  # P is Fair's candidate for v
        got = policy.assign(snapshot, "n0")
        if got:
            assert [(p.task.job_id, p.node) for p in got] == [(peeked.id, "n0")]
            assert "rack-local" in got[0].explanation.reason
            assert got[0].explanation.score == pytest.approx(0.4537, abs=5e-4)
            launched += 1
        else:
            # A9: the skipped slot is not handed to R, although R has node-local maps pending on v.
            assert snapshot.free_slots("n0", "map") == 1 and other.running_maps == 7
    assert launched / draws == pytest.approx(0.4537, abs=0.05)


def test_smaller_beta_skips_more() -> None:
    # Fig 15's ablation: β = 0.1 (p 0.26) launches remotely less often than β = 1 (p 0.63).
    counts = {}
    for b in (0.1, 1.0):
        policy = coupling(seed=5, beta=b)
        # Keep every snapshot alive: Fair caches its order by (id(snapshot), version), and a freed snapshot's
        # id may be reused by the next one at the same version.
        snapshots = [peek_cluster(str(i))[0] for i in range(1000)]
        counts[b] = sum(bool(policy.assign(snapshot, "n0")) for snapshot in snapshots)
    assert counts[0.1] / 1000 == pytest.approx(0.26, abs=0.05)
    assert counts[1.0] / 1000 == pytest.approx(0.63, abs=0.05)


# --- end to end in the simulator -----------------------------------------------------------------------------


class Gate(Policy):
    """Wraps the coupling policy; checks every reduce it starts had a positive mismatch (Algorithm 1)."""

    name = "gate"

    def __init__(self, inner: Policy) -> None:
        super().__init__()
        self.inner = inner
        self.reduces = 0

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        raise AssertionError("the simulator calls schedule_round")

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        before = {}
        for job in snapshot.jobs:
            launched = job.running_reduces + job.finished_reduces
            unit = delta(len(job.reduces)) * len(job.maps) / len(job.reduces) if job.reduces else 0.0
            maps_all_launched = job.finished_maps + job.running_maps >= len(job.maps)
            before[job.id] = (mismatch(job), maps_all_launched or job.finished_maps > (launched + 1) * unit)
        placements = self.inner.schedule_round(snapshot, nodes)
        reduces = reduces_of(placements)
        assert len(reduces) <= len(nodes)
        for p in reduces:
            m, paid = before[p.task.job_id]
            assert m > 0 and paid, (p.task.key, m)
        self.reduces += len(reduces)
        return placements

    def on_job_submitted(self, job: Job, now: float) -> None:
        self.inner.on_job_submitted(job, now)

    def on_job_finished(self, job: Job, now: float) -> None:
        self.inner.on_job_finished(job, now)

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        self.inner.on_task_finished(outcome)

    def on_task_requeued(self, task: Task) -> None:
        self.inner.on_task_requeued(task)


SCENARIO: dict[str, Any] = {
    "name": "coupling-small-behind-large",
    "source": "test",
    "headline": "a small job behind two large ones starves less under coupling",
    "cluster": {
        "nodes": [{"class": "medium", "count": 4, "rack": "r1"}],
        "mapSlots": 2,
        "reduceSlots": 1,
        "heartbeatS": 1,
    },
    "workload": {
        "jobs": [
            {"id": "big1", "app": "grep", "user": "a", "submitS": 0, "maps": 200, "reduces": 3},
            {"id": "big2", "app": "grep", "user": "b", "submitS": 5, "maps": 200, "reduces": 3},
            {"id": "small", "app": "grep", "user": "c", "submitS": 30, "maps": 2, "reduces": 1},
        ]
    },
    "seeds": [1],
}


def simulate(policy: str, seed: int) -> tuple[dict[str, Any], int]:
    sc = Scenario.model_validate(SCENARIO)
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], seed)
    holder: dict[str, Gate] = {}

    def factory(truth: TruePhysics) -> Policy:
        inner = make_policy(policy, {}, seed=seed, truth=truth)
        if policy != "coupling":
            return inner
        holder["g"] = Gate(inner)
        return holder["g"]

    result = Simulation(sc.cluster, jobs, factory, seed=seed).run()
    records = {r.id: r for r in result.jobs}
    assert all(r.finish_s is not None and not r.failed for r in records.values())
    return records, holder["g"].reduces if holder else 0


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_small_job_behind_two_large_ones_starves_less_under_coupling(seed: int) -> None:
    fair, _ = simulate("fair", seed)
    coupled, gated = simulate("coupling", seed)
    assert gated == 7  # every reduce went through the mismatch gate
    small_f, small_c = fair["small"], coupled["small"]
    assert small_f.finish_s is not None and small_c.finish_s is not None
    # Fair: the 6 reduces of the large jobs take the 4 reduce slots at 5 % slow-start and hold them until their
    # maps end (≈ 160 s of starvation for the small job); coupling has launched at most one reduce per large
    # job when the small job's maps end (unit = 0.632·200/3 = 42 maps), and line 9 puts the small job first.
    assert small_f.starvation_s > 60.0
    assert small_c.starvation_s < small_f.starvation_s / 4
    assert small_c.finish_s - small_c.submit_s < (small_f.finish_s - small_f.submit_s) / 2
