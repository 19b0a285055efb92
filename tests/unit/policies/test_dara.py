"""DARA (seed 002 ch.4) on hand-computed cases: Eq 4.12's prediction and its least-squares fit, the
per-node exhaustive search of Eq 4.16 under the memory cap, BEST_APP_TO_ADD, ADD/REMOVE_APPLICATION and
DARA_SCHEDULE on hand-built snapshots."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrsched.core.model import (
    UNCAPPED,
    ClusterSnapshot,
    Explanation,
    Job,
    Node,
    Placement,
    Resources,
    Task,
    TaskOutcome,
)
from mrsched.policies.dara import OFFLINE_ALPHAS, Dara, DaraConfig
from mrsched.policies.dara.model import (
    Fit,
    Observation,
    Profile,
    best_app_to_add,
    fit_load_model,
    load_ratios,
    node_throughput,
    predict_times,
    window_throughput,
)
from mrsched.policies.dara.search import search_assignment


def arr(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


# --- Eq 4.12 and the throughput of Eq 4.9 / 4.16 ---------------------------------------------------------


def test_load_ratios_use_cpu_seconds_and_mb() -> None:
    # Table 4.1's Pi (10 CPU-s, 5 MB): R_c = 2/3, R_d = 1/3.
    rc, rd = load_ratios(arr(10.0, 5.0), arr(5.0, 495.0))
    assert rc == pytest.approx([2 / 3, 0.01])
    assert rd == pytest.approx([1 / 3, 0.99])


def test_prediction_and_node_throughput_by_hand() -> None:
    # A: c=3, d=1 -> R=(0.75, 0.25); B: c=1, d=3 -> R=(0.25, 0.75). x=(2, 2): L_c = 2, L_d = 2.
    # t_A = 10 + 3·0.5·4 + 1·0.25·4 = 17;  t_B = 20 + 1·0.5·4 + 3·0.25·4 = 25.
    lam, c, d, x = arr(10, 20), arr(3, 1), arr(1, 3), arr(2, 2)
    t = predict_times(lam, c, d, 0.5, 0.25, x)
    assert t == pytest.approx([17.0, 25.0])
    # Eq 4.16's objective: 10·2/17 + 20·2/25.
    assert node_throughput(lam, x, t) == pytest.approx(20 / 17 + 1.6)
    # An application with no container contributes nothing, even though its t is defined.
    assert node_throughput(lam, arr(2, 0), predict_times(lam, c, d, 0.5, 0.25, arr(2, 0))) == pytest.approx(
        10 * 2 / (10 + 3 * 0.5 * 1.5**2 + 1 * 0.25 * 0.5**2)
    )


def test_window_throughput_weights_tasks_by_size() -> None:
    # Eq 4.4: 12 tasks of size 10 and 8 of size 20 in a 40 s window: (120 + 160) / 40.
    assert window_throughput(arr(10, 20), arr(12, 8), 40.0) == pytest.approx(7.0)


# --- least-squares fit of Eq 4.12 ---------------------------------------------------------------------------


def test_fit_by_hand_single_cpu_app() -> None:
    # c=1, d=0 so t = λ + α_c x². Points (x², t) = (1, 3), (4, 5), (9, 13): OLS slope 42/(294/9) = 9/7 and
    # intercept 7 − (9/7)(14/3) = 1.
    profiles = {"a": Profile(1.0, 0.0, 100.0)}
    obs = [Observation("a", "k", t, {"a": x}) for x, t in ((1, 3.0), (2, 5.0), (3, 13.0))]
    fit = fit_load_model(obs, profiles)
    assert fit.lam["a"] == pytest.approx(1.0)
    assert fit.alpha["k"][0] == pytest.approx(9 / 7)
    assert fit.alpha["k"][1] == pytest.approx(0.0)
    residuals = np.array([3 - (1 + 9 / 7), 5 - (1 + 36 / 7), 13 - (1 + 81 / 7)])
    assert fit.rmse == pytest.approx(float(np.sqrt(np.mean(residuals**2))))


def test_fit_recovers_two_apps_and_two_classes_exactly() -> None:
    # Noise-free observations from Eq 4.12 with λ shared across classes (I4-3) and α per class.
    profiles = {"pi": Profile(10.0, 5.0, 230.0), "sort": Profile(5.0, 495.0, 280.0)}
    lam = {"pi": 12.0, "sort": 30.0}
    alpha = {"fast": (0.02, 0.001), "slow": (0.05, 0.004)}
    obs = []
    for cls, (ac, ad) in alpha.items():
        for xp, xs in itertools.product(range(0, 7, 2), range(0, 7, 3)):
            mix = {"pi": float(xp), "sort": float(xs)}
            c = arr(10.0, 5.0)
            d = arr(5.0, 495.0)
            t = predict_times(arr(lam["pi"], lam["sort"]), c, d, ac, ad, arr(xp, xs))
            if xp:
                obs.append(Observation("pi", cls, float(t[0]), mix))
            if xs:
                obs.append(Observation("sort", cls, float(t[1]), mix))
    fit = fit_load_model(obs, profiles)
    assert fit.lam == pytest.approx(lam)
    for cls, expected in alpha.items():
        assert fit.alpha[cls] == pytest.approx(expected, rel=1e-6)
    assert fit.rmse == pytest.approx(0.0, abs=1e-9)


def test_fit_keeps_alphas_non_negative() -> None:
    # Times that fall with disk load would need α_d < 0: it is clamped to 0 and the rest refitted, which
    # leaves t = λ + α_c x² through (1, 3) and (2, 6): λ = 2, α_c = 1.
    profiles = {"a": Profile(1.0, 0.0, 100.0), "b": Profile(0.0, 1.0, 100.0)}
    obs = [
        Observation("a", "k", 3.0, {"a": 1.0}),
        Observation("a", "k", 6.0, {"a": 2.0}),
        Observation("b", "k", 10.0, {"b": 1.0}),
        Observation("b", "k", 7.0, {"b": 2.0}),
    ]
    fit = fit_load_model(obs, profiles)
    assert fit.alpha["k"][1] == 0.0
    assert fit.alpha["k"][0] == pytest.approx(1.0)
    assert fit.lam["a"] == pytest.approx(2.0)
    assert fit.lam["b"] == pytest.approx(8.5)  # the mean of 10 and 7 once α_d is 0


def _full_design_fit(
    obs: list[Observation], profiles: dict[str, Profile], fixed: dict[str, tuple[float, float]]
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Eq 4.12 fitted the direct way, as fit_load_model did before its fixed-effects solve: one least
    squares over a design with a column per application and two per free class, pinning the most negative α."""
    rows = [o for o in obs if o.duration_s > 0 and o.app in profiles and all(a in profiles for a in o.mix)]
    apps = sorted({o.app for o in rows})
    classes = sorted({o.node_class for o in rows} - set(fixed))
    design = np.zeros((len(rows), len(apps) + 2 * len(classes)))
    target = np.array([o.duration_s for o in rows])
    for r, o in enumerate(rows):
        mix = list(o.mix)
        rc, rd = load_ratios(
            np.array([profiles[a].cpu_s for a in mix]), np.array([profiles[a].io_mb for a in mix])
        )
        x = np.array([o.mix[a] for a in mix])
        lc, ld = float(rc @ x), float(rd @ x)
        p = profiles[o.app]
        design[r, apps.index(o.app)] = 1.0
        if o.node_class in fixed:
            target[r] -= fixed[o.node_class][0] * p.cpu_s * lc**2 + fixed[o.node_class][1] * p.io_mb * ld**2
        else:
            k = len(apps) + 2 * classes.index(o.node_class)
            design[r, k], design[r, k + 1] = p.cpu_s * lc**2, p.io_mb * ld**2
    active = np.ones(design.shape[1], dtype=bool)
    coef = np.zeros(design.shape[1])
    while True:
        coef[:] = 0.0
        coef[active] = np.linalg.lstsq(design[:, active], target, rcond=None)[0]
        if coef[len(apps) :].min(initial=0.0) >= 0:
            break
        active[len(apps) + int(np.argmin(coef[len(apps) :]))] = False
    lam = {a: float(coef[i]) for i, a in enumerate(apps)}
    alpha = {
        k: (float(coef[len(apps) + 2 * i]), float(coef[len(apps) + 2 * i + 1])) for i, k in enumerate(classes)
    }
    return lam, alpha


@pytest.mark.parametrize("seed", range(6))
def test_fixed_effects_fit_is_the_full_least_squares(seed: int) -> None:
    # Noisy windows of many jobs on three classes, one of them fixed offline, and a fourth seen only by a job of
    # its own at a single load (its demeaned loads are all zero: the rank-deficient case). The fixed-effects solve must
    # give the full design's least squares, pinned α's included (noise makes some negative).
    rng = np.random.default_rng(seed)
    apps = [f"job-{j}" for j in range(40)]
    profiles = {a: Profile(float(rng.uniform(1, 30)), float(rng.uniform(0, 500)), 200.0) for a in apps}
    obs = []
    for _ in range(600):
        cls = str(rng.choice(["fast", "slow", "offline"]))
        running = list(rng.choice(apps, size=int(rng.integers(1, 5)), replace=False))
        mix = {a: float(rng.uniform(0.5, 6)) for a in running}
        # "fast" gets quicker under load: its α's are negative in the unconstrained fit, so they are pinned.
        duration = 40 - 1.5 * sum(mix.values()) if cls == "fast" else rng.uniform(5, 60)
        obs.append(Observation(running[0], cls, float(duration + rng.normal(0, 2)), mix))
    profiles["solo"] = Profile(5.0, 50.0, 200.0)
    obs += [Observation("solo", "lonely", t, {"solo": 2.0}) for t in (20.0, 25.0)]
    fixed = {"offline": (0.01, 0.002)}
    lam, alpha = _full_design_fit(obs, profiles, fixed)
    fit = fit_load_model(obs, profiles, fixed)
    # Equal to rounding: the unidentified direction comes from an SVD of the demeaned loads, not of the full
    # design, so both carry rounding amplified by the design's conditioning (seen: 3e-9 relative in λ, 2e-9
    # absolute in the α's of "lonely", whose null direction mixes an α of 1e-4 with one of 0.14).
    for a, value in lam.items():
        if value > 0:  # a λ ≤ 0 is replaced by the shortest time, tested on its own
            assert fit.lam[a] == pytest.approx(value, rel=1e-7)
    for cls, value in alpha.items():
        assert fit.alpha[cls] == pytest.approx(value, rel=1e-7, abs=1e-8)
    assert fit.alpha["offline"] == fixed["offline"]
    assert 0.0 in fit.alpha["fast"]  # the pinning was exercised


def test_fit_skips_observations_with_unprofiled_neighbours() -> None:
    profiles = {"a": Profile(1.0, 0.0, 100.0)}
    obs = [
        Observation("a", "k", 99.0, {"a": 1.0, "ghost": 3.0}),
        Observation("a", "k", 4.0, {"a": 1.0}),
        Observation("a", "k", 7.0, {"a": 2.0}),
    ]
    fit = fit_load_model(obs, profiles)  # only the last two count: 4 = λ + α, 7 = λ + 4α
    assert fit.lam["a"] == pytest.approx(3.0)
    assert fit.alpha["k"][0] == pytest.approx(1.0)


# --- COMPUTE_OPTIMAL_ASSIGNMENT (Eq 4.16) -------------------------------------------------------------------

# A is pure CPU (c=1, d=0), B pure disk (c=0, d=1), so t_A = 12 + x_A²/12 and t_B = 10 + 0.4 x_B².
# Alone: 144x/(144+x²) peaks at x=12 (6.0) and 25x/(25+x²) at x=5 (2.5).
LAM, C, D, MEM = arr(12, 10), arr(1, 0), arr(0, 1), arr(230, 280)
ALPHA_C, ALPHA_D = 1 / 12, 0.4


def test_optimum_without_binding_memory_is_each_single_app_optimum() -> None:
    assert search_assignment(LAM, C, D, MEM, ALPHA_C, ALPHA_D, 12288.0).x == (12, 5)


def test_optimum_under_memory_cap_by_hand() -> None:
    # 4000 MB: (12, 5) needs 4160. Feasible neighbours: (11, 5) 3930 MB -> 1584/265 + 2.5 = 8.4774;
    # (12, 4) 3880 MB -> 6 + 100/41 = 8.4390; (10, 6) 3980 MB -> 1440/244 + 150/61 = 8.3607. Best (11, 5).
    assert search_assignment(LAM, C, D, MEM, ALPHA_C, ALPHA_D, 4000.0).x == (11, 5)


def test_memory_cap_is_strict() -> None:
    # No contention: throughput grows with x, so the cap binds; 3 × 1000 MB is not < 3000 MB.
    assert search_assignment(arr(5), arr(1), arr(1), arr(1000), 0.0, 0.0, 3000.0).x == (2,)
    assert search_assignment(arr(5), arr(1), arr(1), arr(1000), 0.0, 0.0, 3000.1).x == (3,)


def test_optimum_matches_plain_enumeration_on_a_mixed_node() -> None:
    # Table 4.1-like apps that share both resources: compare with a plain Python enumeration.
    lam, c, d, mem = arr(10, 40, 48), arr(10, 30, 5), arr(5, 140, 500), arr(230, 300, 280)
    ac, ad = 0.0154, 0.002
    best, best_x = -1.0, tuple[int, ...]()
    for x in itertools.product(range(20), repeat=3):
        xv = arr(*x)
        if float(xv @ mem) >= 12288:
            continue
        value = node_throughput(lam, xv, predict_times(lam, c, d, ac, ad, xv))
        if value > best + 1e-12:
            best, best_x = value, x
    assert search_assignment(lam, c, d, mem, ac, ad, 12288.0).x == best_x


# --- BEST_APP_TO_ADD (Alg 4.3.4) ----------------------------------------------------------------------------


def test_best_app_to_add_picks_largest_deficit() -> None:
    assert best_app_to_add({"a": 12, "b": 5}, {"a": 10, "b": 1}, ["a", "b"]) == "b"
    assert best_app_to_add({"a": 12, "b": 5}, {"a": 2, "b": 1}, ["a", "b"]) == "a"
    # Over-allocation is not undone: the least over-allocated wins the argmax; ties go to the earlier app.
    assert best_app_to_add({"a": 3, "b": 2}, {"a": 5, "b": 2}, ["a", "b"]) == "b"
    assert best_app_to_add({"a": 3, "b": 3}, {"a": 1, "b": 1}, ["b", "a"]) == "b"
    assert best_app_to_add({}, {}, []) is None


# --- the policy: ADD/REMOVE_APPLICATION and DARA_SCHEDULE ------------------------------------------------


def make_node(name: str = "n0", memory: float = 4000.0, rack: str = "r0") -> Node:
    return Node(name, 8, memory, rack=rack, node_class="k", map_slots=2, reduce_slots=1)


def make_job(job_id: str, maps: int, replicas: tuple[str, ...] = (), submit: float = 0.0) -> Job:
    return Job(job_id, "x", submit, [Task(job_id, "map", i, 64.0, replicas) for i in range(maps)], [])


def fitted_dara(**options: object) -> Dara:
    """A DARA whose model is already fitted: the separable A/B pair of the Eq 4.16 tests."""
    policy = Dara(DaraConfig.model_validate(options))
    policy.profiles = {"A": Profile(1.0, 0.0, 230.0), "B": Profile(0.0, 1.0, 280.0)}
    policy.fit = Fit(lam={"A": 12.0, "B": 10.0}, alpha={"k": (ALPHA_C, ALPHA_D)})
    policy.fitted_classes = {"k"}
    return policy


def test_add_and_remove_application_recompute_every_node() -> None:
    policy = fitted_dara()
    nodes = {"n0": make_node("n0"), "n1": make_node("n1", memory=12288.0)}
    policy.add_application("A", nodes)
    assert policy.optimal == {"n0": {"A": 12}, "n1": {"A": 12}}
    policy.add_application("B", nodes)  # Alg 4.3.1: every node's x* now covers both applications
    assert policy.optimal == {"n0": {"A": 11, "B": 5}, "n1": {"A": 12, "B": 5}}
    policy.remove_application("A", nodes)  # Alg 4.3.2
    assert policy.optimal == {"n0": {"B": 5}, "n1": {"B": 5}}


def test_a_node_that_joins_or_changes_gets_its_own_x_star() -> None:
    """x* is kept per node between recomputations: a node added to the snapshot gets one at the next heartbeat,
    and a node replaced with more memory gets its own at the next recomputation (not its old one's)."""
    policy = fitted_dara(assignMultiple=True)
    snapshot = ClusterSnapshot(
        0.0, {"n0": make_node("n0")}, {"n0": []}, [make_job("A", 40), make_job("B", 40)]
    )
    assert len(run_rounds(policy, snapshot)) == 16  # x* = (11, 5) on 4000 MB
    snapshot.replace_node("n1", make_node("n1"))  # joins
    snapshot.running["n1"] = []
    snapshot.touch()
    assert len(run_rounds(policy, snapshot, "n1")) == 16 and policy.optimal["n1"] == {"A": 11, "B": 5}
    snapshot.replace_node("n0", make_node("n0", memory=12288.0))
    policy.remove_application("B", snapshot.nodes)
    assert policy.optimal == {"n0": {"A": 12}, "n1": {"A": 12}}  # 12288 MB holds more than A's 12 (bound)
    policy.add_application("B", snapshot.nodes)
    assert policy.optimal == {"n0": {"A": 12, "B": 5}, "n1": {"A": 11, "B": 5}}  # as on 12288 MB and 4000 MB


def test_unmeasured_application_gets_no_containers() -> None:
    policy = fitted_dara()
    nodes = {"n0": make_node()}
    policy.add_application("C", nodes)  # no profile yet (I4-6)
    assert policy.optimal == {"n0": {"C": 0}}


def run_rounds(policy: Dara, snapshot: ClusterSnapshot, node: str = "n0") -> list[str]:
    return [p.task.job_id for p in policy.assign(snapshot, node)]


def test_schedule_fills_node_to_the_optimal_mix_and_stops() -> None:
    policy = fitted_dara(assignMultiple=True)
    node = make_node()
    snapshot = ClusterSnapshot(0.0, {"n0": node}, {"n0": []}, [make_job("A", 30), make_job("B", 30)])
    placements = policy.assign(snapshot, "n0")
    placed = [p.task.job_id for p in placements]
    # x* = (11, 5) on 4000 MB: concurrency is Σ x* = 16 (I4-5), not the node's 2 map slots.
    assert placed.count("A") == 11 and placed.count("B") == 5
    # A's deficit (11) beats B's (5) at first; BEST_APP_TO_ADD then alternates as the deficits meet.
    assert placed[:7] == ["A"] * 7
    assert run_rounds(policy, snapshot) == []  # the node is at its optimum: nothing more
    first = placements[0].explanation
    assert first.policy == "dara" and first.score == 11.0 and first.runner_up == "B (deficit 5)"


def test_schedule_prefers_the_local_tier_over_the_deficit() -> None:
    policy = fitted_dara(assignMultiple=True)
    nodes = {"n0": make_node("n0", rack="r0"), "n9": make_node("n9", rack="r9")}
    far_a = make_job("A", 5, replicas=("n9",))  # off-rack for n0
    local_b = make_job("B", 5, replicas=("n0",))
    snapshot = ClusterSnapshot(0.0, nodes, {"n0": [], "n9": []}, [far_a, local_b])
    placements = policy.assign(snapshot, "n0")
    assert [p.task.job_id for p in placements][:5] == ["B"] * 5  # local tier first, then B's deficit is 0
    assert placements[0].explanation.policy == "dara"
    assert "local tier" in placements[0].explanation.reason
    assert [p.task.job_id for p in placements][5:] == ["A"] * 5  # only 5 maps of A exist


def test_literal_reading_fills_map_slots_only() -> None:
    policy = fitted_dara(literal=True, assignMultiple=True)
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [make_job("A", 30), make_job("B", 30)])
    assert run_rounds(policy, snapshot) == ["A", "A"]  # the node's 2 map slots, largest deficit first


def test_schedule_launches_one_map_per_heartbeat_by_default() -> None:
    # Alg 4.3.3: DARA_SCHEDULE launches one task per request; filling the node takes Σ x* heartbeats.
    policy = fitted_dara()
    job_a, job_b = make_job("A", 30), make_job("B", 30)
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [job_a, job_b])
    placed = [run_rounds(policy, snapshot) for _ in range(18)]
    assert all(len(p) == 1 for p in placed[:16]) and placed[16:] == [[], []]
    flat = [p[0] for p in placed[:16]]
    assert flat.count("A") == 11 and flat.count("B") == 5


def test_profiling_map_for_a_new_application() -> None:
    policy = fitted_dara()
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [make_job("C", 10)])
    assert run_rounds(policy, snapshot) == ["C"]  # one profiling map (Alg 4.3.1, I4-6)
    assert run_rounds(policy, snapshot) == []  # and no second one until it is measured


def test_outcomes_give_profile_and_time_averaged_mix() -> None:
    # Unfitted: the Fair-like fallback starts one map per heartbeat.
    policy = Dara(DaraConfig.model_validate({"taskMemoryMB": 300.0}))
    node = make_node()
    job = make_job("A", 4)
    policy.on_job_submitted(job, 0.0)
    snapshot = ClusterSnapshot(0.0, {"n0": node}, {"n0": []}, [job])
    first = policy.assign(snapshot, "n0")
    assert [p.task.index for p in first] == [0]
    assert "fallback" in first[0].explanation.reason
    snapshot.now = 10.0
    assert [p.task.index for p in policy.assign(snapshot, "n0")] == [1]
    # Map 0 ran 0-20 s: 1 container for 10 s, then 2 for 10 s: on average 1.5 (itself included).
    snapshot.running["n0"] = [a for a in snapshot.running["n0"] if a.task.index != 0]
    job.running_maps -= 1
    job.maps[0].running, job.maps[0].done = False, True
    job.finished_maps += 1
    policy.on_task_finished(
        TaskOutcome(
            job.maps[0], "n0", 0.0, 20.0, True, cpu_s=10.0, read_bytes=2_000_000, written_bytes=3_000_000
        )
    )
    assert policy.profiles["A"] == Profile(10.0, 5.0, 300.0)  # θ from the first map, d in MB
    (obs,) = policy.observations
    assert obs.duration_s == 20.0 and obs.node_class == "k"
    assert obs.mix == pytest.approx({"A": 1.5})


def test_state_round_trips_through_json() -> None:
    import json

    policy = fitted_dara()
    policy._apps = {"A": "appA", "B": "appB"}  # jobs A and B run applications appA and appB
    policy.add_application("A", {"n0": make_node()})
    policy.observations.append(Observation("A", "k", 5.0, {"A": 2.0}))
    policy._obs_count["A"] = 1
    policy._class_count["k"] = 1
    state = json.loads(json.dumps(policy.state()))
    # The shape the operator writes to custom resources: per application name, camelCase, JSON values only.
    assert set(state) == {"apps", "nodeClasses"}
    assert state["apps"]["appA"] == {
        "lambdaS": 12.0,
        "cpuS": 1.0,
        "ioMB": 0.0,
        "memoryMB": 230.0,
        "observations": 1,
        "member": True,
        "jobs": ["A"],
        "optimalContainers": {"n0": 12},
    }
    assert state["apps"]["appB"]["member"] is False and state["apps"]["appB"]["lambdaS"] == 10.0
    assert state["nodeClasses"]["k"] == {
        "alphaC": ALPHA_C,
        "alphaD": ALPHA_D,
        "observations": 1,
        "fitted": True,
    }
    other = Dara()
    other.load_state(state)
    assert other.state() == state  # the round trip
    # Unknown fields (a newer operator's, or the resource's own) are ignored, and written back unchanged.
    state["apps"]["appA"]["futureField"] = [1, 2]
    state["nodeClasses"]["k"]["rmsePct"] = 30
    state["generation"] = 7
    other = Dara()
    other.load_state(state)
    assert other.state()["apps"]["appA"]["futureField"] == [1, 2]
    assert "k" in other.fitted_classes and other.offline["k"] == (ALPHA_C, ALPHA_D)
    # A job of a saved application starts from its θ and λ: in the optimisation at once, no profiling map.
    job = Job("J", "appA", 0.0, [Task("J", "map", i, 64.0, ()) for i in range(30)], [])
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [job])
    placements = other.assign(snapshot, "n0")
    assert other.profiles["J"] == Profile(1.0, 0.0, 230.0) and other.fit.lam["J"] == 12.0
    assert other.optimal == {"n0": {"J": 12}}
    assert "profiling" not in placements[0].explanation.reason
    assert other.state()["apps"]["appA"]["jobs"] == ["J"]


def test_load_state_tolerates_an_empty_or_partial_state() -> None:
    policy = Dara(DaraConfig.model_validate({"alphas": OFFLINE_ALPHAS}))
    policy.load_state({})
    assert policy.state()["apps"] == {}
    assert policy.state()["nodeClasses"]["dara-8core"]["fitted"]  # the offline π^M stays
    policy.load_state({"apps": {"A": {"lambdaS": 3.0}, "B": 7}, "nodeClasses": {"x": {"alphaC": 1.0}}})
    assert "x" not in policy.fit.alpha
    snapshot = ClusterSnapshot(
        0.0, {"n0": make_node()}, {"n0": []}, [Job("j", "A", 0.0, [Task("j", "map", 0, 1.0, ())], [])]
    )
    policy.assign(snapshot, "n0")
    assert "j" not in policy.profiles  # no θ saved for A: its job is profiled as usual


def test_fit_replaces_a_non_positive_size_by_the_shortest_time() -> None:
    # (x², t) = (1, 1), (4, 10), (9, 25): OLS slope 3, intercept 12 − 3·14/3 = −2 ≤ 0, so λ = min t = 1.
    profiles = {"a": Profile(1.0, 0.0, 100.0)}
    obs = [Observation("a", "k", t, {"a": x}) for x, t in ((1, 1.0), (2, 10.0), (3, 25.0))]
    fit = fit_load_model(obs, profiles)
    assert fit.alpha["k"][0] == pytest.approx(3.0)
    assert fit.lam["a"] == pytest.approx(1.0)


def test_idle_node_with_an_all_zero_optimum_falls_back_to_fair() -> None:
    # x* = 0 for every application on a node running no map would leave pending maps waiting for ever.
    policy = fitted_dara()
    policy._members = ("A",)
    policy.optimal = {"n0": {"A": 0}}
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [make_job("A", 5)])
    placements = policy.assign(snapshot, "n0")
    assert [p.task.job_id for p in placements] == ["A"]
    assert "fallback" in placements[0].explanation.reason
    assert policy.assign(snapshot, "n0") == []  # a map now runs there: x* = 0 holds


# --- offline α's, λ from the profiling map, the FairScheduler underneath -----------------------------------


def test_fit_with_fixed_alphas_fits_only_the_sizes() -> None:
    # α fixed at (0.5, 0) for class k: t − 0.5·c·L_c² is λ exactly, whatever the load.
    profiles = {"a": Profile(2.0, 0.0, 100.0)}
    obs = [Observation("a", "k", 7.0 + 0.5 * 2.0 * x * x, {"a": float(x)}) for x in (1, 3, 5)]
    fit = fit_load_model(obs, profiles, {"k": (0.5, 0.0)})
    assert fit.alpha == {"k": (0.5, 0.0)}
    assert fit.lam["a"] == pytest.approx(7.0)
    assert fit_load_model([], profiles, {"k": (0.5, 0.0)}).alpha == {"k": (0.5, 0.0)}


def test_offline_alphas_make_the_class_fitted_from_the_start() -> None:
    policy = Dara(DaraConfig.model_validate({"alphas": {"k": [ALPHA_C, ALPHA_D]}}))
    assert "k" in policy.fitted_classes and policy.fit.alpha["k"] == (ALPHA_C, ALPHA_D)
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [make_job("C", 10)])
    # The node is DARA's from the start: C is unmeasured, so one profiling map and nothing else (I4-6)...
    assert run_rounds(policy, snapshot) == ["C"]
    assert run_rounds(policy, snapshot) == []


def test_lambda_from_the_profiling_map_is_normalised_and_floored_at_its_cpu_time() -> None:
    policy = fitted_dara()
    policy.profiles["C"] = Profile(4.0, 0.0, 100.0)
    # Alone on the node (mix 1, L_c = 1): λ = t − c·α_c·1 = 20 − 4/12.
    assert policy._profile_lambda(Observation("C", "k", 20.0, {"C": 1.0})) == pytest.approx(20.0 - 4.0 / 12)
    # Next to 11 maps of A (L_c = 12): the model explains more than the whole 20 s, so λ = c = 4 s.
    assert policy._profile_lambda(Observation("C", "k", 20.0, {"C": 1.0, "A": 11.0})) == pytest.approx(4.0)


def test_lambda_is_measured_once_per_application() -> None:
    policy = Dara(DaraConfig.model_validate({"alphas": {"k": [ALPHA_C, ALPHA_D]}}))
    policy.profiles["C"] = Profile(4.0, 0.0, 100.0)
    first = Observation("C", "k", 20.0, {"C": 1.0})
    policy._first["C"] = first
    policy.observations.extend([first, Observation("C", "k", 50.0, {"C": 1.0})])
    policy.refit()
    assert policy.fit.lam["C"] == pytest.approx(20.0 - 4.0 / 12)
    policy.observations.append(Observation("C", "k", 90.0, {"C": 1.0}))
    policy.refit()
    assert policy.fit.lam["C"] == pytest.approx(20.0 - 4.0 / 12)  # Alg 4.3.1 profiles once
    refitting = Dara(DaraConfig.model_validate({"lambdaFrom": "fit", "alphas": {"k": [ALPHA_C, ALPHA_D]}}))
    refitting.profiles = dict(policy.profiles)
    refitting.observations.extend(policy.observations)
    refitting.refit()
    assert refitting.fit.lam["C"] == pytest.approx((20 + 50 + 90) / 3 - 4.0 / 12)


def test_lambda_is_measured_once_the_profiling_maps_class_is_fitted() -> None:
    # Class k learns α online. A refit before k counts as fitted gives C a least-squares λ; once k is fitted,
    # C's λ must come from its profiling map (Alg 4.3.1, I4-7), not stay at that early least-squares value.
    policy = Dara(DaraConfig.model_validate({"minObservations": 4, "minLoadSpread": 2}))
    policy.profiles["C"] = Profile(4.0, 0.0, 100.0)
    first = Observation("C", "k", 20.0, {"C": 1.0})
    policy._first["C"] = first
    policy.observations.extend([first, Observation("C", "k", 30.0, {"C": 2.0})])
    policy.refit()
    assert "k" not in policy.fitted_classes  # two observations, load spread 1
    early = policy.fit.lam["C"]
    # Eq 4.12 with λ = 19.5, α_c = 0.125 (c = 4): t = 19.5 + 0.5·L², observed at L = 3, 4, 5.
    policy.observations.extend(Observation("C", "k", 19.5 + 0.5 * x * x, {"C": float(x)}) for x in (3, 4, 5))
    policy.refit()
    assert "k" in policy.fitted_classes
    alpha_c = policy.fit.alpha["k"][0]
    assert policy.fit.lam["C"] == pytest.approx(max(20.0 - 4.0 * alpha_c, 4.0))  # the profiling map's
    assert policy.fit.lam["C"] != pytest.approx(early)
    policy.observations.append(Observation("C", "k", 90.0, {"C": 1.0}))
    policy.refit()
    assert policy.fit.lam["C"] == pytest.approx(max(20.0 - 4.0 * alpha_c, 4.0))  # then kept: measured once


def test_unfitted_node_class_is_scheduled_by_the_fair_policy() -> None:
    # Class k has no offline α and no observations: the composed Fair policy decides, maps and reduces.
    policy = Dara()
    nodes = {"n0": make_node("n0"), "n1": make_node("n1")}
    busy, idle = make_job("A", 10, submit=0.0), make_job("B", 10, submit=1.0)
    snapshot = ClusterSnapshot(0.0, nodes, {"n0": [], "n1": []}, [busy, idle])
    snapshot.commit(Placement(busy.maps[9], "n1", Explanation("test", 0.0, "setup")))
    placements = policy.assign(snapshot, "n0")
    # Fair: one map per heartbeat, to the job with the fewest running maps (B), not the first submitted.
    assert [p.task.job_id for p in placements] == ["B"]
    assert placements[0].explanation.policy == "dara"
    assert "fair fallback" in placements[0].explanation.reason
    assert "furthest below its share" in placements[0].explanation.reason


def test_reduces_follow_the_fair_order_on_dara_nodes() -> None:
    policy = fitted_dara()
    node = make_node()
    a = Job("A", "x", 0.0, [], [Task("A", "reduce", 0, 0.0, ())])
    b = Job("B", "x", 1.0, [], [Task("B", "reduce", 0, 0.0, ())])
    snapshot = ClusterSnapshot(0.0, {"n0": node}, {"n0": []}, [a, b])
    a.running_reduces = 1  # A already runs a reduce elsewhere: Fair gives this node's reduce slot to B
    placements = policy.assign(snapshot, "n0")
    assert [(p.task.job_id, p.task.kind) for p in placements] == [("B", "reduce")]
    assert "FairScheduler" in placements[0].explanation.reason


def test_memory_per_map_is_the_applications_peak_not_the_request() -> None:
    policy = Dara()
    pi = Job("p", "pi", 0.0, [Task("p", "map", 0, 0.0, ())], [])
    policy.on_job_submitted(pi, 0.0)
    outcome = TaskOutcome(pi.maps[0], "n0", 0.0, 15.0, True, cpu_s=12.0, written_bytes=5_000_000)
    assert policy._peak_memory(outcome) == 230.0  # Table 4.1's RAM for Pi, not the 1024 MB container
    unknown = Job("u", "no-such-app", 0.0, [Task("u", "map", 0, 0.0, ())], [])
    policy.on_job_submitted(unknown, 0.0)
    assert policy._peak_memory(TaskOutcome(unknown.maps[0], "n0", 0.0, 1.0, True)) == 1024.0


def by_requests_node(cores: int = 4) -> Node:
    return Node(
        "n0", cores, 16384.0, node_class="k", map_slots=UNCAPPED, reduce_slots=UNCAPPED, by_requests=True
    )


def test_with_shortest_first_the_jobs_with_least_work_left_fill_the_cluster_first() -> None:
    # Issue 21's experiment [ours]: by requests, DARA mixes only the jobs with the least work left (maps to
    # start x λ) that fill the cluster's 4 cores: B (5 x 10 s) before A (30 x 12 s), though A came first.
    policy = fitted_dara(assignMultiple=True, shortestFirst=True)
    big, small = make_job("A", 30, submit=0.0), make_job("B", 5, submit=1.0)
    snapshot = ClusterSnapshot(1.0, {"n0": by_requests_node()}, {"n0": []}, [big, small])
    assert run_rounds(policy, snapshot) == ["B"] * 4  # the node's 4 cores; A waits
    assert policy.optimal["n0"] == {"B": 4}


def test_with_shortest_first_a_longer_job_joins_once_the_shorter_ones_leave_room() -> None:
    policy = fitted_dara(assignMultiple=True, shortestFirst=True)
    big, small = make_job("A", 30), make_job("B", 2, submit=1.0)
    snapshot = ClusterSnapshot(1.0, {"n0": by_requests_node()}, {"n0": []}, [big, small])
    placed = run_rounds(policy, snapshot)
    assert set(placed) == {"A", "B"} and len(placed) == 4  # B's 2 maps leave room: A joins the mix


def test_by_default_the_mix_is_over_every_job_as_the_thesis() -> None:
    policy = fitted_dara(assignMultiple=True)
    big, small = make_job("A", 30), make_job("B", 5, submit=1.0)
    snapshot = ClusterSnapshot(1.0, {"n0": by_requests_node()}, {"n0": []}, [big, small])
    assert set(run_rounds(policy, snapshot)) == {"A", "B"}


# --- a measured application's θ and λ serve its later jobs ----------------------------------------------


def test_an_adopted_lambda_survives_a_refit_before_its_job_has_run_a_map() -> None:
    # A job of a saved application starts from its θ and λ (no profiling map). A refit made before that job
    # has any observation of its own must keep its λ: dropped, the job would get x* = 0 and wait for ever
    # beside the other jobs (it has a profile, so no profiling map either).
    saved = fitted_dara()
    saved._apps = {"A": "appA"}
    policy = Dara(DaraConfig.model_validate({"alphas": {"k": [ALPHA_C, ALPHA_D]}}))
    policy.load_state(saved.state())
    other = make_job("B", 30)
    policy.profiles["B"] = Profile(0.0, 1.0, 280.0)
    policy._first["B"] = Observation("B", "k", 11.0, {"B": 1.0})
    policy.observations.extend([policy._first["B"], Observation("B", "k", 12.0, {"B": 2.0})])
    job = Job("J", "appA", 0.0, [Task("J", "map", i, 64.0, ()) for i in range(30)], [])
    snapshot = ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [job, other])
    policy._sync(snapshot)
    assert policy.fit.lam["J"] == 12.0
    policy.refit()
    assert policy.fit.lam["J"] == 12.0
    policy.compute_optimal(snapshot.nodes, list(policy._members))
    assert policy.optimal["n0"]["J"] > 0


def app_job(job_id: str, app: str, maps: int, submit: float = 0.0, cpu: float = 1.0) -> Job:
    return Job(
        job_id,
        app,
        submit,
        [Task(job_id, "map", i, 64.0, ()) for i in range(maps)],
        [],
        map_request=Resources(cpu, 1024.0),
    )


def profile_first_map(policy: Dara, node: Node, job: Job) -> ClusterSnapshot:
    """``job`` alone: its profiling map runs 0-4 s (3 CPU-s) and the next refit measures its λ."""
    policy.on_job_submitted(job, 0.0)
    snapshot = ClusterSnapshot(0.0, {node.name: node}, {node.name: []}, [job])
    (profiling,) = policy.assign(snapshot, node.name)
    assert profiling.explanation.reason.startswith(f"profiling map of {job.id}")
    attempt = snapshot.running[node.name].pop()
    attempt.task.running, attempt.task.done = False, True
    job.running_maps -= 1
    job.finished_maps += 1
    snapshot.now = 4.0
    snapshot.touch()
    policy.on_task_finished(TaskOutcome(attempt.task, node.name, 0.0, 4.0, True, cpu_s=3.0))
    policy.refit()
    assert job.id in policy.fit.lam
    return snapshot


def test_by_requests_a_later_job_of_a_measured_application_needs_no_profiling_map() -> None:
    # Kubernetes [ours, issue 21]: pi-2 starts from pi-1's θ and λ and joins x* at once.
    policy = Dara(DaraConfig.model_validate({"alphas": {"k": [ALPHA_C, ALPHA_D]}, "assignMultiple": True}))
    first = app_job("pi-1", "pi", 2)
    snapshot = profile_first_map(policy, by_requests_node(8), first)
    later = app_job("pi-2", "pi", 20, submit=4.0)
    policy.on_job_submitted(later, 4.0)
    snapshot.jobs.append(later)
    snapshot.touch(jobs_changed=True)
    placements = policy.assign(snapshot, "n0")
    assert policy.profiles["pi-2"] == policy.profiles["pi-1"]
    assert policy.fit.lam["pi-2"] == policy.fit.lam["pi-1"]
    assert not any("profiling" in p.explanation.reason for p in placements)
    assert [p.task.job_id for p in placements].count("pi-2") == policy.optimal["n0"]["pi-2"] > 1


def test_with_slots_each_job_is_profiled_as_the_thesis() -> None:
    # Slot mode reproduces the thesis: every job (a YARN application) has its own profiling map (Alg 4.3.1).
    policy = Dara(DaraConfig.model_validate({"alphas": {"k": [ALPHA_C, ALPHA_D]}, "assignMultiple": True}))
    first = app_job("pi-1", "pi", 2)
    snapshot = profile_first_map(policy, make_node(), first)
    later = app_job("pi-2", "pi", 20, submit=4.0)
    policy.on_job_submitted(later, 4.0)
    snapshot.jobs.append(later)
    snapshot.touch(jobs_changed=True)
    placements = policy.assign(snapshot, "n0")
    assert "pi-2" not in policy.profiles
    of_later = [p for p in placements if p.task.job_id == "pi-2"]
    assert len(of_later) == 1 and of_later[0].explanation.reason.startswith("profiling map of pi-2")


def test_the_mix_keeps_to_the_cores_by_each_jobs_own_cpu_request() -> None:
    # Job ids are not application names (on Kubernetes a job is its resource's name): the mix must read the
    # CPU request of the job's application, 2 cores here, so 4 cores take 2 of its maps, not 4.
    policy = fitted_dara(assignMultiple=True)
    job = app_job("A", "wide", 30, cpu=2.0)
    policy.on_job_submitted(job, 0.0)
    snapshot = ClusterSnapshot(0.0, {"n0": by_requests_node(4)}, {"n0": []}, [job])
    assert run_rounds(policy, snapshot) == ["A", "A"]
    assert policy.optimal["n0"] == {"A": 2}


@pytest.mark.parametrize(
    ("nodes", "job", "due"),
    [(1, "A", 3), (2, "A", 3), (4, "A", 6), (5, "A", 8), (2, "C", 1), (4, "C", 2), (5, "C", 3)],
)
def test_a_cluster_past_refit_nodes_refits_after_proportionally_more_observations(
    nodes: int, job: str, due: int
) -> None:
    """Observations arrive in proportion to the nodes, so the refit keeps one rate per simulated second: every
    ``refitEvery`` observations (every one while a job has no λ: C here) up to ``refitNodes`` nodes, that
    times nodes / refitNodes past it."""
    policy = fitted_dara(refitEvery=3, refitNodes=2)
    policy.profiles["C"] = Profile(1.0, 1.0, 230.0)  # measured, its λ not yet fitted
    refits: list[int] = []

    def counted_refit() -> None:
        refits.append(policy._since_fit)
        policy._since_fit = 0

    policy.refit = counted_refit  # type: ignore[method-assign]
    names = [f"n{i}" for i in range(nodes)]
    snapshot = ClusterSnapshot(
        0.0, {n: make_node(n) for n in names}, {n: [] for n in names}, [make_job(job, 1000)]
    )
    for _ in range(4 * due):
        policy._since_fit += 1  # one observation (on_task_finished's count)
        policy._sync(snapshot)
    assert refits == [due] * 4
