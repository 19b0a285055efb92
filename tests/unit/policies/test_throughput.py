"""ThroughputScheduler (seed 002 ch.3) against hand-computed cases: the Bayesian update, the experimental design,
the stopping rule, probe estimation of κ and Ω, and SelectBestApplication's placements."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mrsched.core.model import ClusterSnapshot, Job, Node, Task, TaskOutcome
from mrsched.core.policy import build_policy
from mrsched.core.probes import estimate_sigma
from mrsched.policies.throughput import model as tp
from mrsched.policies.throughput.policy import Throughput  # registers "throughput"

TABLE_3_1 = {
    "machine1": tp.Capability(1.0, 1.0, 45.0),
    "machine2": tp.Capability(1.0, 1.0, 45.0),
    "machine3": tp.Capability(7.5, 2.5, 5.3),
    "machine4": tp.Capability(7.5, 2.5, 5.3),
    "machine5": tp.Capability(7.8, 2.6, 4.8),
}


def _precision(observations: list[tuple[tp.Capability, float]]) -> tuple[np.ndarray, np.ndarray]:
    precision, h = np.zeros((2, 2)), np.zeros(2)
    for cap, y in observations:
        precision, h = tp.bayes_update(precision, h, cap, y)
    return precision, h


# --- Bayesian update (Eq 3.17-3.24) ---------------------------------------------------------------------


def test_one_observation_is_a_tube_without_mean_or_covariance() -> None:
    precision, h = _precision([(tp.Capability(1.0, 1.0, 0.0), 3.0)])
    assert tp.posterior_mean(precision, h) is None
    assert tp.posterior_covariance(precision) is None
    assert tp.covariance_det(precision) == float("inf")
    # Same κc/κd ratio again (machine3 then machine5, both 3.0): still parallel tubes (Eq 3.16, Δ = 0).
    precision, h = _precision([(TABLE_3_1["machine3"], 2.0), (TABLE_3_1["machine5"], 2.0)])
    assert tp.posterior_mean(precision, h) is None


def test_two_observations_give_the_hand_computed_posterior() -> None:
    # A: κ = (1, 1), B: κ = (2, 0.5), σ = 1; θ = (2, 1) gives y_A = 2 + 1 = 3, y_B = 2/2 + 1/0.5 = 3.
    # Λ = [[1,1],[1,1]] + [[0.25,1],[1,4]] = [[1.25,2],[2,5]], det 2.25; h = 3(1,1) + 3(0.5,2) = (4.5, 9).
    # μ = Λ⁻¹h = [[5,−2],[−2,1.25]]·(4.5, 9)/2.25 = (4.5, 2.25)/2.25 = (2, 1).
    a, b = tp.Capability(1.0, 1.0, 0.0), tp.Capability(2.0, 0.5, 0.0)
    precision, h = _precision([(a, 3.0), (b, 3.0)])
    assert precision == pytest.approx(np.array([[1.25, 2.0], [2.0, 5.0]]))
    assert tp.conic_coefficients(precision, h) == pytest.approx((0.625, 2.0, 2.5, -4.5, -9.0))  # Eq 3.19
    mean = tp.posterior_mean(precision, h)
    assert mean is not None and mean == pytest.approx([2.0, 1.0])
    cov = tp.posterior_covariance(precision)
    assert cov is not None and cov == pytest.approx(
        np.array([[5 / 2.25, -2 / 2.25], [-2 / 2.25, 1.25 / 2.25]])
    )
    assert tp.covariance_det(precision, "true") == pytest.approx(1 / 2.25)
    assert tp.covariance_det(precision, "thesis") == pytest.approx(4 / 2.25)  # Eq 3.22's convention
    # Eq 3.20: det Λ = −Δ for two observations (cross term 1/(1·0.5) − 1/(1·2) = 1.5, squared 2.25).
    assert tp.discriminant(a, b) == pytest.approx(-2.25)


def test_third_observation_updates_the_gaussian_prior_in_closed_form() -> None:
    # Third observation on A with σ = 2, y = 3.5: Λ += 0.25·[[1,1],[1,1]] = [[1.5,2.25],[2.25,5.25]] (det 2.8125),
    # h += 0.25·3.5·(1,1) = (5.375, 9.875). μc = (5.25·5.375 − 2.25·9.875)/2.8125 = 6/2.8125,
    # μd = (−2.25·5.375 + 1.5·9.875)/2.8125 = 2.71875/2.8125.
    a, b = tp.Capability(1.0, 1.0, 0.0), tp.Capability(2.0, 0.5, 0.0)
    precision, h = _precision([(a, 3.0), (b, 3.0), (tp.Capability(1.0, 1.0, 0.0, sigma_s=2.0), 3.5)])
    mean = tp.posterior_mean(precision, h)
    assert mean is not None and mean == pytest.approx([6 / 2.8125, 2.71875 / 2.8125])
    assert tp.covariance_det(precision, "true") == pytest.approx(1 / 2.8125)


# --- experimental design (Eq 3.31/3.33) -----------------------------------------------------------------


def test_design_pairs_the_most_dissimilar_ratio_classes() -> None:
    # After one run on machine1, a new machine gains (1/(1·2.5) − 1/(1·7.5))² = 0.071111, machine5
    # (1/2.6 − 1/7.8)² = 0.065746, machine2 (same ratio) nothing.
    history, _ = _precision([(TABLE_3_1["machine1"], 50.0)])
    gains = tp.explore_gains(history, TABLE_3_1)
    assert gains["machine3"] == pytest.approx(0.071111, abs=1e-6)
    assert gains["machine5"] == pytest.approx(0.065746, abs=1e-6)
    assert gains["machine2"] == pytest.approx(0.0, abs=1e-12)
    assert tp.explore_machines(history, TABLE_3_1) == {"machine3", "machine4"}
    # No history: any machine will do (the first experiment's gain is undefined).
    assert tp.explore_machines(np.zeros((2, 2)), TABLE_3_1) == set(TABLE_3_1)
    # Two new-class runs: an old machine is now the most informative (the design balances the classes).
    history, _ = _precision(
        [(TABLE_3_1["machine1"], 50.0), (TABLE_3_1["machine3"], 5.0), (TABLE_3_1["machine4"], 5)]
    )
    assert tp.explore_machines(history, TABLE_3_1) == {"machine1", "machine2"}
    # A noisier machine3 (σ = 2) loses to machine4: the gain is divided by σ².
    noisy = {**TABLE_3_1, "machine3": tp.Capability(7.5, 2.5, 5.3, sigma_s=2.0)}
    history, _ = _precision([(noisy["machine1"], 50.0)])
    assert tp.explore_machines(history, noisy) == {"machine4"}


# --- stopping rule -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("convention", "last_above", "first_below"), [("thesis", 89, 90), ("true", 44, 45)])
def test_explore_stops_when_det_sigma_falls_below_0_007(
    convention: tp.DetConvention, last_above: int, first_below: int
) -> None:
    # n runs on machine1 and n on machine3, σ = 1: det Λ = n²·0.071111. Thesis: 4/det Λ < 0.007 iff n ≥ 90
    # (89² = 7921: 0.007101; 90² = 8100: 0.006944); true: 1/det Λ < 0.007 iff n ≥ 45 (44²: 0.007263; 45²: 0.006944).
    def after(n: int) -> np.ndarray:
        precision, _ = _precision([(TABLE_3_1["machine1"], 1.0)] * n + [(TABLE_3_1["machine3"], 1.0)] * n)
        return precision

    assert tp.covariance_det(after(first_below), convention) == pytest.approx(
        (4.0 if convention == "thesis" else 1.0) / (first_below**2 * (0.4 - 1 / 7.5) ** 2)
    )
    assert not tp.explore_finished(after(last_above), 0.007, convention)
    assert tp.explore_finished(after(first_below), 0.007, convention)


# --- probes: κ and Ω (Eq 3.3-3.5) -------------------------------------------------------------------------


def test_probe_durations_give_table_3_1() -> None:
    # Probe θ = (10, 5) on the reference machine, η = 3. machine1 (κ 1,1, Ω 45): J¹ 60 s, J^η (CPU ×3) 80 s,
    # J_d^η (disk ×3) 70 s. machine3 (κ 7.5, 2.5, Ω 5.3): J¹ 10/7.5 + 2 + 5.3, J^η 4 + 2 + 5.3, J_d^η 10/7.5 + 6 + 5.3.
    # Eq 3.5: θc = (80 − 60)/2 = 10; κc³ = 10·2/(11.3 − 8.6333) = 7.5; κd³ = 5·2/(12.6333 − 8.6333) = 2.5.
    t1 = {"machine1": 60.0, "machine3": 10 / 7.5 + 2 + 5.3}
    cpu = {"machine1": 80.0, "machine3": 4 + 2 + 5.3}
    disk = {"machine1": 70.0, "machine3": 10 / 7.5 + 6 + 5.3}
    rates, theta_c = tp.estimate_rates(t1, cpu, 3.0, "machine1")
    assert theta_c == pytest.approx(10.0)
    assert rates == pytest.approx({"machine1": 1.0, "machine3": 7.5})
    caps = tp.estimate_capabilities(
        {"machine1": [44.0, 46.0], "machine3": [5.0, 5.6]}, (t1, cpu), (t1, disk), 3.0, "machine1"
    )
    assert caps["machine3"].kappa_c == pytest.approx(7.5)
    assert caps["machine3"].kappa_d == pytest.approx(2.5)
    assert caps["machine1"].omega_s == pytest.approx(45.0)
    assert caps["machine3"].omega_s == pytest.approx(5.3)
    assert estimate_sigma({"unit": [44.0, 46.0]}) == pytest.approx(2**0.5)
    with pytest.raises(ValueError):
        tp.estimate_rates(t1, t1, 3.0, "machine1")


# --- SelectBestApplication and the policy -----------------------------------------------------------------


def test_select_best_application_scores_match_the_worked_table() -> None:
    # Digest §3.1.6: Table 3.1 κ (Σκc 24.8, Σκd 9.6) and Table 3.2 μ: J_IO scores 10.43 on machine1, Pi 3.42
    # on machine3 and 3.29 on machine5.
    pi, jio = np.array([24.00, 6.30]), np.array([5.60, 96.46])
    total_c = sum(c.kappa_c for c in TABLE_3_1.values())
    total_d = sum(c.kappa_d for c in TABLE_3_1.values())
    assert tp.application_score(jio, TABLE_3_1["machine1"], total_c, total_d) == pytest.approx(
        10.43, abs=0.01
    )
    assert tp.application_score(pi, TABLE_3_1["machine1"], total_c, total_d) == pytest.approx(21.64, abs=0.01)
    assert tp.application_score(pi, TABLE_3_1["machine3"], total_c, total_d) == pytest.approx(3.42, abs=0.01)
    assert tp.application_score(pi, TABLE_3_1["machine5"], total_c, total_d) == pytest.approx(3.29, abs=0.01)


CAPS = {
    "old": {"kappaC": 1.0, "kappaD": 1.0, "omegaS": 45.0, "sigmaS": 1.0},
    "new": {"kappaC": 7.5, "kappaD": 2.5, "omegaS": 5.3, "sigmaS": 1.0},
}


def _cluster(map_slots: int = 1) -> dict[str, Node]:
    return {
        "old": Node("old", 2, 4096, map_slots=map_slots, reduce_slots=0),
        "new": Node("new", 8, 16384, map_slots=map_slots, reduce_slots=0),
    }


def _job(job_id: str, app: str, submit: float, maps: int, replicas: tuple[str, ...] = ()) -> Job:
    return Job(job_id, app, submit, [Task(job_id, "map", i, 64.0, replicas) for i in range(maps)], [])


def _teach(policy: Throughput, job: Job, theta: tuple[float, float], per_node: int) -> None:
    """Feed noise-free Eq 3.2 durations of the app's maps on both nodes."""
    policy.on_job_submitted(job, 0.0)
    for i in range(per_node):
        for node, c in CAPS.items():
            duration = theta[0] / c["kappaC"] + theta[1] / c["kappaD"] + c["omegaS"]
            task = Task(job.id, "map", 1000 + 2 * i + (node == "new"))
            policy.on_task_finished(TaskOutcome(task, node, 0.0, duration, True))


def test_cpu_heavy_app_goes_to_the_cpu_fast_node_once_learned() -> None:
    policy = build_policy("throughput", {"capabilities": CAPS})
    assert isinstance(policy, Throughput)
    jio, pi = _job("jio", "jio", 0.0, 5), _job("pi", "pi", 1.0, 5)  # FIFO would pick jio first everywhere
    _teach(policy, jio, (5.6, 96.46), 95)
    _teach(policy, pi, (24.0, 6.3), 95)
    assert policy.learned("pi") and policy.learned("jio")
    mean = policy.mean("pi")
    assert mean is not None and mean == pytest.approx([24.0, 6.3])
    snap = ClusterSnapshot(0.0, _cluster(), {"old": [], "new": []}, [jio, pi])
    on_new = policy.assign(snap, "new")
    on_old = policy.assign(snap, "old")
    assert [p.task.job_id for p in on_new] == ["pi"]
    assert [p.task.job_id for p in on_old] == ["jio"]
    # Hand-computed scores (Σκc 8.5, Σκd 3.5): Pi on new 0.79208/0.88235 + 0.20792/0.71429 = 1.1888 < J_IO 1.3854.
    assert on_new[0].explanation.score == pytest.approx(1.1888, abs=1e-3)
    assert on_new[0].explanation.runner_up is not None and on_new[0].explanation.runner_up.startswith("jio")
    # The learned state survives a JSON round trip.
    fresh = build_policy("throughput", {"capabilities": CAPS})
    fresh.load_state(json.loads(json.dumps(policy.state())))
    assert isinstance(fresh, Throughput) and fresh.learned("pi")


def test_locality_tier_beats_the_profile_score() -> None:
    policy = build_policy(
        "throughput",
        {
            "capabilities": CAPS,
            "profiles": {"pi": {"thetaC": 24, "thetaD": 6.3}, "jio": {"thetaC": 5.6, "thetaD": 96.46}},
        },
    )
    jio = _job("jio", "jio", 0.0, 3, replicas=("new",))  # node-local on new
    pi = _job("pi", "pi", 0.0, 3, replicas=("elsewhere",))  # off-switch everywhere
    snap = ClusterSnapshot(0.0, _cluster(), {"old": [], "new": []}, [pi, jio])
    assert [p.task.job_id for p in policy.assign(snap, "new")] == ["jio"]


def test_explore_sends_an_unlearned_app_to_the_other_ratio_class() -> None:
    known = _job("known", "jio", 0.0, 5)
    policy = build_policy(
        "throughput", {"capabilities": CAPS, "profiles": {"jio": {"thetaC": 5.6, "thetaD": 96.46}}}
    )
    new_app = _job("fresh", "wordcount", 1.0, 5)
    snap = ClusterSnapshot(0.0, _cluster(), {"old": [], "new": []}, [known, new_app])
    first = policy.assign(snap, "old")  # no history: any node is informative; the exploring app goes first
    assert [p.task.job_id for p in first] == ["fresh"]
    assert "explore" in first[0].explanation.reason
    # Its running task on "old" is a planned experiment: "old" is no longer informative, "new" is.
    snap.running["old"] = []  # free the slot again (the attempt keeps running for the design)
    again = policy.assign(snap, "old")
    assert [p.task.job_id for p in again] == ["known"]  # the learned app gets the uninformative node
    on_new = policy.assign(snap, "new")
    assert [p.task.job_id for p in on_new] == ["fresh"]
    assert on_new[0].explanation.score == pytest.approx((0.4 - 1 / 7.5) ** 2)


def test_nodes_without_probe_results_fall_back_to_fifo() -> None:
    policy = build_policy("throughput", {})
    early, late = _job("early", "pi", 0.0, 1), _job("late", "jio", 5.0, 1)
    snap = ClusterSnapshot(0.0, _cluster(map_slots=2), {"old": [], "new": []}, [late, early])
    assert [p.task.job_id for p in policy.assign(snap, "new")] == ["early", "late"]


def test_only_successful_maps_on_probed_nodes_teach_the_posterior_and_omega_is_subtracted() -> None:
    policy = build_policy("throughput", {"capabilities": CAPS})
    assert isinstance(policy, Throughput)
    job = _job("j", "grep", 0.0, 3)
    policy.on_job_submitted(job, 0.0)
    task = Task("j", "map", 0)
    policy.on_task_finished(TaskOutcome(task, "old", 0.0, 60.0, False))  # failed attempt
    policy.on_task_finished(TaskOutcome(Task("j", "reduce", 0), "old", 0.0, 60.0, True))  # a reduce
    policy.on_task_finished(TaskOutcome(task, "unprobed", 0.0, 60.0, True))  # node without capabilities
    assert policy.state()["apps"].get("grep", {"observations": 0})["observations"] == 0
    policy.on_task_finished(TaskOutcome(task, "old", 0.0, 60.0, True))
    saved = policy.state()["apps"]["grep"]
    assert saved["observations"] == 1
    assert saved["h"] == pytest.approx([15.0, 15.0])  # y = 60 − Ω 45 = 15, a = (1, 1), σ = 1
