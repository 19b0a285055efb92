"""Soft-fault detection on the live control plane (seed 002 ch.5): one emulated node's disk slows down mid-run
through the emulator's chaos hook; the operator, from its map tasks' durations alone, marks that node
``Degraded`` in disk (not CPU) on its NodeProfile, with an Event on the Node and the metrics; with
``--taint-degraded-nodes`` it taints the node, so that J_IO's disk-heavy maps go to the other nodes but for one
canary map at a time; and once the fault is gone, the canaries' durations clear the condition and the taint is
lifted.

The setting is bench/scenarios/gupta-ch5-live-disk-hog.yaml (one old and two new machines of Table 3.1, J_IO
under ``throughput``, a disk hog of intensity 4): the simulated detection delays committed in its results bound
the delay asserted here. J_IO runs alone so that the target runs disk work: with Pi beside it, throughput, once
it has learned Pi, sends Pi to the new machines (fast CPUs) and J_IO to the old one, and the hogged node's
slower disk is then invisible to task durations (about half the runs, depending on when Pi was learned)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mrsched.operator.learning.health import TAINT_KEY
from mrsched.operator.model.pods import PLACEMENT_ANNOTATION as PLACEMENT
from tests.cluster.test_metric_policies_live import gauge, node_events
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import apply, apply_crds, job_manifest, start_operator, task_pods

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "gupta-ch5-live-disk-hog"
TIME_SCALE = 10.0  # model seconds per wall second, as tests/cluster/test_throughput_live.py
TASKS = {"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}}
MB = 2**20
CANARY_INTERVAL_S = 2.0  # wall seconds between canary maps on the tainted node (--degraded-canary-interval)
SHOWN = ("gammaC", "gammaD", "pDegradedC", "pDegradedD", "observations", "degraded")
TAINTED_WINDOW_S = 40.0  # wall seconds watched while the node is tainted and still slow


def simulated_delays_s() -> list[float]:
    """The detection delays (model s) of the committed simulation of this setting, one per seed, in kubernetes
    mode: the operator's loop runs cluster-wide rounds woken by events, as that mode does."""
    results = json.loads((REPO / "bench" / "results" / "kubernetes" / SCENARIO / "results.json").read_text())
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


def started_on(kube: Kube, namespace: str) -> dict[str, tuple[str, str]]:
    """Every task pod of J_IO: name -> (node, placement reason)."""
    out = {}
    for pod in task_pods(kube, namespace, "jio"):
        reason = json.loads(pod["metadata"].get("annotations", {}).get(PLACEMENT, "{}")).get("reason", "")
        out[pod["metadata"]["name"]] = (pod["spec"].get("nodeName") or "", reason)
    return out


def degraded_taint(kube: Kube, node: str) -> str | None:
    body = kube.node(node) or {}
    return next(
        (t.get("value") for t in body.get("spec", {}).get("taints") or [] if t.get("key") == TAINT_KEY), None
    )


@pytest.mark.slow  # about 6 minutes of task durations, statistical: make bench-live runs it and commits its numbers
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
        extra=(
            "--probe-repeats",
            "3",
            "--health-write-interval",
            "1",
            "--taint-degraded-nodes",
            "--degraded-canary-interval",
            str(CANARY_INTERVAL_S),
        ),
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
        apply(kube, namespace, jio)

        # Healthy first: the monitor judges the target from enough of its own tasks, and finds nothing.
        def watched() -> dict[str, Any] | None:
            found = health(kube, target).get("health") or {}
            return found if found.get("observations", 0) >= 20 else None

        before = wait_for(watched, 240, "20 of the target's maps observed", 1.0)
        print("before the fault:", {k: before.get(k) for k in ("gammaC", "gammaD", "nominalC", "nominalD")})
        assert before["degraded"] == [] and all(verdict(kube, n) == [] for n in nodes)
        healthy = started_on(kube, namespace)
        assert any(node == target for node, _ in healthy.values()), (
            "no disk work on the target: nothing to detect"
        )

        # The chaos hook: four extra streams writing to the target's disk from now on.
        emulator.client.add_fault(target, "disk-hog", intensity=4.0)
        hogged_at = time.time()
        slowest = max(simulated_delays_s())
        # Wall seconds: three times the slowest simulated seed's delay. The live run has had less healthy history
        # to learn its noise from than the simulation's 600 s, and a loaded 2-core CI machine stretches it: one
        # CI run was not judged degraded within 2x (151 s + 30 s of slack, 2026-11-26).
        bound_s = 3 * slowest / TIME_SCALE
        seen: list[float] = []

        def judged_degraded() -> dict[str, Any] | None:
            status = health(kube, target)
            if (
                time.time() - (seen[-1] if seen else hogged_at) >= 15
            ):  # the belief's course, in the test's log
                seen.append(time.time())
                found = status.get("health") or {}
                print(f"{seen[-1] - hogged_at:.0f} s after the hog:", {k: found.get(k) for k in SHOWN})
            condition = degraded_condition(status)
            return condition if condition.get("status") == "True" else None

        condition = wait_for(judged_degraded, bound_s + 30, "the target judged degraded", 1.0)
        delay_s = time.time() - hogged_at
        status = health(kube, target)
        print(
            f"degraded after {delay_s:.0f} s wall = {delay_s * TIME_SCALE:.0f} model s (simulated ≤ {slowest:.0f})"
        )
        print("condition:", condition)
        assert delay_s <= bound_s, (delay_s, bound_s)
        # Disk, not CPU: J_IO's maps are almost all disk work, θd ≫ θc, so their longer times land on γd; γc
        # keeps its prior.
        assert condition["reason"] == "DiskSlowdown" and status["health"]["degraded"] == ["disk"]
        assert status["health"]["gammaD"] > 1.5 * status["health"]["nominalD"]
        assert "γd" in condition["message"]
        assert all(verdict(kube, n) == [] for n in nodes if n != target)
        wait_for(lambda: "NodeDegraded" in node_events(kube, target), 30, "a NodeDegraded Event on the Node")
        assert gauge(operator, "mrsched_node_degraded", node=target, resource="disk") == 1.0
        assert gauge(operator, "mrsched_node_degraded", node=target, resource="cpu") == 0.0

        # Tainted: J_IO's maps go elsewhere, but for one canary at a time.
        wait_for(lambda: degraded_taint(kube, target) == "disk", 30, "the degraded taint on the node", 0.5)
        before_window = started_on(kube, namespace)
        time.sleep(TAINTED_WINDOW_S)
        in_window = {n: v for n, v in started_on(kube, namespace).items() if n not in before_window}
        on_target = [reason for node, reason in in_window.values() if node == target]
        share_healthy = sum(node == target for node, _ in healthy.values()) / len(healthy)
        share_tainted = sum(node == target for node, _ in in_window.values()) / max(len(in_window), 1)
        print(
            f"J_IO maps on the target: {share_healthy:.0%} of {len(healthy)} while healthy, "
            f"{share_tainted:.0%} of {len(in_window)} in {TAINTED_WINDOW_S:.0f} s tainted; "
            f"on the target then: {[reason[-60:] for reason in on_target]}"
        )
        assert all("canary on a node tainted" in reason for reason in on_target)
        assert len(on_target) <= TAINTED_WINDOW_S / CANARY_INTERVAL_S + 1
        assert in_window, "J_IO went on on the other nodes"
        assert share_tainted < share_healthy, (share_tainted, share_healthy)  # J_IO moved off the target
        assert verdict(kube, target) == ["disk"]  # the slow canaries keep the verdict

        # The fault removed: the canaries' durations come back, the detector fires (V_high), the belief follows
        # them down, the condition clears and the taint is lifted.
        emulator.client.clear_faults(target)
        cleared = wait_for(
            lambda: (c := degraded_condition(health(kube, target))).get("status") == "False" and c,
            240,
            "the Degraded condition cleared",
            1.0,
        )
        print("cleared:", cleared)
        assert cleared["reason"] == "Healthy" and verdict(kube, target) == []
        wait_for(lambda: degraded_taint(kube, target) is None, 30, "the degraded taint lifted", 0.5)
        wait_for(
            lambda: "NodeRecovered" in node_events(kube, target), 30, "a NodeRecovered Event on the Node"
        )
        canaries = gauge(operator, "mrsched_degraded_canaries_total")
        print("canary maps started:", canaries)
        assert canaries is not None and canaries >= 1
    finally:
        operator.stop()
        # AppProfiles are cluster-wide: leave no learned J_IO to later tests that learn it from scratch.
        kube.kubectl("delete", "appprofiles", "jio", "--ignore-not-found")
