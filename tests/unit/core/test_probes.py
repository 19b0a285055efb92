"""Probe tasks (seed 002 P3-A, Eq 3.3-3.5): hand-computed capabilities, the simulator's probes against the hidden
physics, and the operator's probe pods read back (pure parts; the live path is tests/cluster/)."""

from __future__ import annotations

import pytest

from mrsched.core.catalog import node_class
from mrsched.core.model import Node
from mrsched.core.probes import (
    MIN_SIGMA_S,
    PROBE_CPU_S,
    PROBE_DISK_S,
    PROBE_ETA,
    estimate_capability,
    estimate_sigma,
    probe_demand,
    probe_plan,
    probe_work,
)
from mrsched.core.report import TaskReport
from mrsched.operator.learning.probes import fingerprint, probe_pod, probe_pod_name, read_probe
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.snapshot import NodeInfo
from mrsched.simulator.probes import probe_durations, probe_node


def test_eq_3_5_with_the_probes_known_work() -> None:
    # Table 3.1's machine3: κ = (7.5, 2.5), Ω = 5.3 s. Eq 3.2 gives each probe's time: base = 20/7.5 + 20/2.5 + 5.3,
    # cpu = 80/7.5 + 20/2.5 + 5.3, disk = 20/7.5 + 80/2.5 + 5.3; Eq 3.5 inverts them exactly.
    base = 20 / 7.5 + 20 / 2.5 + 5.3
    runs = {
        "unit": [5.2, 5.4],
        "base": [base, base],
        "cpu": [base + 60 / 7.5] * 2,
        "disk": [base + 60 / 2.5] * 2,
    }
    cap = estimate_capability(runs)  # type: ignore[arg-type]
    assert cap.kappa_c == pytest.approx(7.5)
    assert cap.kappa_d == pytest.approx(2.5)
    assert cap.omega_s == pytest.approx(5.3)
    # σ pools the repeats' spread: only the unit runs differ, by ±0.1 s around 5.3 (one degree of freedom each).
    assert cap.sigma_s == pytest.approx((0.02 / 4) ** 0.5)


def test_scaled_probes_keep_the_units() -> None:
    base = 0.5 * (20 / 7.5 + 20 / 2.5) + 5.3
    runs = {"unit": [5.3], "base": [base], "cpu": [base + 30 / 7.5], "disk": [base + 30 / 2.5]}
    cap = estimate_capability(runs, scale=0.5)  # type: ignore[arg-type]
    assert (cap.kappa_c, cap.kappa_d) == (pytest.approx(7.5), pytest.approx(2.5))
    assert probe_work("cpu", 0.5) == (PROBE_ETA * PROBE_CPU_S * 0.5, PROBE_DISK_S * 0.5)
    assert probe_demand("disk").disk_s == pytest.approx(PROBE_ETA * PROBE_DISK_S)


def test_probe_faults_are_named() -> None:
    with pytest.raises(ValueError, match="no durations for probe kinds: disk"):
        estimate_capability({"unit": [1.0], "base": [2.0], "cpu": [3.0]})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="did not take longer"):
        estimate_capability({"unit": [1.0], "base": [5.0], "cpu": [4.0], "disk": [9.0]})  # type: ignore[arg-type]
    assert estimate_sigma({"unit": [3.0]}) == MIN_SIGMA_S  # no repeats: no spread to measure


def test_simulator_probes_recover_the_hidden_physics() -> None:
    for cls in ("gupta-old", "gupta-new", "dara-8core"):
        truth = node_class(cls).capability()
        durations = probe_durations(f"{cls}-0", truth, seed=3)
        assert [len(durations[k]) for k in ("unit", "base", "cpu", "disk")] == [4, 4, 4, 4]
        cap = probe_node(f"{cls}-0", truth, seed=3)
        assert cap.kappa_c == pytest.approx(truth.cpu_rate, rel=0.15), cls
        assert cap.kappa_d == pytest.approx(truth.disk_rate, rel=0.15), cls
        assert cap.omega_s == pytest.approx(truth.overhead_s, rel=0.08), cls
    assert probe_plan(2) == ["unit", "base", "cpu", "disk"] * 2


def _info(cores: int, memory_mb: float, cls: str) -> NodeInfo:
    return NodeInfo(Node("w1", cores, memory_mb, node_class=cls), True, True, (), {})


def test_a_resized_or_reclassed_node_has_a_new_fingerprint() -> None:
    base = fingerprint(_info(8, 16384, "gupta-new"))
    assert base == "cpu=8,memoryMi=16384,class=gupta-new"
    assert fingerprint(_info(4, 16384, "gupta-new")) != base
    assert fingerprint(_info(8, 8192, "gupta-new")) != base
    assert fingerprint(_info(8, 16384, "gupta-old")) != base


def test_probe_pod_is_bound_owned_and_declares_its_work() -> None:
    config = OperatorConfig(namespaces=("jobs",), probe_scale=0.5)
    pod = probe_pod("w1", 3, 1, "cpu", "uid-1", config)
    assert pod["metadata"]["name"] == "mrsched-probe-w1-r3-a1"
    assert pod["metadata"]["namespace"] == "jobs"
    assert pod["metadata"]["ownerReferences"][0] | {"uid": "uid-1"} == pod["metadata"]["ownerReferences"][0]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "NodeProfile"
    assert pod["spec"]["nodeName"] == "w1"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["MRSCHED_TASK_TYPE"] == "probe" and env["MRSCHED_PROBE_KIND"] == "cpu"
    assert float(env["MRSCHED_PROBE_SCALE"]) == 0.5
    assert pod["spec"]["containers"][0]["args"] == ["probe"]
    long_name = probe_pod_name("n" * 80, 0, 0)
    assert len(long_name) <= 63 and long_name.endswith("-r0-a0")


def test_a_probes_duration_is_the_workers_own_clock_else_the_containers() -> None:
    def pod(message: str) -> dict:
        return {
            "metadata": {"name": "p", "labels": {"mrsched.dev/probe-run": "2", "mrsched.dev/probe": "disk"}},
            "status": {
                "phase": "Succeeded",
                "containerStatuses": [
                    {
                        "state": {
                            "terminated": {
                                "startedAt": "2026-01-01T00:00:00Z",
                                "finishedAt": "2026-01-01T00:00:07Z",
                                "message": message,
                            }
                        }
                    }
                ],
            },
        }

    report = TaskReport("succeeded", wall_s=6.25).to_json()
    measured = read_probe(pod(report))
    assert measured is not None and (measured.run, measured.kind, measured.duration_s) == (2, "disk", 6.25)
    fallback = read_probe(pod("not a report"))
    assert fallback is not None and fallback.duration_s == 7.0
    assert read_probe({"metadata": {"name": "x", "labels": {}}}) is None
