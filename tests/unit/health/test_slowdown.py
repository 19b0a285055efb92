"""Seed 002 §5.3 (Method B) soft-fault core, mrsched.health: the γ posterior (Eq 5.14/5.15) by hand, the
θ posterior from an uninformative prior, the closed-form information gain, the random walk of Eq 6.7/6.8 with
its change detector, the Degraded decision rule, and the state round trip."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from mrsched.health import AppBelief, MonitorConfig, NodeHealth, SlowdownBelief, SlowdownMonitor

#: The thesis's update as printed, for the hand-computed cases: σ the probe's, V_low uncapped, no γ floor, no
#: peer check, a verdict at the first update that finds it (the defaults add readings of ours, tested below).
LITERAL: dict[str, Any] = {
    "relative_sd": 0.0,
    "relative_sd_rate": 0.0,
    "cap_drift": False,
    "gamma_floor": 0.0,
    "peer_check": False,
    "confirm_updates": 1,
}

# Two apps with known profiles: one CPU-heavy, one disk-heavy (θ in reference seconds).
PROFILES = {"cpu": (10.0, 1.0), "disk": (1.0, 10.0)}


def _bayes(
    prior_mean: Any, prior_cov: Any, rows: list[tuple[float, float]], ys: list[float], sigma: float
) -> tuple[Any, Any]:
    """Bayesian linear regression written out independently: Σ⁻¹_post = Σ⁻¹ + XᵀX/σ², μ = Σ_post(Σ⁻¹μ0 + Xᵀy/σ²)."""
    x = np.array(rows, dtype=float)
    prior_precision = np.linalg.inv(prior_cov)
    cov = np.linalg.inv(prior_precision + x.T @ x / sigma**2)
    return cov @ (prior_precision @ prior_mean + x.T @ np.array(ys) / sigma**2), cov


# --- the γ posterior -------------------------------------------------------------------------------------------


def test_gamma_posterior_after_one_and_two_observations_by_hand() -> None:
    # Prior γ ~ N((1, 1), 0.5 I). Task 1: θ = (1, 1), y = T − Ω = 3, σ = 1.
    #   S = θᵀΣθ + σ² = 0.5 + 0.5 + 1 = 2, K = Σθ/S = (0.25, 0.25), innovation 3 − 2 = 1
    #   μ1 = (1.25, 1.25), Σ1 = 0.5 I − K(Σθ)ᵀ = [[0.375, −0.125], [−0.125, 0.375]]
    belief = SlowdownBelief.prior((1.0, 1.0), (0.5, 0.5))
    belief.update((1.0, 1.0), 3.0, 1.0)
    assert belief.mean == pytest.approx([1.25, 1.25])
    assert belief.covariance == pytest.approx(np.array([[0.375, -0.125], [-0.125, 0.375]]))
    # Task 2: θ = (2, 0), y = 3, σ = 1. Information form: Λ2 = 2I + [[1,1],[1,1]] + [[4,0],[0,0]] = [[7,1],[1,3]],
    # det 20, Σ2 = [[3,−1],[−1,7]]/20; h2 = (2,2) + 3·(1,1) + 3·(2,0) = (11, 5), μ2 = Σ2 h2 = (1.4, 1.2).
    belief.update((2.0, 0.0), 3.0, 1.0)
    assert belief.mean == pytest.approx([1.4, 1.2])
    assert belief.covariance == pytest.approx(np.array([[0.15, -0.05], [-0.05, 0.35]]))
    # The same through the textbook formula (independent of the implementation), with a non-trivial prior.
    prior_mean, prior_cov = np.array([0.1, 0.33]), np.array([[4e-4, 0.0], [0.0, 4.4e-3]])
    rows, ys = [(20.0, 1.0), (2.0, 20.0)], [2.9, 7.1]
    other = SlowdownBelief.prior(prior_mean, np.diag(prior_cov))
    for row, y in zip(rows, ys, strict=True):
        other.update(row, y, 0.3)
    mean, cov = _bayes(prior_mean, prior_cov, rows, ys, 0.3)
    assert other.mean == pytest.approx(mean) and other.covariance == pytest.approx(cov)
    assert other.covariance[0, 1] < 0  # γc and γd negatively correlated given an observation (§5.3.1)


def test_predict_adds_the_variance_to_each_diagonal_element() -> None:
    belief = SlowdownBelief.prior((1.0, 1.0), (0.5, 0.5))
    belief.update((1.0, 1.0), 3.0, 1.0)
    belief.predict(0.1)
    assert belief.mean == pytest.approx([1.25, 1.25])  # a random walk leaves the mean (Eq 6.7)
    assert belief.covariance == pytest.approx(np.array([[0.475, -0.125], [-0.125, 0.475]]))
    belief.predict((0.0, 1.0))
    assert belief.covariance == pytest.approx(np.array([[0.475, -0.125], [-0.125, 1.475]]))


def test_the_monitor_subtracts_omega_and_updates_gamma_with_the_apps_theta() -> None:
    # Nominal γ = (1, 1); relative prior 0.5·nominal² → Σ0 = 0.5 I; V_low = 0 so that the hand numbers above hold.
    cfg = MonitorConfig(
        **LITERAL, prior_var=0.5, v_low=0.0, known_profiles={"a": (1.0, 1.0), "b": (2.0, 0.0)}, known_sd=1e-6
    )
    monitor = SlowdownMonitor(cfg)
    nominal: dict[str, Any] = {"gamma_c": 1.0, "gamma_d": 1.0, "omega_s": 40.0, "sigma_s": 1.0}
    health, changed = monitor.observe("n", "a", 43.0, 1.0, **nominal)  # y = 43 − Ω = 3
    assert (health.gamma_c, health.gamma_d) == pytest.approx((1.25, 1.25), abs=1e-6)
    assert (health.sd_c, health.sd_d) == pytest.approx((math.sqrt(0.375), math.sqrt(0.375)), abs=1e-6)
    assert not changed and health.degraded == () and health.observations == 1 and health.since is None
    health, _ = monitor.observe("n", "b", 0.0, 2.0, **{**nominal, "omega_s": -3.0})  # y = 0 − (−3) = 3
    assert (health.gamma_c, health.gamma_d) == pytest.approx((1.4, 1.2), abs=1e-6)
    assert health.observations == 2 and (health.nominal_c, health.nominal_d) == (1.0, 1.0)


# --- the θ posterior (Alg 5.3.1 step 2a) ------------------------------------------------------------------------


def test_app_theta_starts_uninformative_tube_then_ellipse() -> None:
    app = AppBelief()
    assert app.mean is None and not app.proper
    # Node 1 γ̄ = (1, 1), node 2 γ̄ = (0.1, 0.5); true θ = (5, 10): y1 = 15, y2 = 0.5 + 5 = 5.5.
    app.update((1.0, 1.0), 15.0, 1.0)
    assert app.mean is None and app.covariance is None  # one observation: a tube (§5.3.2)
    app.update((1.0, 1.0), 15.0, 1.0)
    assert app.mean is None  # same ratio again: still a tube (Eq 3.16's Δ = 0)
    app.update((0.1, 0.5), 5.5, 0.5)
    assert app.mean == pytest.approx([5.0, 10.0])  # noise-free: the three lines meet at the true θ
    # Λ = 2·[[1,1],[1,1]]/1 + [[0.01,0.05],[0.05,0.25]]/0.25
    assert app.precision == pytest.approx(np.array([[2.04, 2.2], [2.2, 3.0]]))
    assert app.covariance == pytest.approx(np.linalg.inv(np.array([[2.04, 2.2], [2.2, 3.0]])))
    assert app.observations == 3
    assert AppBelief.known((3.0, 4.0)).mean == pytest.approx([3.0, 4.0])


def test_gamma_waits_for_a_learned_theta_and_learns_it_on_heterogeneous_nodes() -> None:
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL))
    old: dict[str, Any] = {"gamma_c": 1.0, "gamma_d": 1.0, "omega_s": 45.0, "sigma_s": 1.0}
    new: dict[str, Any] = {"gamma_c": 0.1, "gamma_d": 0.5, "omega_s": 5.0, "sigma_s": 0.5}
    monitor.observe("old", "wc", 45.0 + 15.0, 1.0, **old)  # θ = (5, 10)
    assert monitor.usable_theta("wc") is None
    old_belief = monitor.belief("old")
    assert old_belief is not None and old_belief.mean == pytest.approx([1.0, 1.0])
    health, _ = monitor.observe("new", "wc", 5.0 + 5.5, 2.0, **new)
    theta = monitor.usable_theta("wc")
    assert theta is not None and theta == pytest.approx([5.0, 10.0])
    # The γ update used θ̄ = (5, 10) with zero residual: the mean stays at nominal, the variance shrank.
    assert (health.gamma_c, health.gamma_d) == pytest.approx((0.1, 0.5))
    assert health.sd_d < 0.2 * 0.5 and health.observations == 1
    assert monitor.nodes() == ["new", "old"] and monitor.apps() == ["wc"]


# --- information gain -------------------------------------------------------------------------------------------


def test_information_gain_is_half_the_log_det_ratio() -> None:
    belief = SlowdownBelief.prior((1.0, 1.0), (0.5, 0.5))
    # det(I + Σ aaᵀ/σ²) = 1 + aᵀΣa/σ² = 1 + 1 = 2 for a = (1, 1): ½ ln 2.
    assert belief.information_gain([(1.0, 1.0)], 1.0) == pytest.approx(0.5 * math.log(2.0))
    # Two such tasks: 1 + 2·1 = 3.
    assert belief.information_gain([(1.0, 1.0), (1.0, 1.0)], 1.0) == pytest.approx(0.5 * math.log(3.0))
    # The same as ½ ln(det Σ_prior / det Σ_post) after the update, whatever y is observed.
    before = float(np.linalg.det(belief.covariance))
    belief.update((1.0, 1.0), 123.0, 1.0)
    assert 0.5 * math.log(before / float(np.linalg.det(belief.covariance))) == pytest.approx(
        0.5 * math.log(2.0)
    )
    assert belief.information_gain([(0.0, 0.0)], 1.0) == 0.0
    assert belief.information_gain([], 1.0) == 0.0


def test_information_gain_prefers_the_uncertain_direction() -> None:
    belief = SlowdownBelief.prior((1.0, 1.0), (1.0, 0.01))  # γc uncertain, γd well known
    along_c = belief.information_gain([(1.0, 0.0)], 1.0)
    along_d = belief.information_gain([(0.0, 1.0)], 1.0)
    assert along_c == pytest.approx(0.5 * math.log(2.0)) and along_d == pytest.approx(0.5 * math.log(1.01))
    assert along_c > 50 * along_d


# --- regime change (Eq 6.7/6.8 with the change detector) -----------------------------------------------------


def _regime(detector_k: float) -> list[tuple[float, float, int]]:
    """40 noise-free tasks at nominal γ = (1, 1), alternating a CPU- and a disk-heavy app, then γd steps to 2."""
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, detector_k=detector_k, known_profiles=PROFILES))
    nominal: dict[str, Any] = {"gamma_c": 1.0, "gamma_d": 1.0, "omega_s": 0.0, "sigma_s": 1.0}
    t = 0.0
    for gamma_d, count in ((1.0, 40), (2.0, 6)):
        out = []
        for i in range(count):
            app = "cpu" if i % 2 == 0 else "disk"
            theta = PROFILES[app]
            t += 1.0
            health, _ = monitor.observe("n", app, theta[0] * 1.0 + theta[1] * gamma_d, t, **nominal)
            out.append((health.gamma_c, health.gamma_d, monitor._nodes["n"].changes))
        if gamma_d == 1.0:
            assert out[-1][:2] == pytest.approx((1.0, 1.0))
            assert health.sd_d == pytest.approx(0.0602, abs=1e-3)  # V_low's steady state, ≈ 6 % of nominal
    return out


def test_with_v_low_only_the_mean_follows_a_step_slowly() -> None:
    after = _regime(detector_k=1e9)  # the detector never fires
    gamma_d = [g[1] for g in after]
    # Disk tasks (every second one) move γd by a gain of about 0.023 × the residual of 10 s at first, less later.
    assert gamma_d[1] == pytest.approx(1.357, abs=2e-3)
    assert gamma_d[3] == pytest.approx(1.586, abs=2e-3)
    assert gamma_d[5] == pytest.approx(1.733, abs=2e-3)
    assert all(g[2] == 0 for g in after)


def test_the_change_detector_switches_to_v_high_and_the_mean_jumps() -> None:
    after = _regime(detector_k=3.0)
    # Residuals of 10 s on the disk tasks (z ≈ 8): the 2nd exceedance in the window fires m = 1 at the 4th task.
    assert [g[2] for g in after] == [0, 0, 0, 1, 1, 1]
    assert after[3][1] == pytest.approx(1.983, abs=2e-3)
    assert after[5][1] == pytest.approx(2.0, abs=0.01)
    assert after[5][0] == pytest.approx(1.0, abs=0.01)  # γc is left where it was


# --- the decision rule --------------------------------------------------------------------------------------------

NEW: dict[str, Any] = {"gamma_c": 0.1, "gamma_d": 0.33, "omega_s": 5.3, "sigma_s": 0.3}
APPS = {"pi": (20.0, 1.0), "dfsio": (2.0, 20.0)}


def _feed(
    monitor: SlowdownMonitor, gamma: tuple[float, float], steps: range, rng: np.random.Generator
) -> list[tuple[int, NodeHealth, bool]]:
    """One task per step, alternating apps, with Gaussian noise σ on the duration; returns (step, health, changed)."""
    out = []
    for k in steps:
        app = "pi" if k % 2 == 0 else "dfsio"
        theta = APPS[app]
        duration = (
            theta[0] * gamma[0] + theta[1] * gamma[1] + NEW["omega_s"] + rng.normal(0.0, NEW["sigma_s"])
        )
        health, changed = monitor.observe("n", app, duration, float(k), **NEW)
        out.append((k, health, changed))
    return out


def test_a_cpu_hog_flags_cpu_and_clears_after_recovery() -> None:
    rng = np.random.default_rng(7)
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    healthy = _feed(monitor, (0.1, 0.33), range(0, 60), rng)
    assert all(h.degraded == () for _, h, _ in healthy)
    hogged = _feed(monitor, (0.2, 0.33), range(60, 100), rng)  # γc doubled
    onset = next(k for k, h, changed in hogged if changed)
    assert 60 <= onset < 70  # within a few tasks
    health = hogged[-1][1]
    assert health.degraded == ("cpu",) and health.since == float(onset)
    assert all(h.degraded in ((), ("cpu",)) for _, h, _ in hogged)  # never blames the disk
    assert health.gamma_c == pytest.approx(0.2, abs=0.02) and health.gamma_d == pytest.approx(0.33, abs=0.03)
    assert health.p_degraded_c > 0.99 and health.p_degraded_d < 0.01
    assert (
        health.evidence.startswith("γc 0.19 ± 0.0083 vs nominal 0.1 (1.9×)")
        and "P(γc > 1.5× nominal)" in health.evidence
    )
    recovered = _feed(monitor, (0.1, 0.33), range(100, 140), rng)
    cleared = next(k for k, h, changed in recovered if changed)
    assert (
        100 <= cleared < 110 and recovered[-1][1].degraded == () and recovered[-1][1].since == float(cleared)
    )
    assert "healthy" in recovered[-1][1].evidence


def test_a_disk_hog_flags_disk() -> None:
    rng = np.random.default_rng(11)
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    _feed(monitor, (0.1, 0.33), range(0, 60), rng)
    hogged = _feed(monitor, (0.1, 0.66), range(60, 100), rng)
    assert all(h.degraded in ((), ("disk",)) for _, h, _ in hogged)
    health = hogged[-1][1]
    assert health.degraded == ("disk",) and health.gamma_d == pytest.approx(0.66, abs=0.05)
    assert health.p_degraded_c < 0.01


def test_a_healthy_noisy_node_raises_no_false_alarm() -> None:
    rng = np.random.default_rng(3)
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    run = _feed(monitor, (0.1, 0.33), range(0, 800), rng)
    assert not any(changed for _, _, changed in run)
    final = run[-1][1]
    assert final.observations == 800 and final.since is None
    assert max(h.p_degraded_c for _, h, _ in run) < 0.5 and max(h.p_degraded_d for _, h, _ in run) < 0.5


def test_no_verdict_before_min_updates() -> None:
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS, min_updates=5))
    nominal: dict[str, Any] = {**NEW, "sigma_s": 0.01}
    for k in range(5):  # a tenfold CPU slowdown, but only four tasks until the fifth
        theta = APPS["pi" if k % 2 == 0 else "dfsio"]
        duration = theta[0] * 1.0 + theta[1] * 0.33 + 5.3
        health, changed = monitor.observe("n", "pi" if k % 2 == 0 else "dfsio", duration, float(k), **nominal)
        if k < 4:
            assert health.degraded == () and not changed and "no verdict before 5 tasks" in health.evidence
    assert changed and health.degraded == ("cpu",) and health.since == 4.0


# --- persistence and configuration ---------------------------------------------------------------------------


def test_state_round_trip_through_json() -> None:
    rng = np.random.default_rng(5)
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    _feed(monitor, (0.1, 0.33), range(0, 30), rng)
    _feed(monitor, (0.2, 0.33), range(30, 60), rng)
    monitor.observe("other", "wordcount", 12.0, 61.0, gamma_c=1.0, gamma_d=1.0, omega_s=2.0, sigma_s=1.0)
    saved = json.loads(json.dumps(monitor.state()))
    restored = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    restored.load_state(saved)
    assert restored.nodes() == monitor.nodes() == ["n", "other"] and restored.apps() == monitor.apps()
    assert restored.health("n") == monitor.health("n") and restored.health("other") == monitor.health("other")
    resumed = restored.health("n")
    assert resumed is not None and resumed.degraded == ("cpu",)
    # Both continue identically: the detector window and the apps' θ came back too.
    a = _feed(monitor, (0.1, 0.33), range(60, 80), np.random.default_rng(9))
    b = _feed(restored, (0.1, 0.33), range(60, 80), np.random.default_rng(9))
    assert [h for _, h, _ in a] == [h for _, h, _ in b]
    assert restored.state() == monitor.state()


def test_a_malformed_state_raises_and_changes_nothing() -> None:
    monitor = SlowdownMonitor()
    monitor.observe("n", "x", 10.0, 0.0, gamma_c=1.0, gamma_d=1.0, omega_s=1.0, sigma_s=1.0)
    before = monitor.state()
    for garbage in ({"nodes": "garbage"}, {"nodes": {"m": {"mean": [1.0]}}}, {"version": 99}):
        with pytest.raises((ValueError, KeyError, TypeError)):
            monitor.load_state(garbage)
        assert monitor.state() == before
    assert monitor.health("missing") is None


def test_config_rejects_unknown_and_invalid_options() -> None:
    unknown: dict[str, Any] = {"no_such_option": 1}
    with pytest.raises(TypeError):  # the scenario's monitor.options check relies on TypeError
        MonitorConfig(**unknown)
    invalid: list[dict[str, Any]] = [
        {"p_clear": 0.995},
        {"v_high": 0.0001},
        {"delta": -0.1},
        {"detector_n": 5},
        {"prior_var": 0.0},
    ]
    for bad in invalid:
        with pytest.raises(ValueError):
            MonitorConfig(**bad)
    with pytest.raises(ValueError):
        SlowdownMonitor().observe("n", "x", 1.0, 0.0, gamma_c=0.0, gamma_d=1.0, omega_s=0.0, sigma_s=1.0)


# --- what placement sees: Node.slowdown ------------------------------------------------------------------------


def test_a_degraded_nodes_slowdown_reaches_the_policies_and_a_healthy_one_stays_none() -> None:
    rng = np.random.default_rng(11)
    monitor = SlowdownMonitor(MonitorConfig(**LITERAL, known_profiles=APPS))
    _feed(monitor, (0.1, 0.33), range(0, 60), rng)
    assert monitor.slowdown("n") is None  # healthy: its noise never reaches placement
    _feed(monitor, (0.1, 0.66), range(60, 100), rng)
    factor_c, factor_d = monitor.slowdown("n") or (0.0, 0.0)
    # Only the degraded resource moves: disk at about 0.66 / 0.33 = 2× its nominal, CPU left at 1.
    assert factor_c == 1.0 and factor_d == pytest.approx(2.0, rel=0.15)
    assert monitor.slowdown("never-seen") is None


def test_throughput_divides_a_degraded_nodes_probed_kappa_by_its_slowdown() -> None:
    from mrsched.core.model import ClusterSnapshot, Node
    from mrsched.core.probes import Capability, slowed
    from mrsched.policies.throughput.policy import Throughput

    probe = Capability(kappa_c=7.5, kappa_d=2.5, omega_s=5.3, sigma_s=1.0)
    assert slowed(probe, None) is probe
    assert slowed(probe, (1.0, 2.0)) == Capability(7.5, 1.25, 5.3, 1.0)
    nodes = {
        "healthy": Node("healthy", 2, 4096, probe=probe),
        "slow-disk": Node("slow-disk", 2, 4096, probe=probe, slowdown=(1.0, 2.0)),
    }
    snapshot = ClusterSnapshot(0.0, nodes, {n: [] for n in nodes}, [])
    policy = Throughput()
    assert policy.capability(snapshot, "healthy") == probe
    assert policy.capability(snapshot, "slow-disk") == Capability(7.5, 1.25, 5.3, 1.0)


# --- our readings: task noise in proportion, drift capped, θ not taught by a degraded node ---------------------


def test_noise_in_proportion_to_the_work_keeps_contention_swings_from_raising_alarms() -> None:
    # A healthy node whose disk-heavy maps take 0.6× or 1.6× their profile's disk work at random (alone on the
    # disk or sharing it; the profile, learned cluster-wide, holds the average): with the probe's σ alone (0.5 s)
    # every swing is an outlier, the detector fires and V_high moves the belief to the last swing; the learned
    # ρ absorbs them.
    rng = np.random.default_rng(5)

    def run(cfg: MonitorConfig) -> tuple[int, float]:
        monitor = SlowdownMonitor(cfg)
        alarms = 0
        for k in range(300):
            app = "pi" if k % 3 == 0 else "dfsio"
            theta = APPS[app]
            share = 1.0 if app == "pi" else (0.6 if rng.random() < 0.5 else 1.6)
            duration = theta[0] * 0.1 + theta[1] * 0.33 * share + NEW["omega_s"] + rng.normal(0.0, 0.5)
            health, changed = monitor.observe("n", app, duration, float(k), **{**NEW, "sigma_s": 0.5})
            alarms += changed and bool(health.degraded)
        rel_sd = math.sqrt(monitor.state()["nodes"]["n"]["rel_var"])
        return alarms, rel_sd

    literal_alarms, _ = run(MonitorConfig(**LITERAL, known_profiles=APPS))
    alarms, rel_sd = run(MonitorConfig(known_profiles=APPS))
    assert literal_alarms >= 1  # the thesis's update with the probe's σ raises alarms on a healthy node
    assert alarms == 0 and 0.2 < rel_sd < 0.8  # the learned spread of a 0.6×/1.6× swing


def test_v_low_drift_never_takes_a_variance_above_the_priors() -> None:
    # Only disk-heavy maps for a long time: γc is observed weakly, and its variance would grow by V_low per task.
    monitor = SlowdownMonitor(MonitorConfig(known_profiles={"io": (0.0, 10.0)}))
    for k in range(500):
        monitor.observe("n", "io", 10.0 * 0.33 + NEW["omega_s"], float(k), **NEW)
    belief = monitor.belief("n")
    assert belief is not None
    prior_sd_c = math.sqrt(0.04) * NEW["gamma_c"]  # prior_var 0.04 × nominal²
    assert belief.sd[0] <= prior_sd_c + 1e-12 and belief.mean[0] == pytest.approx(NEW["gamma_c"])
    uncapped = SlowdownMonitor(MonitorConfig(known_profiles={"io": (0.0, 10.0)}, cap_drift=False))
    for k in range(500):
        uncapped.observe("n", "io", 10.0 * 0.33 + NEW["omega_s"], float(k), **NEW)
    grown = uncapped.belief("n")
    assert grown is not None and grown.sd[0] > 3 * prior_sd_c  # √(0.04 + 500 × 0.001) ≈ 0.73 vs 0.2 relative


def test_a_degraded_nodes_tasks_do_not_teach_the_apps_profile() -> None:
    rng = np.random.default_rng(11)
    monitor = SlowdownMonitor(MonitorConfig(known_profiles=APPS))
    _feed(monitor, (0.1, 0.33), range(0, 60), rng)
    _feed(monitor, (0.1, 0.99), range(60, 100), rng)  # a disk three times slower: degraded
    health = monitor.health("n")
    assert health is not None and health.degraded == ("disk",)
    before = monitor.app_belief("new-app").to_dict()
    monitor.observe("n", "new-app", 50.0, 101.0, **NEW)
    assert monitor.app_belief("new-app").to_dict() == before  # nothing learned from the slowed node


def test_maps_of_different_split_sizes_teach_different_profiles() -> None:
    from mrsched.health import profile_key

    assert profile_key("pi", 0.0) == "pi"
    assert profile_key("wordcount", 128.0) == profile_key("wordcount", 150.0) == "wordcount/128MB"
    assert (
        profile_key("wordcount", 40.0) == "wordcount/32MB"
        and profile_key("wordcount", 0.2) == "wordcount/<1MB"
    )


def test_a_slowdown_shared_by_the_nodes_peers_is_load_not_a_fault() -> None:
    # Three nodes of the same hardware: all twice as slow in CPU (a busy hour) → none flagged; one of them alone
    # twice as slow → flagged.
    def run(slow: dict[str, float]) -> dict[str, tuple[str, ...]]:
        rng = np.random.default_rng(3)
        monitor = SlowdownMonitor(MonitorConfig(known_profiles=APPS))
        for k in range(300):
            node = ("a", "b", "c")[k % 3]
            app = "pi" if (k // 3) % 2 == 0 else "dfsio"
            theta = APPS[app]
            factor = slow.get(node, 1.0) if k >= 150 else 1.0
            duration = theta[0] * 0.1 * factor + theta[1] * 0.33 + NEW["omega_s"] + rng.normal(0.0, 0.3)
            monitor.observe(node, app, duration, float(k), **NEW)
        return {n: (h.degraded if (h := monitor.health(n)) else ()) for n in "abc"}

    assert run({"a": 2.0, "b": 2.0, "c": 2.0}) == {"a": (), "b": (), "c": ()}
    assert run({"a": 2.0}) == {"a": ("cpu",), "b": (), "c": ()}


def test_a_new_verdict_waits_for_confirmation_and_peers_are_the_callers_class() -> None:
    rng = np.random.default_rng(11)
    monitor = SlowdownMonitor(MonitorConfig(known_profiles=APPS, confirm_updates=3, peer_check=False))
    _feed(monitor, (0.1, 0.33), range(0, 60), rng)
    hogged = _feed(monitor, (0.1, 0.99), range(60, 100), rng)
    first_found = next(k for k, h, _ in hogged if h.degraded)
    # The literal rule (confirm_updates 1) on the same data flags it two updates earlier.
    literal = SlowdownMonitor(MonitorConfig(known_profiles=APPS, confirm_updates=1, peer_check=False))
    rng = np.random.default_rng(11)
    _feed(literal, (0.1, 0.33), range(0, 60), rng)
    literal_first = next(k for k, h, _ in _feed(literal, (0.1, 0.99), range(60, 100), rng) if h.degraded)
    assert first_found == literal_first + 2

    # Peers by class: two nodes of similar nominal γ but different classes are not each other's peers.
    peers = SlowdownMonitor(MonitorConfig(known_profiles=APPS))
    for k in range(40):
        for node, group in (("a", "two-core"), ("b", "two-core"), ("c", "four-core")):
            peers.observe(node, "pi", 20 * 0.1 + 0.33 + 5.3, float(k), **NEW, group=group)
    entry_a = peers._nodes["a"]
    peers._nodes["b"].belief.mean = peers._nodes["b"].belief.nominal * 2.0  # b slowed: a's peer median rises
    peers._nodes["c"].belief.mean = peers._nodes["c"].belief.nominal * 5.0  # c is not a's peer
    rise = peers._peer_rise(entry_a)
    assert rise is not None and rise == pytest.approx([2.0, 2.0])
