"""The soft-fault monitor's Kubernetes edge (mrsched.operator.learning.health), without a cluster: the NodeProfile
status
and Degraded condition built from a NodeHealth, when an Event fires, when the taint is set and removed, the
write throttle, and which finished attempts the monitor is fed. A live test drives the same reporter on the
real control plane (its ``written``, ``events`` and ``taints`` are what it last wrote)."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest

from mrsched.cli import build_parser
from mrsched.core.model import Node, Task, TaskOutcome, TaskType
from mrsched.core.probes import Capability
from mrsched.health import MonitorConfig, NodeHealth
from mrsched.operator.learning.health import (
    HEALTH_PROFILE,
    TAINT_KEY,
    NodeHealthReporter,
    WriteThrottle,
    decide,
    degraded_condition,
    health_fields,
    nominal_of,
    reason_of,
    taint_value,
    taints_for,
    untolerated_degraded,
    verdict_event,
    with_condition,
)
from mrsched.operator.learning.profiles import ProfileStore, utc_stamp
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.snapshot import NodeInfo

T0 = 1_800_000_000.0


def belief(degraded: tuple[str, ...] = (), **fields: Any) -> NodeHealth:
    values: dict[str, Any] = {
        "node": "old-0",
        "gamma_c": 1.0,
        "gamma_d": 1.0,
        "sd_c": 0.05,
        "sd_d": 0.08,
        "nominal_c": 1.0,
        "nominal_d": 1.0,
        "p_degraded_c": 0.01,
        "p_degraded_d": 0.02,
        "degraded": degraded,
        "observations": 12,
        "since": None,
        "evidence": "12 maps at 1.00x nominal CPU and 1.00x nominal disk",
    }
    values.update(fields)
    return NodeHealth(**values)


SLOW_CPU = belief(
    ("cpu",),
    gamma_c=2.5,
    p_degraded_c=0.997,
    since=T0 - 30,
    evidence="CPU 2.5x slower than probed over the last 8 maps",
)


# --- status.health and the Degraded condition --------------------------------------------------------------


def test_health_fields_are_the_belief_and_the_verdict() -> None:
    fields = health_fields(SLOW_CPU, T0)
    assert fields == {
        "gammaC": 2.5,
        "gammaD": 1.0,
        "sdC": 0.05,
        "sdD": 0.08,
        "nominalC": 1.0,
        "nominalD": 1.0,
        "pDegradedC": 0.997,
        "pDegradedD": 0.02,
        "degraded": ["cpu"],
        "observations": 12,
        "evidence": "CPU 2.5x slower than probed over the last 8 maps",
        "updatedAt": utc_stamp(T0),
        "since": utc_stamp(T0 - 30),
    }
    healthy = health_fields(belief(), T0)
    assert healthy["degraded"] == [] and "since" not in healthy
    # Canonical order whatever the monitor's, and plain JSON numbers.
    both = health_fields(belief(("disk", "cpu"), gamma_c=1 / 3), T0)
    assert both["degraded"] == ["cpu", "disk"] and both["gammaC"] == 0.333333


@pytest.mark.parametrize(
    ("degraded", "status", "reason"),
    [
        ((), "False", "Healthy"),
        (("cpu",), "True", "CPUSlowdown"),
        (("disk",), "True", "DiskSlowdown"),
        (("disk", "cpu"), "True", "CPUAndDiskSlowdown"),
    ],
)
def test_condition_per_verdict(degraded: tuple[str, ...], status: str, reason: str) -> None:
    health = belief(degraded, evidence=f"evidence for {reason}")
    condition = degraded_condition(health, [], T0)
    assert condition == {
        "type": "Degraded",
        "status": status,
        "reason": reason,
        "message": f"evidence for {reason}",
        "lastTransitionTime": utc_stamp(T0),
    }
    assert reason_of(degraded) == reason


def test_condition_transition_time_moves_only_when_the_status_flips() -> None:
    conditions: list[dict[str, Any]] = []
    steps = [
        (T0, belief()),  # first written: False since now
        (T0 + 60, belief(gamma_c=1.1)),  # still healthy: unchanged time
        (T0 + 120, SLOW_CPU),  # flips to True
        (T0 + 180, replace(SLOW_CPU, degraded=("cpu", "disk"))),  # still True: only the reason changes
        (T0 + 240, belief()),  # recovered: flips back
    ]
    seen = []
    for now, health in steps:
        condition = degraded_condition(health, conditions, now)
        conditions = with_condition(conditions, condition)
        seen.append((condition["status"], condition["reason"], condition["lastTransitionTime"]))
    assert seen == [
        ("False", "Healthy", utc_stamp(T0)),
        ("False", "Healthy", utc_stamp(T0)),
        ("True", "CPUSlowdown", utc_stamp(T0 + 120)),
        ("True", "CPUAndDiskSlowdown", utc_stamp(T0 + 120)),
        ("False", "Healthy", utc_stamp(T0 + 240)),
    ]
    assert [c["type"] for c in conditions] == ["Degraded"]


def test_with_condition_replaces_only_its_own_type() -> None:
    other = {"type": "Probed", "status": "True", "reason": "x", "lastTransitionTime": utc_stamp(T0)}
    old = {"type": "Degraded", "status": "False", "reason": "Healthy", "lastTransitionTime": utc_stamp(T0)}
    new = degraded_condition(SLOW_CPU, [other, old], T0 + 5)
    assert with_condition([other, old], new) == [other, new]
    assert with_condition([other], new) == [other, new]


# --- Events on the Node -------------------------------------------------------------------------------------


def test_events_fire_only_when_the_verdict_changes() -> None:
    verdicts: list[tuple[str, ...]] = [(), (), ("cpu",), ("cpu",), ("cpu", "disk"), ("disk", "cpu"), (), ()]
    events = [
        verdict_event("old-0", before, after, f"step {i}")
        for i, (before, after) in enumerate(pairwise(verdicts), start=1)
    ]
    fired = [(e.kind, e.reason, e.message) if e else None for e in events]
    assert fired == [
        None,
        ("Warning", "NodeDegraded", "suspected cpu slowdown: step 2"),
        None,
        ("Warning", "NodeDegraded", "suspected cpu and disk slowdown: step 4"),
        None,  # the same verdict in another order
        ("Normal", "NodeRecovered", "no longer degraded (cpu and disk): step 6"),
        None,
    ]
    assert all(e is None or e.node == "old-0" for e in events)


def test_a_verdict_change_is_written_at_once_anything_else_waits_for_the_throttle() -> None:
    throttle = WriteThrottle(60)
    first = decide(belief(), (), throttle, T0)
    assert first.write and first.event is None  # never written: due
    throttle.wrote("old-0", T0)
    # The belief moved but the verdict did not: not before the interval.
    assert not decide(belief(gamma_c=1.2), (), throttle, T0 + 10).write
    # The verdict changed: at once, with its Event.
    slow = decide(SLOW_CPU, (), throttle, T0 + 11)
    assert slow.write and slow.event is not None and slow.event.reason == "NodeDegraded"
    throttle.wrote("old-0", T0 + 11)
    # Published as degraded: no second Event for the same verdict, and the throttle holds again.
    again = decide(replace(SLOW_CPU, gamma_c=2.7), ("cpu",), throttle, T0 + 12)
    assert not again.write and again.event is None
    assert decide(replace(SLOW_CPU, gamma_c=2.7), ("cpu",), throttle, T0 + 71).write
    back = decide(belief(), ("cpu",), throttle, T0 + 13)
    assert back.write and back.event is not None and back.event.reason == "NodeRecovered"


def test_the_throttle_keeps_each_key_to_one_write_per_interval() -> None:
    throttle = WriteThrottle(30)
    assert throttle.due("a", T0)
    throttle.wrote("a", T0)
    assert not throttle.due("a", T0 + 29.9)
    assert throttle.due("b", T0 + 1)  # per key
    assert throttle.due("a", T0 + 1, urgent=True)
    assert throttle.due("a", T0 + 30)
    zero = WriteThrottle(0)
    zero.wrote("a", T0)
    assert zero.due("a", T0)  # interval 0: every change is written


# --- the taint ----------------------------------------------------------------------------------------------


def test_the_taint_is_added_changed_and_removed_with_the_verdict_and_other_taints_are_kept() -> None:
    foreign = {
        "key": "node.kubernetes.io/disk-pressure",
        "effect": "NoSchedule",
        "timeAdded": "2026-01-01T00:00:00Z",
    }
    assert taints_for([foreign], ()) is None  # healthy and untainted: nothing to do
    added = taints_for([foreign], ("cpu",))
    assert added == [foreign, {"key": TAINT_KEY, "value": "cpu", "effect": "NoSchedule"}]
    assert taints_for(added, ("cpu",)) is None  # in place already
    changed = taints_for(added, ("disk", "cpu"))
    assert changed == [foreign, {"key": TAINT_KEY, "value": "cpu-disk", "effect": "NoSchedule"}]
    assert taints_for(changed, ()) == [foreign]  # recovered: removed, the other taint stays
    # Someone changed our taint's effect: put right.
    edited = [{"key": TAINT_KEY, "value": "cpu", "effect": "NoExecute"}]
    assert taints_for(edited, ("cpu",)) == [{"key": TAINT_KEY, "value": "cpu", "effect": "NoSchedule"}]
    assert [taint_value(v) for v in [("cpu",), ("disk",), ("disk", "cpu")]] == ["cpu", "disk", "cpu-disk"]


def _info(name: str, taints: tuple[dict[str, Any], ...] = ()) -> NodeInfo:
    return NodeInfo(Node(name=name, cores=2, memory_mb=4096), True, True, taints, {})


def test_placement_is_not_offered_degraded_tainted_nodes_no_job_tolerates() -> None:
    taint = {"key": TAINT_KEY, "value": "disk", "effect": "NoSchedule"}
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    usable = {"ok": _info("ok"), "slow": _info("slow", (taint,)), "gpu": _info("gpu", (other,))}
    plain: tuple[dict[str, Any], ...] = ()
    tolerant = ({"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},)
    assert untolerated_degraded(usable, [plain]) == {"slow"}  # other taints are admits()'s, per pod
    assert untolerated_degraded(usable, [plain, tolerant]) == set()
    assert untolerated_degraded(usable, [({"key": TAINT_KEY, "value": "cpu", "effect": "NoSchedule"},)]) == {
        "slow"
    }


# --- what the monitor is fed ----------------------------------------------------------------------------------


def _outcome(node: str, kind: TaskType = "map", *, ok: bool = True, seconds: float = 30.0) -> TaskOutcome:
    return TaskOutcome(Task(job_id="job-1", kind=kind, index=0), node, T0, T0 + seconds, ok)


def test_succeeded_maps_on_probed_nodes_are_observed_once_each() -> None:
    store = ProfileStore(api=None)  # type: ignore[arg-type]  # reads only: no writes in this test
    store.nodes = {
        "old-0": {"phase": "Probed", "kappaC": 1.0, "kappaD": 1.0, "omegaS": 5.0, "sigmaS": 1.0},
        "new-0": {"phase": "Probing"},
    }
    metrics = OperatorMetrics()
    reporter = NodeHealthReporter(None, store, metrics)  # type: ignore[arg-type]
    assert reporter.task_finished("pi", "map", _outcome("old-0"), T0)
    assert not reporter.task_finished("pi", "reduce", _outcome("old-0", "reduce"), T0)
    assert not reporter.task_finished("pi", "map", _outcome("old-0", ok=False), T0)
    assert not reporter.task_finished("pi", "map", _outcome("new-0"), T0)  # not (yet) probed
    assert not reporter.task_finished("pi", "map", _outcome("gone"), T0)
    assert reporter.observed == 1 and reporter.monitor.nodes() == ["old-0"]
    health = reporter.monitor.health("old-0")
    assert health is not None and health.observations == 1
    slowdown = metrics.registry.get_sample_value(
        "mrsched_node_slowdown", {"node": "old-0", "resource": "cpu"}
    )
    degraded = metrics.registry.get_sample_value(
        "mrsched_node_degraded", {"node": "old-0", "resource": "cpu"}
    )
    assert slowdown == pytest.approx(health.gamma_c / health.nominal_c) and degraded == 0

    off = NodeHealthReporter(None, store, OperatorMetrics(), enabled=False)  # type: ignore[arg-type]
    assert not off.task_finished("pi", "map", _outcome("old-0"), T0) and off.monitor.nodes() == []


def test_nominal_is_the_probed_time_per_unit_of_work() -> None:
    assert nominal_of(Capability(4.0, 0.5, 6.0, 1.5)) == {
        "gamma_c": 0.25,
        "gamma_d": 2.0,
        "omega_s": 6.0,
        "sigma_s": 1.5,
    }


def test_flags_and_settings() -> None:
    defaults = OperatorConfig()
    assert defaults.health_monitor is True and defaults.taint_degraded_nodes is False
    env = OperatorConfig.from_env({"MRSCHED_HEALTH_MONITOR": "false", "MRSCHED_TAINT_DEGRADED_NODES": "true"})
    assert env.health_monitor is False and env.taint_degraded_nodes is True
    args = build_parser().parse_args(["run", "--no-health-monitor", "--taint-degraded-nodes"])
    assert (args.health_monitor, args.taint_degraded_nodes) == (False, True)
    args = build_parser().parse_args(["run"])
    assert (args.health_monitor, args.taint_degraded_nodes) == (
        None,
        None,
    )  # the environment's, else defaults


def test_a_restarted_operator_resumes_the_monitor_and_the_published_verdicts() -> None:
    probed = {"phase": "Probed", "kappaC": 2.0, "kappaD": 1.0, "omegaS": 5.0, "sigmaS": 1.0}
    store = ProfileStore(api=None)  # type: ignore[arg-type]
    store.nodes = {"old-0": dict(probed)}
    before = NodeHealthReporter(None, store, OperatorMetrics())  # type: ignore[arg-type]
    for i in range(5):
        before.task_finished("pi", "map", _outcome("old-0", seconds=30.0 + i), T0 + i)
    saved = before.monitor.health("old-0")
    assert saved is not None and saved.observations == 5

    # What the operator wrote: PolicyProfile/node-health's status.state, the NodeProfile's status.health.
    restarted = ProfileStore(api=None)  # type: ignore[arg-type]
    restarted.nodes = {"old-0": {**probed, "health": {"degraded": ["disk"]}}, "old-1": dict(probed)}
    restarted.policies = {HEALTH_PROFILE: {"state": json.loads(json.dumps(before.monitor.state()))}}
    metrics = OperatorMetrics()
    after = NodeHealthReporter(None, restarted, metrics)  # type: ignore[arg-type]
    after.load()
    resumed = after.monitor.health("old-0")
    assert resumed is not None and resumed.observations == 5
    assert (resumed.gamma_c, resumed.gamma_d) == pytest.approx((saved.gamma_c, saved.gamma_d))
    assert after.published == {"old-0": ("disk",)}  # announced before: not announced again
    sample = metrics.registry.get_sample_value("mrsched_node_slowdown", {"node": "old-0", "resource": "cpu"})
    assert sample == pytest.approx(resumed.gamma_c / resumed.nominal_c)

    # A state it cannot read (edited by hand): from scratch, the round goes on.
    restarted.policies = {HEALTH_PROFILE: {"state": {"nodes": "garbage"}}}
    fresh = NodeHealthReporter(None, restarted, OperatorMetrics())  # type: ignore[arg-type]
    fresh.load()
    assert fresh.monitor.nodes() == [] and fresh.published == {"old-0": ("disk",)}


def test_slow_cpu_maps_turn_the_gauges_and_the_decision_to_degraded() -> None:
    """The real monitor, fed through the reporter: a κc = 1 node whose Pi maps (θ = (10, 0.05), known) take
    2.5 times their CPU time is judged degraded in CPU; the decision writes at once and fires NodeDegraded."""
    store = ProfileStore(api=None)  # type: ignore[arg-type]
    store.nodes = {"old-0": {"phase": "Probed", "kappaC": 1.0, "kappaD": 1.0, "omegaS": 5.0, "sigmaS": 0.5}}
    metrics = OperatorMetrics()
    reporter = NodeHealthReporter(
        None,  # type: ignore[arg-type]
        store,
        metrics,
        monitor_config=MonitorConfig(known_profiles={"pi": (10.0, 0.05)}),
    )
    throttle = WriteThrottle(60)
    for i in range(12):
        seconds = 10.0 * 2.5 + 0.05 + 5.0 + (0.2 if i % 2 else -0.2)
        assert reporter.task_finished("pi", "map", _outcome("old-0", seconds=seconds), T0 + i)
    health = reporter.monitor.health("old-0")
    assert health is not None and health.degraded == ("cpu",)
    assert (
        metrics.registry.get_sample_value("mrsched_node_degraded", {"node": "old-0", "resource": "cpu"}) == 1
    )
    assert (
        metrics.registry.get_sample_value("mrsched_node_degraded", {"node": "old-0", "resource": "disk"}) == 0
    )
    slowdown = metrics.registry.get_sample_value(
        "mrsched_node_slowdown", {"node": "old-0", "resource": "cpu"}
    )
    assert slowdown is not None and slowdown > 1.5
    decision = decide(health, (), throttle, T0 + 12)
    assert decision.write and decision.event is not None and decision.event.reason == "NodeDegraded"
    assert degraded_condition(health, [], T0 + 12)["reason"] == "CPUSlowdown"
