"""Simulator features for seed 002 ch.3: per-policy options and variants, learned state saved and loaded between
runs (``--save-state``/``--load-state``), the slot bound, per-app map times, and the J_IO replication apps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy.optimize import linprog

from mrsched.core.catalog import application, expand_layout
from mrsched.core.physics import noise_factor
from mrsched.policies import make_policy
from mrsched.simulator.engine import Simulation
from mrsched.simulator.run import lower_bound, run_scenario
from mrsched.simulator.scenario import Scenario, load_scenario, policy_name
from mrsched.simulator.workload import build_jobs

SMALL: dict[str, Any] = {
    "name": "pi-jio-small",
    "source": "test",
    "headline": "test",
    "cluster": {
        "nodes": [{"class": "gupta-old", "count": 2}, {"class": "gupta-new", "count": 2}],
        "mapSlots": 2,
        "reduceSlots": 1,
    },
    "workload": {
        "jobs": [
            {"id": "jio", "app": "jior1", "maps": 8, "reduces": 0, "inputMBPerMap": 51.2},
            {"id": "pi", "app": "pi", "maps": 60, "reduces": 1, "inputMBPerMap": 0},
        ]
    },
    "policies": ["fifo", "throughput", "throughput:known"],
    "policyOptions": {
        "throughput:known": {
            "profiles": {"pi": {"thetaC": 24.0, "thetaD": 6.3}, "jior1": {"thetaC": 5.6, "thetaD": 32.5}}
        }
    },
    "seeds": [1, 2],
}


def _scenario(tmp_path: Path, data: dict[str, Any] = SMALL) -> Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def test_policy_variants_take_their_own_options(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    assert policy_name("throughput:known") == "throughput"
    assert scenario.options_for("throughput") is None
    assert scenario.options_for("throughput:known") == SMALL["policyOptions"]["throughput:known"]
    saved: dict[str, Any] = {}
    summary, _ = run_scenario(scenario, saved_state=saved)
    assert list(summary["policies"]) == ["fifo", "throughput", "throughput:known"]
    assert saved["throughput:known"]["apps"]["pi"]["phase"] == "known"
    assert saved["throughput"]["apps"]["pi"]["phase"] != "known"
    # Per-app map times by node class, with shares summing to 1 (Table 3.3's comparison).
    times = summary["policies"]["fifo"]["map_times"]
    assert set(times) == {"jior1", "pi"}
    assert sum(times["pi"]["by_class_share"].values()) == pytest.approx(1.0)
    assert times["pi"]["by_class_mean_s"]["gupta-new"] < times["pi"]["by_class_mean_s"]["gupta-old"]
    spread = summary["policies"]["fifo"]
    assert spread["makespan_min_s"] <= spread["makespan_s"] <= spread["makespan_max_s"]


def test_options_by_bare_name_apply_to_every_variant(tmp_path: Path) -> None:
    data = {**SMALL, "policyOptions": {"throughput": {"maxExploreTasks": 5}}}
    scenario = _scenario(tmp_path, data)
    assert scenario.options_for("throughput:other") == {"maxExploreTasks": 5}


def test_slot_bound_is_below_every_slot_based_policy(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    summary, _ = run_scenario(scenario)
    bound = summary["lower_bound"]["slot_bound_s"]
    assert bound is not None and bound > summary["lower_bound"]["makespan_s"]
    for name, p in summary["policies"].items():
        for run in p["per_seed"]:
            assert run["makespan_s"] >= bound * 0.97, name  # noise may shave a few percent off the bound


def test_slot_bound_of_one_app_on_one_class_is_waves_of_heartbeat_rounded_maps(tmp_path: Path) -> None:
    data = {
        **SMALL,
        "cluster": {"nodes": [{"class": "gupta-new", "count": 2}], "mapSlots": 2, "heartbeatS": 3},
        "workload": {"jobs": [{"id": "pi", "app": "pi", "maps": 40, "reduces": 0, "inputMBPerMap": 0}]},
    }
    scenario = _scenario(tmp_path, data)
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes)]
    jobs = build_jobs(scenario, nodes, 1)
    sim = Simulation(scenario.cluster, jobs, lambda truth: make_policy("fifo"), seed=1)
    # Pi on gupta-new: 5.3 + 10/7.5 + 0.05/2.5 = 6.65 s alone, times each map's own noise factor on the node
    # (the least of its first attempt and a speculative copy: speculation is on for FIFO); each map holds its
    # slot for that, rounded up to whole 3 s heartbeats; 40 maps on 2 x 2 slots, split as a fractional LP.
    held = np.array(
        [
            [
                math.ceil(6.65 * min(noise_factor(1, n, f"{t.key}#{k}", 0.05) for k in (1, 2)) / 3 - 1e-9) * 3
                for n in sorted(nodes)
            ]
            for t in jobs[0].maps
        ]
    )
    assert set(held.flatten()) <= {6, 9}
    # x[i, n] then T: Σ_n x[i, n] = 1 and Σ_i held[i, n] x[i, n] <= 2 T per node; minimise T.
    m = len(held)
    a_ub = np.zeros((2, 2 * m + 1))
    for n in range(2):
        a_ub[n, n : 2 * m : 2] = held[:, n]
        a_ub[n, -1] = -2.0
    a_eq = np.zeros((m, 2 * m + 1))
    for i in range(m):
        a_eq[i, 2 * i : 2 * i + 2] = 1.0
    c = np.zeros(2 * m + 1)
    c[-1] = 1.0
    optimum = linprog(c, A_ub=a_ub, b_ub=np.zeros(2), A_eq=a_eq, b_eq=np.ones(m), bounds=(0, None)).fun
    # Less one heartbeat: each slot's last map ends at its own time, not at the next heartbeat.
    assert lower_bound(sim, jobs)["slot_bound_s"] == pytest.approx(optimum - 3.0, rel=1e-5)


def test_save_state_then_load_state_continues_learning(tmp_path: Path) -> None:
    from mrsched.cli import main

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "seeds": [1]}))
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for out, extra in ((first, []), (second, ["--load-state", str(tmp_path / "first.json")])):
        with pytest.raises(SystemExit) as exit_info:
            main(
                [
                    "simulate",
                    str(path),
                    "--policies",
                    "fifo,throughput",
                    "--out",
                    str(tmp_path / out.stem),
                    "--save-state",
                    str(out),
                    *extra,
                ]
            )
        assert exit_info.value.code == 0
    one = json.loads(first.read_text())
    two = json.loads(second.read_text())
    assert set(one) == {"fifo", "throughput"}
    pi_one, pi_two = one["throughput"]["apps"]["pi"], two["throughput"]["apps"]["pi"]
    assert pi_one["observations"] == 60
    assert pi_two["observations"] == 120  # the second run started from the first run's posterior
    assert pi_two["detSigma"] < pi_one["detSigma"]


def test_jio_replication_apps_scale_the_written_part_of_theta_d() -> None:
    # θd(r) = 0.512 + 95.948·r/3 (Table 3.2's 96.46 read as replication 3); θc unchanged.
    for app, r in (("jior1", 1), ("jior2", 2), ("jio", 3)):
        demand = application(app).map.demand(51.2)
        assert demand.cpu_s == pytest.approx(5.6)
        assert demand.disk_s == pytest.approx(0.512 + 95.948 * r / 3)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_h_sweep_scenarios_load(r: int) -> None:
    scenario = load_scenario(
        Path(__file__).parents[3] / "bench" / "scenarios" / f"gupta-ch3-pi-jio-r{r}.yaml"
    )
    assert {"fifo", "fair", "kube-default", "throughput", "greedy-informed"} <= set(scenario.policies)
    assert scenario.options_for("throughput:known") is not None


def test_a_sweep_in_two_processes_gives_the_serial_sweeps_results_byte_for_byte(tmp_path: Path) -> None:
    """``mrsched simulate --jobs 2``: each run (policy x seed) in its own process, gathered in the serial order."""
    scenario = _scenario(tmp_path)
    outputs = []
    for workers in (1, 2):
        saved: dict[str, Any] = {}
        lines: list[str] = []
        summary, first = run_scenario(scenario, saved_state=saved, progress=lines.append, workers=workers)
        assert len(lines) == len(SMALL["policies"]) * len(SMALL["seeds"]), "one progress line per run"
        outputs.append((json.dumps(summary, indent=1), json.dumps(saved, indent=1), sorted(first)))
    assert outputs[0] == outputs[1]


def test_a_sweep_without_the_bound_gives_the_same_policy_results_and_no_bound(tmp_path: Path) -> None:
    """``with_bound=False`` (a speed benchmark at 1,000 nodes, where the bound is quadratic in the cluster)
    drops only the bound."""
    scenario = _scenario(tmp_path)
    lines: list[str] = []
    full, _ = run_scenario(scenario, progress=lines.append)
    bare, _ = run_scenario(scenario, with_bound=False)
    assert bare["lower_bound"] is None and bare["lower_bound_per_seed"] == []
    assert full["lower_bound"]["makespan_s"] > 0
    assert bare["policies"] == full["policies"]
    assert sum("lower bound" in line for line in lines) == len(SMALL["seeds"]), "timed once per seed"
