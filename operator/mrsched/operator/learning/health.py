"""Soft faults surfaced on the cluster (seed 002 ch.5): a probed node that silently slows down in CPU or disk.

The judgement itself is :class:`mrsched.health.SlowdownMonitor` (pure): it is fed one observation
per newly finished, succeeded map attempt on a node with a probed capability, with the node's nominal time per
unit of work (γ = 1/κ from its probes, Ω and σ). This module is its Kubernetes edge, owned by the scheduling
loop:

* the node's belief goes to its ``NodeProfile`` at ``status.health`` (:func:`health_fields`) with a
  ``Degraded`` entry in ``status.conditions`` (:func:`degraded_condition`), at most once per
  ``health_write_interval_s`` per node unless its verdict changes (:class:`WriteThrottle`);
* a verdict change posts an Event on the Node (:func:`verdict_event`): Warning ``NodeDegraded`` naming the
  suspected resource, Normal ``NodeRecovered`` when it clears;
* the gauges ``mrsched_node_slowdown{node,resource}`` (posterior mean γ over nominal) and
  ``mrsched_node_degraded{node,resource}`` (0/1) follow every observation;
* with ``--taint-degraded-nodes`` a degraded node carries the taint ``mrsched.dev/degraded=<resource>:NoSchedule``
  until it recovers (:func:`taints_for`, level-based: compared with the node's listed taints every round);
* the monitor's learned state (:meth:`SlowdownMonitor.state`) is kept in ``PolicyProfile/node-health`` at
  ``status.state``, read back at start-up, written on a verdict change or at most once per interval.

The pure parts (status, condition, event, taint, throttle) are functions here, tested without a cluster; what
the reporter last wrote is kept on it (:attr:`NodeHealthReporter.written`, ``events``, ``taints``) for a live
test to compare with what the API server holds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mrsched.core.kuberules import tolerates
from mrsched.core.model import TaskOutcome
from mrsched.core.probes import Capability
from mrsched.health import MonitorConfig, NodeHealth, SlowdownMonitor, profile_key
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.learning.profiles import ProfileStore, utc_stamp
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.snapshot import DEGRADED_TAINT_KEY, NodeInfo

log = logging.getLogger("mrsched.health")

#: The PolicyProfile that keeps the monitor's learned state (``status.state``).
HEALTH_PROFILE = "node-health"
#: The taint a degraded node carries with ``--taint-degraded-nodes``; its value names the resources.
TAINT_KEY = DEGRADED_TAINT_KEY
TAINT_EFFECT = "NoSchedule"
#: The NodeProfile condition.
CONDITION_TYPE = "Degraded"
RESOURCES = ("cpu", "disk")
_REASONS = {
    (): "Healthy",
    ("cpu",): "CPUSlowdown",
    ("disk",): "DiskSlowdown",
    ("cpu", "disk"): "CPUAndDiskSlowdown",
}


def verdict(degraded: Iterable[str]) -> tuple[str, ...]:
    """A verdict in canonical order: (), ("cpu",), ("disk",) or ("cpu", "disk")."""
    found = set(degraded)
    return tuple(r for r in RESOURCES if r in found)


def reason_of(degraded: Iterable[str]) -> str:
    """The condition's reason: ``Healthy``, ``CPUSlowdown``, ``DiskSlowdown`` or ``CPUAndDiskSlowdown``."""
    return _REASONS[verdict(degraded)]


def taint_value(degraded: Iterable[str]) -> str:
    """The taint's value: ``cpu``, ``disk`` or ``cpu-disk`` (a label value: no commas)."""
    return "-".join(verdict(degraded))


def _num(x: float) -> float:
    return float(f"{x:.6g}")


def health_fields(health: NodeHealth, now: float) -> dict[str, Any]:
    """``status.health`` of the node's NodeProfile: the monitor's belief, for people and for tests."""
    fields: dict[str, Any] = {
        "gammaC": _num(health.gamma_c),
        "gammaD": _num(health.gamma_d),
        "sdC": _num(health.sd_c),
        "sdD": _num(health.sd_d),
        "nominalC": _num(health.nominal_c),
        "nominalD": _num(health.nominal_d),
        "pDegradedC": _num(health.p_degraded_c),
        "pDegradedD": _num(health.p_degraded_d),
        "degraded": list(verdict(health.degraded)),
        "observations": int(health.observations),
        "evidence": health.evidence[:1024],
        "updatedAt": utc_stamp(now),
    }
    if health.since is not None:
        fields["since"] = utc_stamp(health.since)
    return fields


def degraded_condition(
    health: NodeHealth, conditions: Iterable[Mapping[str, Any]], now: float
) -> dict[str, Any]:
    """The ``Degraded`` condition for ``health``, given the profile's current ``status.conditions``:
    ``lastTransitionTime`` moves only when the status flips (True/False), as Kubernetes conditions do; a
    change of suspected resource changes the reason and message only."""
    found = verdict(health.degraded)
    status = "True" if found else "False"
    previous = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
    since = (
        previous["lastTransitionTime"]
        if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime")
        else utc_stamp(now)
    )
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason_of(found),
        "message": health.evidence[:1024],
        "lastTransitionTime": since,
    }


def with_condition(
    conditions: Iterable[Mapping[str, Any]], condition: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``conditions`` with the entry of ``condition``'s type replaced (or appended); the others kept as they are."""
    out = [dict(c) for c in conditions if c.get("type") != condition["type"]]
    return [*out, dict(condition)]


@dataclass(frozen=True)
class HealthEvent:
    """An Event on a Node: ``kind`` is Warning or Normal."""

    node: str
    kind: str
    reason: str
    message: str


def verdict_event(
    node: str, before: Iterable[str], after: Iterable[str], evidence: str
) -> HealthEvent | None:
    """The Event a verdict change posts, or None when nothing changed. Degraded (or degraded in other
    resources than before): Warning ``NodeDegraded`` naming the suspected resources; cleared: Normal
    ``NodeRecovered``."""
    was, now = verdict(before), verdict(after)
    if was == now:
        return None
    if now:
        what = " and ".join(now)
        return HealthEvent(node, "Warning", "NodeDegraded", f"suspected {what} slowdown: {evidence}")
    return HealthEvent(
        node, "Normal", "NodeRecovered", f"no longer degraded ({' and '.join(was)}): {evidence}"
    )


def taints_for(taints: Iterable[Mapping[str, Any]], degraded: Iterable[str]) -> list[dict[str, Any]] | None:
    """The node's new ``spec.taints`` so that it carries ``mrsched.dev/degraded=<resource>:NoSchedule`` exactly
    when ``degraded`` is not empty; None when the node's taints are right already. Other taints are kept."""
    listed = [dict(t) for t in taints]
    others = [t for t in listed if t.get("key") != TAINT_KEY]
    ours = [
        {"key": TAINT_KEY, "value": t.get("value", ""), "effect": t.get("effect")}
        for t in listed
        if t.get("key") == TAINT_KEY
    ]
    found = verdict(degraded)
    want = [{"key": TAINT_KEY, "value": taint_value(found), "effect": TAINT_EFFECT}] if found else []
    if ours == want:
        return None
    return [*others, *want]


def untolerated_degraded(
    usable: Mapping[str, NodeInfo], tolerations: Iterable[tuple[dict[str, Any], ...]]
) -> set[str]:
    """Usable nodes carrying the degraded taint that none of the given jobs' tolerations admit: they can take
    no task this round, so the policies are not offered them (the pod-level check, ``snapshot.admits``, would
    refuse each placement there anyway)."""
    every = list(tolerations)
    out = set()
    for name, info in usable.items():
        ours = tuple(t for t in info.taints if t.get("key") == TAINT_KEY)
        if ours and not any(tolerates(ours, t) for t in every):
            out.add(name)
    return out


class WriteThrottle:
    """At most one write per key per ``interval_s``, except when something urgent (a verdict change) happened."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def due(self, key: str, now: float, *, urgent: bool = False) -> bool:
        last = self._last.get(key)
        return urgent or last is None or now - last >= self.interval_s

    def wrote(self, key: str, now: float) -> None:
        self._last[key] = now


@dataclass(frozen=True)
class Decision:
    """What to do with a node whose belief changed: write its status now (else wait for the throttle), and
    the Event to post once written (a verdict change)."""

    write: bool
    event: HealthEvent | None


def decide(health: NodeHealth, published: Iterable[str], throttle: WriteThrottle, now: float) -> Decision:
    """A verdict change is written at once and announced; any other change waits for the node's interval."""
    event = verdict_event(health.node, published, health.degraded, health.evidence)
    return Decision(throttle.due(health.node, now, urgent=event is not None), event)


def nominal_of(capability: Capability) -> dict[str, float]:
    """The node's nominal parameters from its probes: time per reference second of work γ = 1/κ, Ω and σ."""
    return {
        "gamma_c": 1.0 / capability.kappa_c,
        "gamma_d": 1.0 / capability.kappa_d,
        "omega_s": capability.omega_s,
        "sigma_s": capability.sigma_s,
    }


class NodeHealthReporter:
    """Feeds finished map attempts to the slowdown monitor and publishes its verdicts (module docstring)."""

    def __init__(
        self,
        api: ClusterApi,
        profiles: ProfileStore,
        metrics: OperatorMetrics,
        *,
        enabled: bool = True,
        taint: bool = False,
        interval_s: float = 60.0,
        monitor_config: MonitorConfig | None = None,
    ) -> None:
        self.api = api
        self.profiles = profiles
        self.metrics = metrics
        self.enabled = enabled
        self.taint = taint
        self.monitor_config = monitor_config
        self.monitor = SlowdownMonitor(monitor_config)
        self.throttle = WriteThrottle(interval_s)
        #: The verdict last published per node (status written, Event posted); restored from the NodeProfiles.
        self.published: dict[str, tuple[str, ...]] = {}
        #: What was last written to each node's NodeProfile status (``health`` and ``conditions``).
        self.written: dict[str, dict[str, Any]] = {}
        #: Every Event posted, in order.
        self.events: list[HealthEvent] = []
        #: The degraded taint's value last set on each node ("" once removed).
        self.taints: dict[str, str] = {}
        self.observed = 0
        self._dirty: set[str] = set()  # nodes with observations not yet written
        self._state_dirty = False
        self._taint_errors: dict[str, str] = {}

    # start-up ---------------------------------------------------------------------------------------------

    def load(self) -> None:
        """The monitor's state from PolicyProfile/node-health, and each node's published verdict from its
        NodeProfile (so that a restart neither forgets a slowdown nor announces it again)."""
        if not self.enabled:
            return
        saved = self.profiles.policy_state(HEALTH_PROFILE).get("policy")
        if isinstance(saved, dict) and saved:
            try:
                self.monitor.load_state(saved)
            except Exception as err:  # edited by hand, an older shape: start from scratch and overwrite it
                log.warning("node health: saved monitor state unreadable, starting from scratch: %s", err)
                self.monitor = SlowdownMonitor(self.monitor_config)
        for node, status in self.profiles.nodes.items():
            health = status.get("health")
            if isinstance(health, dict) and isinstance(health.get("degraded"), list):
                self.published[node] = verdict(health["degraded"])
        for node in self.monitor.nodes():
            if (health := self.monitor.health(node)) is not None:
                self._gauges(health)

    def slowdown(self, node: str) -> tuple[float, float] | None:
        """The slowdown factors the policies see for ``node`` (``Node.slowdown``) while it is judged degraded."""
        return self.monitor.slowdown(node) if self.enabled else None

    # observations -----------------------------------------------------------------------------------------

    def task_finished(self, app: str, kind: str, outcome: TaskOutcome, now: float) -> bool:
        """One finished attempt, seen once (``LearningFeed.learn``): observed when it is a succeeded map on a
        node with a probed capability. Returns whether the monitor observed it."""
        if not self.enabled or kind != "map" or not outcome.succeeded or not outcome.node:
            return False
        capability = self.profiles.capability(outcome.node)
        if capability is None or outcome.duration_s <= 0:
            return False
        try:
            nominal = nominal_of(capability)
            health, _ = self.monitor.observe(
                outcome.node,
                profile_key(app, outcome.task.input_mb),
                outcome.duration_s,
                outcome.finish_s,
                gamma_c=nominal["gamma_c"],
                gamma_d=nominal["gamma_d"],
                omega_s=nominal["omega_s"],
                sigma_s=nominal["sigma_s"],
                group=str((self.profiles.nodes.get(outcome.node) or {}).get("nodeClass") or ""),
            )
        except Exception as err:  # never fail a round over one observation
            log.warning("%s: node health could not observe a map of %s: %s", outcome.node, app, err)
            return False
        self.observed += 1
        self._dirty.add(outcome.node)
        self._state_dirty = True
        self._gauges(health)
        return True

    def _gauges(self, health: NodeHealth) -> None:
        found = verdict(health.degraded)
        for resource, gamma, nominal in (
            ("cpu", health.gamma_c, health.nominal_c),
            ("disk", health.gamma_d, health.nominal_d),
        ):
            if nominal > 0:
                self.metrics.node_slowdown.labels(health.node, resource).set(gamma / nominal)
            self.metrics.node_degraded.labels(health.node, resource).set(int(resource in found))

    # publishing -------------------------------------------------------------------------------------------

    def publish(
        self,
        workers: Mapping[str, NodeInfo],
        resource_versions: Mapping[str, str],
        now: float,
        *,
        persist: bool = True,
    ) -> int:
        """Once per round: NodeProfile status and Events for nodes whose belief changed, taints, the monitor's
        state. Returns the number of profile writes."""
        if not self.enabled:
            return 0
        writes = 0
        urgent = False
        for node in sorted(self._dirty):
            health = self.monitor.health(node)
            if health is None:
                self._dirty.discard(node)
                continue
            decision = decide(health, self.published.get(node, ()), self.throttle, now)
            urgent = urgent or decision.event is not None
            if not decision.write:
                continue
            if persist:
                try:
                    self._write_status(node, health, now)
                except Exception as err:  # written again next round
                    log.warning("%s: writing node health: %s", node, err)
                    continue
                writes += 1
            self.throttle.wrote(node, now)
            self._dirty.discard(node)
            self.published[node] = verdict(health.degraded)
            if decision.event is not None:
                self._announce(decision.event)
        if (
            persist
            and self._state_dirty
            and self.throttle.due(f"policyprofile/{HEALTH_PROFILE}", now, urgent=urgent)
        ):
            try:
                writes += self.profiles.save_policy_state(
                    HEALTH_PROFILE, {"policy": self.monitor.state()}, {}
                )
                self.throttle.wrote(f"policyprofile/{HEALTH_PROFILE}", now)
                self._state_dirty = False
            except Exception as err:
                log.warning("saving the node-health monitor's state: %s", err)
        if self.taint:
            self._reconcile_taints(workers, resource_versions)
        return writes

    def _write_status(self, node: str, health: NodeHealth, now: float) -> None:
        current = self.profiles.nodes.get(node) or {}
        condition = degraded_condition(health, current.get("conditions") or [], now)
        fields = {
            "health": health_fields(health, now),
            "conditions": with_condition(current.get("conditions") or [], condition),
        }
        self.profiles.write_node(node, fields)
        self.written[node] = fields

    def _announce(self, event: HealthEvent) -> None:
        level = logging.WARNING if event.kind == "Warning" else logging.INFO
        log.log(level, "%s: %s: %s", event.node, event.reason, event.message)
        self.api.node_event(event.node, event.kind, event.reason, event.message)
        self.events.append(event)

    def _reconcile_taints(self, workers: Mapping[str, NodeInfo], versions: Mapping[str, str]) -> None:
        for node, info in workers.items():
            taints = taints_for(info.taints, self.published.get(node, ()))
            if taints is None:
                self._taint_errors.pop(node, None)
                continue
            try:
                self.api.set_node_taints(node, taints, versions.get(node, ""))
            except Exception as err:  # a concurrent change, or no patch right: the next round's list decides
                message = f"{type(err).__name__} {getattr(err, 'status', '') or ''}".strip()
                if self._taint_errors.get(node) != message:
                    log.warning("%s: setting the %s taint failed (%s): %s", node, TAINT_KEY, message, err)
                self._taint_errors[node] = message
                continue
            value = taint_value(self.published.get(node, ()))
            self.taints[node] = value
            log.info("%s: %s", node, f"tainted {TAINT_KEY}={value}:{TAINT_EFFECT}" if value else "untainted")
