"""Soft-fault detection on the live control plane (seed 002 ch.5): one emulated node's disk slows down mid-run
through the emulator's chaos hook; the operator, from its map tasks' durations alone, marks that node
``Degraded`` in disk (not CPU) on its NodeProfile, with an Event on the Node and the metrics, and the
condition clears once the fault is gone.

The setting is bench/scenarios/gupta-ch5-live-disk-hog.yaml (one old and two new machines of Table 3.1, Pi and
J_IO together under ``throughput``, a disk hog of intensity 4): the simulated detection delays committed in
its results bound the delay asserted here."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.cluster.test_metric_policies_live import gauge, node_events
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import apply, apply_crds, job_manifest, start_operator

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "gupta-ch5-live-disk-hog"
TIME_SCALE = 10.0  # model seconds per wall second, as tests/cluster/test_throughput_live.py
TASKS = {"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}}
MB = 2**20


def simulated_delays_s() -> list[float]:
    """The detection delays (model s) of the committed simulation of this setting, one per seed."""
    results = json.loads((REPO / "bench" / "results" / SCENARIO / "results.json").read_text())
    (fault,) = results["policies"]["throughput"]["detection"]["faults"]
    delays = [d for d in fault["delays_s"] if d is not None]
    assert len(delays) == len(fault["delays_s"]), "the simulation missed the fault: nothing to compare with"
    return [float(d) for d in delays]


def health(kube: Kube, node: str) -> dict[str, Any]:
    found = kube.kubectl("get", "nodeprofile", node, "-o", "json", check=False)
    return dict(json.loads(found.stdout).get("status") or {}) if found.returncode == 0 else {}


def verdict(kube: Kube, node: str) -> list[str]:
    """The node's published verdict; [] also for a node with no observed map yet (no ``status.health``)."""
    return list((health(kube, node).get("health") or {}).get("degraded") or [])


def degraded_condition(status: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == "Degraded"), {})


def test_a_slowed_disk_is_flagged_from_task_durations_and_cleared_after(
    kube: Kube, namespace: str, tmp_path: Path, emulate: EmulateFactory
) -> None:
    apply_crds(kube)
    emulator = emulate({"gupta-old": 1, "gupta-new-2core": 2}, time_scale=TIME_SCALE)
    nodes = list(emulator.nodes)
    target = next(n for n in nodes if n.endswith("gupta-new-2core-0"))
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        policy="throughput",
        extra=("--probe-repeats", "3", "--health-write-interval", "1"),
    )
    try:
        wait_for(
            lambda: all(health(kube, n).get("phase") == "Probed" for n in nodes),
            240,
            "every node probed",
            1.0,
        )
        jio = job_manifest(
            "jio",
            workload={"app": "jio"},
            input={"paths": ["in"], "bytes": int(400 * 51.2 * MB)},
            output={"path": "out/jio"},
            maps=400,
            reduces=0,
            resources=TASKS,
            policy="throughput",
        )
        pi = job_manifest(
            "pi",
            workload={"app": "pi", "parameters": {"samples": 1000}},
            output={"path": "out/pi"},
            maps=1000,
            reduces=1,
            resources=TASKS,
            policy="throughput",
        )
        apply(kube, namespace, jio)
        apply(kube, namespace, pi)

        # Healthy first: the monitor judges the target from enough of its own tasks, and finds nothing.
        def watched() -> dict[str, Any] | None:
            found = health(kube, target).get("health") or {}
            return found if found.get("observations", 0) >= 20 else None

        before = wait_for(watched, 240, "20 of the target's maps observed", 1.0)
        print("before the fault:", {k: before.get(k) for k in ("gammaC", "gammaD", "nominalC", "nominalD")})
        assert before["degraded"] == [] and all(verdict(kube, n) == [] for n in nodes)

        # The chaos hook: four extra streams writing to the target's disk from now on.
        emulator.client.add_fault(target, "disk-hog", intensity=4.0)
        hogged_at = time.time()
        slowest = max(simulated_delays_s())
        # Wall seconds: twice the slowest simulated seed's delay (the live run has had less healthy history to
        # learn its noise from than the simulation's 600 s).
        bound_s = 2 * slowest / TIME_SCALE
        condition = wait_for(
            lambda: (c := degraded_condition(health(kube, target))).get("status") == "True" and c,
            bound_s + 30,
            "the target judged degraded",
            1.0,
        )
        delay_s = time.time() - hogged_at
        status = health(kube, target)
        print(
            f"degraded after {delay_s:.0f} s wall = {delay_s * TIME_SCALE:.0f} model s (simulated ≤ {slowest:.0f})"
        )
        print("condition:", condition)
        assert delay_s <= bound_s, (delay_s, bound_s)
        # Disk, not CPU: J_IO's maps (which ``throughput`` runs first: it explores applications in submission
        # order) are almost all disk work, θd ≫ θc, so their longer times land on γd; γc keeps its prior.
        assert condition["reason"] == "DiskSlowdown" and status["health"]["degraded"] == ["disk"]
        assert status["health"]["gammaD"] > 1.5 * status["health"]["nominalD"]
        assert "γd" in condition["message"]
        assert all(verdict(kube, n) == [] for n in nodes if n != target)
        wait_for(lambda: "NodeDegraded" in node_events(kube, target), 30, "a NodeDegraded Event on the Node")
        assert gauge(operator, "mrsched_node_degraded", node=target, resource="disk") == 1.0
        assert gauge(operator, "mrsched_node_degraded", node=target, resource="cpu") == 0.0

        # The fault removed: the durations come back, the detector fires (V_high), the belief follows them down.
        emulator.client.clear_faults(target)
        cleared = wait_for(
            lambda: (c := degraded_condition(health(kube, target))).get("status") == "False" and c,
            240,
            "the Degraded condition cleared",
            1.0,
        )
        print("cleared:", cleared)
        assert cleared["reason"] == "Healthy" and verdict(kube, target) == []
        wait_for(
            lambda: "NodeRecovered" in node_events(kube, target), 30, "a NodeRecovered Event on the Node"
        )
    finally:
        operator.stop()
        # AppProfiles are cluster-wide: leave no learned Pi or J_IO to later tests that learn them from scratch.
        kube.kubectl("delete", "appprofiles", "pi", "jio", "--ignore-not-found")
