"""Seed 000's learning scheduler (Dhok & Varma): Naive Bayes posteriors by hand, the overload rule, supervision
at the next heartbeat, the perceptron's D5/D6, every utility's ordering, learning to avoid an overloading job,
the Fair fallback on stale metrics, persistence, and option validation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mrsched.core.model import Attempt, ClusterSnapshot, Hints, Job, Node, NodeMetrics, Task
from mrsched.core.policy import PolicyConfigError
from mrsched.policies import make_policy
from mrsched.policies.learning import Learning
from mrsched.policies.learning.classifiers import NaiveBayes, Perceptron
from mrsched.policies.learning.features import CARDINALITIES, N_FEATURES, Features, load_bin
from mrsched.policies.learning.utilities import (
    UNPROMISED,
    UtilityContext,
    budget,
    dedicated_capacity,
    map_before_reduce,
    revenue,
)

LIGHT = Hints(cpu=1, memory=2, disk=1, network=1)
HEAVY = Hints(cpu=10, memory=8, disk=9, network=3)


def job(
    job_id: str,
    submit: float = 0.0,
    maps: int = 4,
    reduces: int = 0,
    *,
    user: str = "u",
    hints: Hints | None = None,
    slowstart: float = 0.05,
) -> Job:
    h = hints or Hints()
    return Job(
        job_id,
        "app",
        submit,
        [Task(job_id, "map", i, 64.0) for i in range(maps)],
        [Task(job_id, "reduce", i, 10.0) for i in range(reduces)],
        user=user,
        map_hints=h,
        reduce_hints=h,
        reduce_slowstart=slowstart,
    )


def snap(
    jobs: list[Job], load1: float | None = 0.0, now: float = 0.0, status: str = "fresh", cores: int = 4
) -> ClusterSnapshot:
    nodes = {"n0": Node("n0", cores, 8192, map_slots=1, reduce_slots=1)}
    return ClusterSnapshot(now, nodes, {"n0": []}, jobs, {"n0": NodeMetrics(load1=load1, status=status)})


def learner(options: dict[str, Any] | None = None) -> Learning:
    policy = make_policy("learning", options)
    assert isinstance(policy, Learning)
    return policy


def heartbeat(
    policy: Learning, s: ClusterSnapshot, now: float, load1: float | None, age_s: float = 0.0
) -> list[str]:
    """A heartbeat of n0 at ``now`` whose metrics were sampled ``age_s`` earlier."""
    s.now = now
    s.metrics["n0"] = NodeMetrics(load1=load1, status="fresh", age_s=age_s)
    return [f"{p.task.job_id}/{p.task.kind}" for p in policy.assign(s, "n0")]


def feats(c0: int, c1: int) -> Features:
    cats = (c0, c1) + (0,) * (N_FEATURES - 2)
    return Features(cats, tuple(0.0 for _ in cats))


# --- Naive Bayes ---------------------------------------------------------------------------------------------


def test_naive_bayes_posterior_matches_laplace_and_the_smoothed_prior_by_hand() -> None:
    nb = NaiveBayes()
    # Features 0 and 1 (cpu and memory hints, |V| = 10 each) vary; the 12 others are always category 0.
    assert CARDINALITIES[:2] == (10, 10)
    for c0, c1, y in [(0, 0, 1), (0, 0, 1), (1, 0, 1), (1, 1, 0)]:
        nb.update(feats(c0, c1), y)
    # N_good = 3, N_bad = 1: smoothed prior P(good) = 4/6, P(bad) = 2/6 (sklearn's would be 3/4, 1/4).
    # Query (1, 0): good: (1+1)/(3+10) · (3+1)/(3+10) · Π_{i≥2} (3+1)/(3+|V_i|)
    #               bad:  (1+1)/(1+10) · (0+1)/(1+10) · Π_{i≥2} (1+1)/(1+|V_i|)
    rest_good = math.prod(4 / (3 + v) for v in CARDINALITIES[2:])
    rest_bad = math.prod(2 / (1 + v) for v in CARDINALITIES[2:])
    good = 4 / 6 * 2 / 13 * 4 / 13 * rest_good
    bad = 2 / 6 * 2 / 11 * 1 / 11 * rest_bad
    assert nb.p_good(feats(1, 0)) == pytest.approx(good / (good + bad), abs=1e-9)
    assert nb.log_joint(feats(1, 0))[1] == pytest.approx(math.log(good), abs=1e-9)  # D4's quantity
    # Query (1, 1): memory category 1 was seen only with the bad example.
    good = 4 / 6 * 2 / 13 * 1 / 13 * rest_good
    bad = 2 / 6 * 2 / 11 * 2 / 11 * rest_bad
    assert nb.p_good(feats(1, 1)) == pytest.approx(good / (good + bad), abs=1e-9)
    assert nb.is_good(feats(1, 1)) == (good >= bad)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_naive_bayes_counts_are_categorical_nbs_under_partial_fit_bit_for_bit(seed: int) -> None:
    """The learner keeps its own counts (partial_fit's validation was a quarter of a whole day's run); its
    log-likelihoods must stay scikit-learn's CategoricalNB(alpha=1) exactly, example by example."""
    import numpy as np
    from sklearn.naive_bayes import CategoricalNB

    rng = np.random.default_rng(seed)
    nb = NaiveBayes()
    reference = CategoricalNB(alpha=1.0, fit_prior=False, min_categories=np.array(CARDINALITIES))
    for step in range(300):
        # Mostly single examples, as the learner judges them; now and then a weighted batch, as load() gives.
        size = 1 if step % 7 else int(rng.integers(2, 6))
        rows = [tuple(int(rng.integers(0, k)) for k in CARDINALITIES) for _ in range(size)]
        ys = [int(y) for y in rng.integers(0, 2, size)]
        weights = [1.0] if size == 1 else [float(w) for w in rng.integers(1, 9, size)]
        nb.update_many(rows, ys, weights)
        reference.partial_fit(
            np.array(rows), np.array(ys), classes=np.array([0, 1]), sample_weight=np.array(weights)
        )
        assert nb.class_counts == tuple(float(n) for n in reference.class_count_)
        n_bad, n_good = nb.class_counts
        prior = [math.log((n + 1.0) / (n_bad + n_good + 2.0)) for n in (n_bad, n_good)]
        # The example just learned and two others: both classes' tables, the one that did not change too.
        others = [tuple(int(rng.integers(0, k)) for k in CARDINALITIES) for _ in range(2)]
        for categories in (rows[0], *others):
            expected = [
                sum(float(reference.feature_log_prob_[i][c, v]) for i, v in enumerate(categories))
                for c in (0, 1)
            ]
            probe = Features(categories, (0.0,) * N_FEATURES)
            assert nb.log_joint(probe) == (prior[0] + expected[0], prior[1] + expected[1])
    for ours, theirs in zip(nb.category_count, reference.category_count_, strict=True):
        assert np.array_equal(ours, theirs)


def test_naive_bayes_refuses_an_example_outside_its_categories() -> None:
    nb = NaiveBayes()
    with pytest.raises(ValueError, match="out of its categories"):
        nb.update_many([(0,) * N_FEATURES, (CARDINALITIES[0],) + (0,) * (N_FEATURES - 1)], [1, 1], [1.0, 1.0])
    assert nb.class_counts == (0.0, 0.0)  # nothing of the batch was counted


def test_naive_bayes_cold_start_is_a_tie_and_a_tie_is_good() -> None:
    nb = NaiveBayes()
    assert nb.p_good(feats(3, 1)) == 0.5
    assert nb.is_good(feats(3, 1))
    nb.update(feats(0, 0), 1)  # only good seen: the bad class's prior is 1/3, not 0
    assert 0.5 < nb.p_good(feats(0, 0)) < 1.0


def test_cold_start_assigns_a_task() -> None:
    policy = learner()
    placed = policy.assign(snap([job("a")]), "n0")
    assert [p.task.key for p in placed] == ["a/map/0"]
    assert "P(good)=0.500" in placed[0].explanation.reason
    assert placed[0].explanation.policy == "learning"
    assert placed[0].explanation.score == pytest.approx(0.5)  # E.U. = 1 · 0.5


# --- overload rule and supervision -------------------------------------------------------------------------


def test_overload_rule_is_strict() -> None:
    policy = learner({"overloadThreshold": 1.5})
    assert not policy.overloaded(1.5)  # at exactly θ: not overloaded
    assert policy.overloaded(1.5000001)
    assert load_bin(1.5, 1.5) == 5 and load_bin(1.4999, 1.5) == 4  # θ falls on a bin edge
    assert load_bin(3.0, 1.5) == 10  # overflow bin at 2θ


def test_optional_memory_condition_joins_the_overload_rule() -> None:
    assert not learner().overloaded(0.5, 0.01)  # the paper's rule: load alone
    policy = learner({"minFreeMemory": 0.1})
    assert policy.overloaded(0.5, 0.09) and not policy.overloaded(0.5, 0.1)
    assert not policy.overloaded(0.5, None)  # unknown free memory never overloads
    assert policy.overloaded(1.01, 0.9)  # load still counts


def test_decision_is_judged_at_the_next_heartbeat_with_that_heartbeats_load() -> None:
    policy = learner()
    s = snap([job("a", maps=10)])
    assert heartbeat(policy, s, 0.0, 0.0) == ["a/map"]
    assert policy.state()["policy"]["decisions"] == 0  # not judged yet
    # Another round on the same sample: nothing judged, and no second task before the first is judged (k = 1).
    assert heartbeat(policy, s, 0.0, 50.0) == []
    assert heartbeat(policy, s, 3.0, 50.0, age_s=4.0) == []  # a sample from before the decision: no label
    assert policy.state()["policy"]["decisions"] == 0
    assert heartbeat(policy, s, 5.0, 4.0) == ["a/map"]  # 4 cores: load ratio exactly θ = 1 → good; next task
    st = policy.state()
    assert st["policy"]["decisions"] == 1 and st["policy"]["overloads"] == 0
    assert [(e["loadRatio"], e["y"]) for e in st["policy"]["log"]] == [(1.0, 1)]
    heartbeat(policy, s, 10.0, 4.4)  # ratio 1.1 > 1 → the decision of t = 5 is bad
    st = policy.state()
    assert st["policy"]["log"][-1]["y"] == 0 and st["policy"]["log"][-1]["t"] == 5.0
    assert st["policy"]["overloads"] == 1
    assert st["nodes"]["n0"] == {"decisions": 2, "overloads": 1, "lastLoadRatio": 1.1, "metrics": "fresh"}
    assert st["policy"]["accuracy"] == pytest.approx(1 / 2)


def test_only_assignments_create_examples() -> None:
    policy = learner()
    s = snap([])
    heartbeat(policy, s, 0.0, 0.0)
    heartbeat(policy, s, 5.0, 9.0)
    assert policy.state()["policy"]["decisions"] == 0
    assert policy.state()["policy"]["counts"]["class"] == [0, 0]


# --- perceptron ---------------------------------------------------------------------------------------------


def test_perceptron_updates_only_on_a_mistake_and_equality_is_bad() -> None:
    p = Perceptron(initial_bias=0.1)
    x = Features((0,) * N_FEATURES, tuple(0.5 if i < 2 else 0.0 for i in range(N_FEATURES)))
    assert p.is_good(x)  # cold start: W = 0, b = 0.1 > 0
    p.update(x, 1)  # correct: no change
    assert p.updates == 0 and p.b == 0.1 and not p.w.any()
    p.update(x, 0)  # mistake, c = 1, y = 0: w ← w − x, b ← b − 1 (α = 1)
    assert p.w[:3].tolist() == [-0.5, -0.5, 0.0] and p.b == pytest.approx(-0.9)
    assert not p.is_good(x)
    p.update(x, 1)  # mistake the other way: w ← w + x, b ← b + 1
    assert not p.w.any() and p.b == pytest.approx(0.1)
    p.b = 0.0
    assert p.margin(x) == 0.0 and not p.is_good(x)  # D5: equality is bad


def test_perceptron_policy_assigns_at_cold_start_and_learns() -> None:
    policy = learner({"classifier": "perceptron"})
    s = snap([job("a", maps=10)])
    assert heartbeat(policy, s, 0.0, 0.0) == ["a/map"]
    heartbeat(policy, s, 5.0, 20.0)  # overloaded: a mistake, D6 applies
    assert policy.state()["policy"]["weights"]["updates"] == 1


# --- utilities -----------------------------------------------------------------------------------------------


def ctx(s: ClusterSnapshot, **kw: Any) -> UtilityContext:
    base: dict[str, Any] = dict(
        map_before_reduce=0.05, balances={}, capacities={}, capacity_rule="relative", revenue={}
    )
    base.update(kw)
    return UtilityContext(s, **base)


def test_constant_utility_ties_go_to_submission_order() -> None:
    policy = learner()
    assert heartbeat(policy, snap([job("first", 0.0), job("second", 1.0)]), 5.0, 0.0) == ["first/map"]


def test_fifo_utility_prefers_the_older_job() -> None:
    policy = learner({"utilities": ["fifo"]})
    young, old = job("young", 8.0), job("old", 0.0)
    assert heartbeat(policy, snap([young, old]), 10.0, 0.0) == ["old/map"]
    assert policy.candidates(snap([young]), "n0", NodeMetrics(load1=0.0))[0].utility == pytest.approx(1.0)


def test_map_before_reduce_gates_reduces_until_the_threshold() -> None:
    j = job("j", maps=10, reduces=2, slowstart=0.0)
    s = snap([j])
    c = ctx(s, map_before_reduce=0.5)
    j.finished_maps = 4
    assert map_before_reduce(j, "reduce", c) == 0.0 and map_before_reduce(j, "map", c) == 1.0
    j.finished_maps = 5
    assert map_before_reduce(j, "reduce", c) == 1.0
    policy = learner({"utilities": ["map-before-reduce"], "mapBeforeReduce": 0.5})
    j.finished_maps = 4
    kinds = [cand.kind for cand in policy.candidates(s, "n0", NodeMetrics(load1=0.0))]
    assert kinds == ["map"]


def test_budget_is_zero_at_balance_zero_and_each_task_charges_one_unit() -> None:
    s = snap([])
    assert budget(job("a", user="alice"), "map", ctx(s, balances={"alice": 0.0})) == 0.0
    assert budget(job("a", user="alice"), "map", ctx(s, balances={"alice": 1.0})) == 1.0
    policy = learner({"utilities": ["budget"], "budgets": {"alice": 1}})
    s = snap([job("a", user="alice"), job("b", 1.0, user="bob")])
    assert heartbeat(policy, s, 0.0, 0.0) == ["a/map"]
    assert heartbeat(policy, s, 5.0, 0.0) == ["b/map"]  # alice's balance is 0 now
    assert policy.state()["policy"]["balances"] == {"alice": 0.0}


def test_dedicated_capacity_prefers_the_larger_relative_deficit_and_is_zero_above_the_share() -> None:
    a, b, c = job("a", user="ann"), job("b", user="ben"), job("c", user="cat")
    s = snap([a, b, c])
    s.running["n0"] = [Attempt(a.maps[0], 0, "n0", 0.0)] + [
        Attempt(c.maps[i], 0, "n0", 0.0) for i in range(3)
    ]
    cx = ctx(s, capacities={"ann": 0.5, "ben": 0.2})
    assert dedicated_capacity(a, "map", cx) == pytest.approx((0.5 - 0.25) / 0.5)
    assert dedicated_capacity(b, "map", cx) == pytest.approx(1.0)  # nothing running: full deficit
    assert dedicated_capacity(c, "map", cx) == UNPROMISED
    literal = ctx(s, capacities={"ann": 0.5}, capacity_rule="literal")
    assert dedicated_capacity(a, "map", literal) == pytest.approx(1 / 0.25)
    s.running["n0"] = [Attempt(a.maps[i], 0, "n0", 0.0) for i in range(3)] + [
        Attempt(c.maps[0], 0, "n0", 0.0)
    ]
    assert dedicated_capacity(a, "map", cx) == 0.0  # 0.75 > 0.5
    policy = learner({"utilities": ["dedicated-capacity"], "capacities": {"ann": 0.5, "ben": 0.2}})
    assert heartbeat(policy, s, 0.0, 0.0) == ["b/map"]


def test_revenue_serves_the_higher_payer_first() -> None:
    s = snap([])
    assert revenue(job("x", user="rich"), "map", ctx(s, revenue={"rich": 5.0})) == 5.0
    assert revenue(job("x", user="other"), "map", ctx(s, revenue={"rich": 5.0})) == 1.0
    policy = learner({"utilities": ["revenue"], "revenue": {"rich": 5.0, "poor": 1.0}})
    s = snap([job("p", 0.0, user="poor"), job("r", 1.0, user="rich")])
    assert heartbeat(policy, s, 0.0, 0.0) == ["r/map"]


# --- learning ------------------------------------------------------------------------------------------------


def test_learner_stops_sending_a_job_that_overloads_the_node() -> None:
    # Heavy pays 3× (revenue utility), so the learner keeps choosing it for as long as it believes heavy good:
    # it must *learn* that heavy overloads the node (ratio 2 > θ at the next heartbeat; light leaves 0.5).
    policy = learner({"utilities": ["revenue"], "revenue": {"hv": 3.0}})
    heavy = job("heavy", 0.0, maps=500, hints=HEAVY, user="hv")
    light = job("light", 1.0, maps=500, hints=LIGHT)
    s = snap([heavy, light])
    load = 0.0
    picks: list[str] = []
    for step in range(80):
        placed = heartbeat(policy, s, 5.0 * step, load)
        for attempts in s.running.values():  # tasks end at once: only the last decision drives the load
            for attempt in attempts:
                attempt.task.running, attempt.task.done = False, True
            attempts.clear()
        heavy.running_maps = light.running_maps = 0
        heavy.finished_maps = sum(t.done for t in heavy.maps)
        light.finished_maps = sum(t.done for t in light.maps)
        picks += placed or ["-"]
        load = 8.0 if placed == ["heavy/map"] else 2.0
    assert picks[0] == "heavy/map"  # cold start: P = 0.5 for both, heavy's U is larger
    assert picks.count("heavy/map") >= 2  # it took more than one lesson
    assert picks[-30:] == ["light/map"] * 30
    metrics = NodeMetrics(load1=2.0)
    cands = {c.job.id: c for c in policy.candidates(s, "n0", metrics, include_bad=True)}
    assert cands["heavy"].p_good < 0.5 < cands["light"].p_good
    assert [c.job.id for c in policy.candidates(s, "n0", metrics)] == ["light"]  # heavy is labelled bad
    st = policy.state()["policy"]
    assert st["overloads"] == picks.count("heavy/map") and st["decisions"] == 80 - picks.count("-") - 1


# --- fallback, persistence, options -----------------------------------------------------------------------


@pytest.mark.parametrize("status,load1", [("stale", None), ("missing", None), ("fresh", None)])
def test_unknown_metrics_fall_back_to_fair_without_a_decision(status: str, load1: float | None) -> None:
    policy = learner()
    s = snap([job("a", maps=10, reduces=1)], load1=load1, status=status)
    placed = policy.assign(s, "n0")
    assert [p.task.kind for p in placed] == ["map"]  # Fair within the node's 1 map slot
    assert "Fair fallback" in placed[0].explanation.reason and status in placed[0].explanation.reason
    assert policy.pending.get("n0", []) == []
    assert policy.assign(s, "n0") == []  # the slot is full: Fair respects it
    s.metrics["n0"] = NodeMetrics(load1=0.0)
    s.now = 5.0
    assert len(policy.assign(s, "n0")) == 1  # fresh again: the learner ignores slots
    assert policy.state()["policy"]["decisions"] == 0  # the fallback placement was never judged


def test_pending_decisions_wait_for_fresh_metrics() -> None:
    policy = learner()
    s = snap([job("a", maps=10)])
    heartbeat(policy, s, 0.0, 0.0)
    s.now, s.metrics["n0"] = 5.0, NodeMetrics(status="stale")
    policy.assign(s, "n0")
    assert len(policy.pending["n0"]) == 1
    heartbeat(policy, s, 10.0, 20.0)
    assert policy.state()["policy"]["log"][0]["y"] == 0


def test_state_round_trip_reproduces_posteriors() -> None:
    import json

    policy = learner()
    s = snap([job("a", maps=50, hints=HEAVY), job("b", maps=50, hints=LIGHT)])
    for step in range(12):
        heartbeat(policy, s, 5.0 * step, float(step % 3) * 3.0)
    saved = json.loads(json.dumps(policy.state()))
    restored = learner()
    restored.load_state(saved)
    assert restored.state()["policy"]["counts"] == saved["policy"]["counts"]
    assert saved["policy"]["decisions"] == 11
    for c0 in range(10):
        for c1 in range(2):
            f = feats(c0, c1)
            assert restored.classifier.p_good(f) == pytest.approx(policy.classifier.p_good(f), abs=1e-12)
    per = learner({"classifier": "perceptron"})
    heartbeat(per, s, 100.0, 0.0)
    heartbeat(per, s, 105.0, 99.0)
    back = learner({"classifier": "perceptron"})
    back.load_state(json.loads(json.dumps(per.state())))
    assert back.state()["policy"]["weights"] == per.state()["policy"]["weights"]


@pytest.mark.parametrize(
    "options",
    [
        {"classifier": "svm"},
        {"overloadThreshold": 0},
        {"tasksPerHeartbeat": 0},
        {"utilities": ["constant", "lottery"]},
        {"capacities": {"u": 1.5}},
        {"score": "raw"},
        {"thresholdd": 1},
    ],
)
def test_bad_options_raise(options: dict[str, Any]) -> None:
    with pytest.raises(PolicyConfigError):
        make_policy("learning", options)


def finish_all(s: ClusterSnapshot) -> None:
    for attempts in s.running.values():
        for attempt in attempts:
            attempt.task.running, attempt.task.done = False, True
            s.job(attempt.task.job_id).running_maps -= 1
            s.job(attempt.task.job_id).finished_maps += 1
        attempts.clear()


@pytest.mark.parametrize("explore", [True, False])
def test_idle_node_exploration_keeps_an_idle_node_from_deadlocking(explore: bool) -> None:
    policy = learner({"idleExploration": explore})
    s = snap([job("a", maps=10)])
    assert heartbeat(policy, s, 0.0, 0.0) == ["a/map"]
    finish_all(s)
    assert heartbeat(policy, s, 5.0, 20.0) == []  # judged bad; overloaded: no exploration either
    assert policy.candidates(s, "n0", NodeMetrics(load1=0.0)) == []  # the idle state now looks bad
    placed = policy.assign(snap(s.jobs, load1=0.0, now=10.0), "n0")
    assert len(placed) == (1 if explore else 0)
    if explore:
        assert placed[0].explanation.reason.startswith("idle-node exploration")


def test_unnormalised_score_is_d4() -> None:
    policy = learner({"score": "unnormalised"})
    s = snap([job("a", maps=10)])
    heartbeat(policy, s, 0.0, 0.0)
    heartbeat(policy, s, 5.0, 1.0)
    cand = policy.candidates(s, "n0", NodeMetrics(load1=1.0))[0]
    assert isinstance(policy.classifier, NaiveBayes)
    assert cand.key == pytest.approx(math.log(1.0) + policy.classifier.log_joint(cand.features)[1])


def test_pending_decisions_are_dropped_after_max_wait_without_fresh_metrics() -> None:
    from mrsched.policies.learning import MAX_WAIT_S

    policy = learner()
    s = snap([job("a", maps=10)], load1=0.0)
    policy.assign(s, "n0")
    for step in range(1, 15):
        s.now, s.metrics["n0"] = 5.0 * step, NodeMetrics(status="unavailable")
        policy.assign(s, "n0")
        assert len(policy.pending["n0"]) == (1 if 5.0 * step <= MAX_WAIT_S else 0)


def test_a_placement_that_never_started_teaches_nothing() -> None:
    policy = learner()
    s = snap([job("a", maps=10)])
    (placed,) = policy.assign(s, "n0")
    # The owner could not create the pod (it did not fit): the task is pending again at the next heartbeat.
    placed.task.running = False
    s.job("a").running_maps -= 1
    s.running["n0"].clear()
    heartbeat(policy, s, 5.0, 9.0)
    assert policy.state()["policy"]["decisions"] == 0 and policy.state()["policy"]["overloads"] == 0
