"""The ``diagnosis`` policy (seed 002 ch.6, pervasive diagnosis): hand-computed belief updates, information gain
and regime change, the frozen baseline, x* under a belief, persistence, and the core-shutdown effect in the
simulator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mrsched.core.model import Node, Task, TaskOutcome
from mrsched.policies.dara.model import Observation, Profile, load_ratios, node_loads, predict_times
from mrsched.policies.diagnosis.policy import (
    Diagnosis,
    DiagnosisConfig,
    expected_throughputs,
    grid_information_gains,
    information_gain,
    kalman_update,
    predict,
)
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import load_scenario

REPO = Path(__file__).resolve().parents[3]
ALPHAS = {"c": (0.01, 0.001)}


def test_one_kalman_update_by_hand() -> None:
    # Prior s = (1, 1), Σ = 0.04 I; one map with a = (2, 0), y = 3, σ² = 1.
    # S = aᵀΣa + σ² = 4 × 0.04 + 1 = 1.16; K = Σa / S = (0.08, 0) / 1.16 = (0.0689655, 0);
    # residual y − aᵀμ = 3 − 2 = 1 → μ = (1.0689655, 1); Σ_cc = 0.04 − 0.0689655 × 0.08 = 0.0344828.
    mean, cov = kalman_update(np.ones(2), 0.04 * np.eye(2), np.array([2.0, 0.0]), 3.0, 1.0)
    assert mean == pytest.approx([1.0689655, 1.0], abs=1e-7)
    assert cov.ravel() == pytest.approx([0.0344828, 0.0, 0.0, 0.04], abs=1e-7)


def test_information_gain_by_hand() -> None:
    cov = 0.04 * np.eye(2)
    a = np.array([[2.0, 0.0]])
    # One observation: ½ ln(1 + aᵀΣa/σ²) = ½ ln 1.16 = 0.0742; two: ½ ln 1.32 = 0.1388; none: 0.
    assert information_gain(cov, a, np.array([1.0])) == pytest.approx(0.5 * math.log(1.16))
    assert information_gain(cov, a, np.array([1.0]), np.array([2.0])) == pytest.approx(0.5 * math.log(1.32))
    assert information_gain(cov, a, np.array([1.0]), np.array([0.0])) == 0.0
    # Orthogonal features add: det(I + diag(0.16, 0.04)) = 1.16 × 1.04.
    both = np.array([[2.0, 0.0], [0.0, 1.0]])
    assert information_gain(cov, both, np.ones(2)) == pytest.approx(0.5 * math.log(1.16 * 1.04))


def test_the_random_walk_adds_v_and_v_low_stops_at_the_prior() -> None:
    assert np.diag(predict(0.03 * np.eye(2), 0.001)) == pytest.approx([0.031, 0.031])
    assert np.diag(predict(0.0395 * np.eye(2), 0.001, cap=0.04)) == pytest.approx([0.04, 0.04])
    assert np.diag(predict(0.0395 * np.eye(2), 1.0)) == pytest.approx([1.0395, 1.0395])  # V_high: no cap


def _policy(**options: object) -> Diagnosis:
    policy = Diagnosis(DiagnosisConfig.model_validate({"alphas": ALPHAS, **options}))
    # One application: 10 CPU-s per map, no I/O, λ = 20 s; with 10 containers L_c = 10 and the load feature
    # is a = (c α_c L_c², 0) = (10 × 0.01 × 100, 0) = (10, 0): t = 20 + 10 s_c.
    policy.profiles["j"] = Profile(10.0, 0.0, 100.0)
    policy.fit.lam["j"] = 20.0
    return policy


def _feed(policy: Diagnosis, s_c: float, n: int) -> None:
    for _ in range(n):
        assert policy.observe("n", Observation("j", "c", 20.0 + 10.0 * s_c, {"j": 10.0}))


def test_after_a_change_the_detector_lets_the_belief_jump() -> None:
    # Many maps at s_c = 1, then the node slows to s_c = 5 (t = 70 s instead of 30 s), four maps.
    slow = _policy(detectorN=99, detectorWindow=99)  # V_low only: the detector never fires
    fast = _policy()
    for policy in (slow, fast):
        _feed(policy, 1.0, 30)
        assert policy.belief("n").mean[0] == pytest.approx(1.0, abs=0.01)
        _feed(policy, 5.0, 4)
    # V_low = 0.001 keeps the belief's variance near √(q σ²/a²) ≈ 0.006: each 40 s residual moves it ≈ 0.6.
    assert slow.belief("n").mean[0] < 3.5 and slow.belief("n").detections == 0
    # Two residuals beyond 3σ fire the detector (m = 1): V_high = 1 forgets the old evidence and s jumps.
    assert fast.belief("n").mean[0] > 4.5 and fast.belief("n").detections == 1


def test_x_star_shrinks_on_a_node_believed_slower_and_freeze_keeps_the_prior() -> None:
    nodes = {name: Node(name, 8, 12_000.0, node_class="c") for name in ("healthy", "slowed")}
    policy = _policy()
    policy.fitted_classes = {"c"}
    policy.belief("slowed").mean = np.array([6.0, 1.0])
    policy.belief("slowed").observations = 10  # a learned belief (a prior one is DARA's point estimate)
    policy.compute_optimal(nodes, ["j"])
    # Alone on a node, τ(x) = λx/(λ + K s_c x²) peaks at x = sqrt(λ/(K s_c)), K = c α_c = 0.1:
    # sqrt(20/0.1) ≈ 14 at s_c = 1, sqrt(20/0.6) ≈ 6 at s_c = 6 (Monte Carlo over the belief: ±1).
    assert policy.optimal["healthy"]["j"] == pytest.approx(14, abs=1)
    assert policy.optimal["slowed"]["j"] == pytest.approx(6, abs=1)

    # "Without pervasive diagnosis": a finished map's duration does not move the frozen belief.
    frozen = _policy(freeze=True)
    frozen.on_task_finished(TaskOutcome(Task("j", "map", 0), "n", 0.0, 70.0, True, cpu_s=10.0))
    assert "n" not in frozen.beliefs or frozen.belief("n").observations == 0


def test_beliefs_survive_a_restart_through_state() -> None:
    policy = _policy()
    _feed(policy, 3.0, 5)
    saved = json.loads(json.dumps(policy.state()))
    assert saved["nodes"]["n"]["observations"] == 5 and saved["nodes"]["n"]["slowdownC"] > 1.5
    restored = _policy()
    restored.load_state(saved)
    assert restored.belief("n").mean == pytest.approx(policy.belief("n").mean, abs=1e-6)
    assert restored.belief("n").cov.ravel() == pytest.approx(policy.belief("n").cov.ravel(), abs=1e-8)


def test_after_cores_shut_down_the_belief_brings_the_servers_throughput_back() -> None:
    # bench/scenarios/gupta-ch6-core-shutdown.yaml (6 nodes, one loses 7 of its 8 cores at 600 s), one seed,
    # with and without pervasive diagnosis (about 30 s). Both first drain the maps the server was running at the
    # fault (nothing is preempted); then the belief's x* (≈ 2 containers) completes maps faster than the frozen
    # belief's 12 fighting over one core.
    scenario = load_scenario(REPO / "bench" / "scenarios" / "gupta-ch6-core-shutdown.yaml")
    small = scenario.model_copy(update={"policies": ["diagnosis", "diagnosis:frozen"], "seeds": [1]})
    results, _ = run_scenario(small)
    settled = {
        name: results["policies"][name]["detection"]["throughput"][0]["maps_per_min_settled"]
        for name in ("diagnosis", "diagnosis:frozen")
    }
    print("shut-down server's maps/min once settled:", settled)
    assert settled["diagnosis"] > 1.3 * settled["diagnosis:frozen"]


def test_draws_are_numpys_multivariate_normal_draw_for_draw() -> None:
    # _draw keeps the covariance's SVD between draws; it must give numpy's multivariate_normal numbers (SVD
    # method, the generator's same stream), whichever covariance, and leave the generator where numpy would.
    policy = _policy(samples=16)
    reference = np.random.default_rng(policy.seed)
    covs = [0.04 * np.eye(2), np.array([[0.05, 0.03], [0.03, 0.02]]), np.array([[1.0, 1.0], [1.0, 1.0]])]
    b = policy.belief("n")
    for cov in covs:
        b.cov = cov
        for mean in (np.array([1.0, 1.0]), np.array([3.0, 0.5])):
            b.mean = mean
            expected = reference.multivariate_normal(mean, cov, size=16, check_valid="ignore")
            assert np.array_equal(policy._draw(b), np.maximum(expected, 0.01))
    assert policy._rng.bit_generator.state == reference.bit_generator.state


def _two_nodes() -> dict[str, Node]:
    return {name: Node(name, 8, 12_000.0, node_class="c") for name in ("a", "b")}


def test_a_deferred_x_star_is_the_one_computed_when_it_was_due() -> None:
    # x* is evaluated when a heartbeat reads it, but from what held (and the draws drawn) when it was due: a
    # belief that moves before the read does not change it, and an x* never read does not shift the random
    # stream of the next. Twin policies, one reading every x* at once, the other only at the end.
    eager, lazy = _policy(), _policy()
    seen = []
    for policy in (eager, lazy):
        policy.fitted_classes = {"c"}
        for node in ("a", "b"):
            policy.belief(node).observations = 10
        policy.belief("b").mean = np.array([4.0, 1.0])
    for step, s_c in enumerate((1.0, 6.0, 2.0, 8.0)):
        for policy in (eager, lazy):
            policy.belief("a").mean = np.array([s_c, 1.0])
            policy.compute_optimal(_two_nodes(), ["j"])
        seen.append({node: dict(x) for node, x in eager.optimal.items()})  # read now
        assert lazy._pending  # not evaluated yet
        if step == 3:
            for policy in (eager, lazy):
                policy.belief("a").mean = np.array([1.0, 1.0])  # moves after x* was due
    assert lazy.optimal == seen[-1]
    # sqrt(λ/(K s_c)) with K = 0.1: s_c = 8 gives 5 containers (±1 by Monte Carlo), not s_c = 1's 14
    assert seen[-1]["a"]["j"] == pytest.approx(5, abs=1) and seen[1]["a"]["j"] == pytest.approx(6, abs=1)
    assert lazy._rng.bit_generator.state == eager._rng.bit_generator.state


def test_the_grid_forms_agree_with_the_one_mix_forms() -> None:
    # Per row x of a grid: the expected throughput is the mean over the samples of Eq 4.9 with Eq 4.12's times
    # at α scaled by the sample, and the information gain is information_gain with x's features, once each.
    rng = np.random.default_rng(3)
    lam, c, d = rng.uniform(5, 60, 3), rng.uniform(1, 30, 3), rng.uniform(0, 400, 3)
    alpha_c, alpha_d, noise = 0.01, 0.002, rng.uniform(0.5, 4, 3)
    grid = rng.integers(0, 6, (20, 3)).astype(np.float64)
    samples = rng.uniform(0.5, 2.0, (8, 2))
    cov = np.array([[0.05, 0.01], [0.01, 0.03]])
    expected = expected_throughputs(grid, lam, c, d, alpha_c, alpha_d, samples)
    gains = grid_information_gains(grid, c, d, alpha_c, alpha_d, cov, noise)
    rc, rd = load_ratios(c, d)
    for row, value, gain in zip(grid, expected, gains, strict=True):
        per_sample = []
        for s_c, s_d in samples:
            t = predict_times(lam, c, d, s_c * alpha_c, s_d * alpha_d, row)
            per_sample.append(float(np.sum(np.where(row > 0, lam * row / t, 0.0))))
        assert value == pytest.approx(np.mean(per_sample), rel=1e-12)
        lc, ld = node_loads(row, rc, rd)
        features = np.column_stack([c * alpha_c * lc**2, d * alpha_d * ld**2])
        assert gain == pytest.approx(information_gain(cov, features, noise, row), rel=1e-9, abs=1e-12)
