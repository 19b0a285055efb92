"""Soft-fault detection in the simulator: a health monitor beside any policy, and what it is measured by.

The monitor (scenario key ``monitor``, off by default) is :class:`mrsched.health.SlowdownMonitor`
(seed 002 §5.3, Method B): every node is probed before time 0 (:func:`mrsched.simulator.probes.probe_node`, the
probes a ``needs_probes`` policy gets), every successful map's duration is fed to ``observe`` with its node's
probed nominal γ = 1/κ, Ω and σ, and every change of a node's verdict is recorded with its time. O(1) per
finished map: one ``observe`` call and two counters.

What the recording is measured by (:func:`detection_metrics`), for each run:

* per injected fault (``cluster.faults``): the **detection delay**, the first time at or after the fault's
  start at which its node's verdict is Degraded (while the fault is active), minus the start; whether the
  suspected resource is the right one (cpu-hog and lost-cores → ``cpu``, disk-hog → ``disk``); a fault whose
  node is never Degraded while it is active is **missed** (delay None);
* **false alarms**: onsets of a Degraded verdict (from healthy to Degraded) on a node with no active fault at
  that moment, and the node-seconds spent Degraded without an active fault (before a fault, after it ended, or
  on a healthy node);
* **throughput** per node in windows of ``windowS``: maps completed per minute, and seed 002 Eq 4.4's work
  throughput (the finished maps' isolated, noise-free task time per second); for each fault, its node's and
  its same-class peers' mean over the whole windows before the fault and after it (up to the fault's end or the
  last map of the run).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mrsched.core.probes import Capability
from mrsched.simulator.scenario import FaultSpec, MonitorSpec

if TYPE_CHECKING:
    from mrsched.health import SlowdownMonitor

#: The resource a fault of each kind should be blamed on.
EXPECTED_RESOURCE = {"cpu-hog": "cpu", "disk-hog": "disk", "lost-cores": "cpu"}
#: Verdict changes kept per node in results.json (a flapping verdict would otherwise bloat it).
TIMELINE_CAP = 200


@dataclass(frozen=True)
class Verdict:
    """A node's verdict from time ``t`` on: the resources it is Degraded in (() = healthy)."""

    t: float
    degraded: tuple[str, ...]
    evidence: str = ""


def degraded_spans(changes: Sequence[Verdict], end_s: float) -> list[tuple[float, float, tuple[str, ...]]]:
    """The ``(start, end, resources)`` spans in which a node was Degraded, from its verdict changes (healthy
    before the first), up to ``end_s``."""
    spans = []
    for i, change in enumerate(changes):
        until = changes[i + 1].t if i + 1 < len(changes) else end_s
        if change.degraded and until > change.t:
            spans.append((change.t, min(until, end_s), change.degraded))
    return spans


def _fault_window(fault: FaultSpec, end_s: float) -> tuple[float, float]:
    return fault.start_s, min(end_s, fault.end_s if fault.end_s is not None else math.inf)


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def fault_detection(fault: FaultSpec, changes: Sequence[Verdict], end_s: float) -> dict[str, Any]:
    """Detection delay and suspected resource of one fault, from its node's verdict changes."""
    start, stop = _fault_window(fault, end_s)
    expected = EXPECTED_RESOURCE[fault.kind]
    detected_at: float | None = None
    suspected: tuple[str, ...] = ()
    right_at: float | None = None
    flagged_s = 0.0
    for s, e, resources in degraded_spans(changes, end_s):
        if e <= start or s >= stop:
            continue
        at = max(s, start)
        if detected_at is None:
            detected_at, suspected = at, resources
        if right_at is None and expected in resources:
            right_at = at
        flagged_s += _overlap((s, e), (start, stop))
    return {
        "node": fault.node,
        "kind": fault.kind,
        "start_s": fault.start_s,
        "expected": expected,
        "detected": detected_at is not None,
        "delay_s": None if detected_at is None else detected_at - start,
        "suspected": list(suspected),
        "resource_right": expected in suspected,
        # Delay until the expected resource is among the suspected ones (it may come after a wrong first guess).
        "right_resource_delay_s": None if right_at is None else right_at - start,
        "degraded_fraction": flagged_s / (stop - start) if stop > start else 0.0,
    }


def false_alarms(
    timelines: Mapping[str, Sequence[Verdict]], faults: Sequence[FaultSpec], end_s: float
) -> dict[str, Any]:
    """Degraded verdicts on nodes without an active fault: onsets (healthy → Degraded while no fault of the
    node is active) and node-seconds Degraded outside the node's fault windows."""
    windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for fault in faults:
        windows[fault.node].append(_fault_window(fault, end_s))
    onsets: list[dict[str, Any]] = []
    node_s = 0.0
    by_node: dict[str, float] = {}
    for node, changes in timelines.items():
        previous: tuple[str, ...] = ()
        for change in changes:
            if change.degraded and not previous and not any(s <= change.t < e for s, e in windows[node]):
                onsets.append({"node": node, "t": change.t, "degraded": list(change.degraded)})
            previous = change.degraded
        outside = 0.0
        for s, e, _ in degraded_spans(changes, end_s):
            # Fault windows of one node may overlap: subtract their union's overlap with the span.
            covered = _union_overlap((s, e), windows[node])
            outside += (e - s) - covered
        if outside > 0:
            by_node[node] = outside
        node_s += outside
    return {"count": len(onsets), "node_s": node_s, "by_node_s": by_node, "onsets": onsets[:TIMELINE_CAP]}


def _union_overlap(span: tuple[float, float], windows: Sequence[tuple[float, float]]) -> float:
    covered, reach = 0.0, span[0]
    for s, e in sorted(windows):
        s, e = max(s, reach), min(e, span[1])
        if e > s:
            covered += e - s
            reach = e
    return covered


@dataclass
class _Window:
    maps: int = 0
    work_s: float = 0.0


@dataclass
class HealthRecorder:
    """Runs the monitor beside the policy and records its verdicts and each node's throughput."""

    spec: MonitorSpec
    nominal: dict[str, Capability]
    node_class: dict[str, str]
    monitor: SlowdownMonitor = field(init=False)
    timelines: dict[str, list[Verdict]] = field(init=False)
    windows: dict[str, dict[int, _Window]] = field(init=False)
    observations: int = 0
    last_map_s: float = 0.0

    def __post_init__(self) -> None:
        from mrsched.health import MonitorConfig, SlowdownMonitor

        self.monitor = SlowdownMonitor(MonitorConfig(**self.spec.options))
        self.timelines = {node: [] for node in self.nominal}
        self.windows = {node: defaultdict(_Window) for node in self.nominal}

    def on_map(self, node: str, app: str, duration_s: float, now: float, work_s: float) -> None:
        """A map finished successfully on ``node`` after ``duration_s``; ``work_s`` is its Eq 4.4 work."""
        self.observations += 1
        self.last_map_s = now
        window = self.windows[node][int(now // self.spec.window_s)]
        window.maps += 1
        window.work_s += work_s
        nominal = self.nominal[node]
        health, changed = self.monitor.observe(
            node,
            app,
            duration_s,
            now,
            gamma_c=1.0 / nominal.kappa_c,
            gamma_d=1.0 / nominal.kappa_d,
            omega_s=nominal.omega_s,
            sigma_s=nominal.sigma_s,
            group=self.node_class.get(node, ""),
        )
        if changed:
            self.timelines[node].append(Verdict(now, tuple(health.degraded), health.evidence))

    def series(self, end_s: float) -> dict[str, dict[str, list[float]]]:
        """Per node: maps completed per minute and Eq 4.4 work per second, window by window from time 0."""
        width = self.spec.window_s
        count = max(1, math.ceil(end_s / width))
        out = {}
        for node, windows in self.windows.items():
            got = [windows.get(k, _Window()) for k in range(count)]
            out[node] = {
                "maps_per_min": [round(w.maps * 60.0 / width, 3) for w in got],
                "work_per_s": [round(w.work_s / width, 4) for w in got],
            }
        return out

    def throughput_around(self, fault: FaultSpec) -> dict[str, Any]:
        """The fault's node's and its same-class peers' mean throughput over the whole windows before the
        fault's start and after it (up to its end or the run's last map)."""
        width = self.spec.window_s
        horizon = min(self.last_map_s, fault.end_s if fault.end_s is not None else math.inf)
        before = [k for k in range(int(fault.start_s // width)) if (k + 1) * width <= fault.start_s]
        first_after = math.ceil(fault.start_s / width)
        after = [k for k in range(first_after, int(horizon // width)) if (k + 1) * width <= horizon]
        peers = [
            n for n, c in self.node_class.items() if c == self.node_class[fault.node] and n != fault.node
        ]

        def rate(nodes: list[str], ks: list[int], what: str) -> float | None:
            if not ks or not nodes:
                return None
            total = 0.0
            for n in nodes:
                for k in ks:
                    if k in self.windows[n]:
                        w = self.windows[n][k]
                        total += w.maps if what == "maps" else w.work_s
            scale = 60.0 if what == "maps" else 1.0
            return total * scale / (width * len(ks) * len(nodes))

        return {
            "node": fault.node,
            "windows_before": len(before),
            "windows_after": len(after),
            "maps_per_min_before": rate([fault.node], before, "maps"),
            "maps_per_min_after": rate([fault.node], after, "maps"),
            # The second half of the windows after: where a scheduler that adapts has settled (Fig 6.2's
            # recovered level), past the drain of the tasks it had started before the fault.
            "maps_per_min_settled": rate([fault.node], after[len(after) // 2 :], "maps"),
            "work_per_s_before": rate([fault.node], before, "work_s"),
            "work_per_s_after": rate([fault.node], after, "work_s"),
            "peers": len(peers),
            "peers_maps_per_min_before": rate(peers, before, "maps"),
            "peers_maps_per_min_after": rate(peers, after, "maps"),
        }

    def report(self, faults: Sequence[FaultSpec], end_s: float) -> dict[str, Any]:
        """One run's detection metrics (results.json's ``per_seed[*].detection``)."""
        return {
            "observations": self.observations,
            "faults": [fault_detection(f, self.timelines[f.node], end_s) for f in faults],
            "false_alarms": false_alarms(self.timelines, faults, end_s),
            "throughput": [self.throughput_around(f) for f in faults],
            "final": {node: _health(self.monitor, node) for node in self.nominal},
            "timeline": {
                node: [[round(v.t, 3), list(v.degraded), v.evidence] for v in changes[:TIMELINE_CAP]]
                for node, changes in self.timelines.items()
                if changes
            },
            "series_window_s": self.spec.window_s,
            "series": self.series(end_s),
        }


def _health(monitor: SlowdownMonitor, node: str) -> dict[str, Any] | None:
    health = monitor.health(node)
    if health is None:
        return None
    return {
        "gamma_c": round(health.gamma_c, 4),
        "gamma_d": round(health.gamma_d, 4),
        "nominal_c": round(health.nominal_c, 4),
        "nominal_d": round(health.nominal_d, 4),
        "p_degraded_c": round(health.p_degraded_c, 4),
        "p_degraded_d": round(health.p_degraded_d, 4),
        "degraded": list(health.degraded),
        "observations": health.observations,
    }


def summarise_detection(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Over seeds: per fault, how many seeds detected it, the mean delay over those, how many blamed the right
    resource; false alarms (mean onsets and node-seconds per run, and the total); throughput before/after."""
    n = len(runs)
    faults = []
    for i, first in enumerate(runs[0]["faults"]):
        per = [r["faults"][i] for r in runs]
        delays = [p["delay_s"] for p in per if p["delay_s"] is not None]
        right = [p["right_resource_delay_s"] for p in per if p["right_resource_delay_s"] is not None]
        faults.append(
            {
                "node": first["node"],
                "kind": first["kind"],
                "start_s": first["start_s"],
                "expected": first["expected"],
                "detected_seeds": len(delays),
                "seeds": n,
                "mean_delay_s": statistics.fmean(delays) if delays else None,
                "delays_s": [p["delay_s"] for p in per],
                "resource_right_seeds": sum(1 for p in per if p["resource_right"]),
                "suspected": ["+".join(p["suspected"]) or "-" for p in per],
                "mean_right_resource_delay_s": statistics.fmean(right) if right else None,
                "mean_degraded_fraction": statistics.fmean(p["degraded_fraction"] for p in per),
            }
        )
    throughput = []
    for i, first in enumerate(runs[0]["throughput"]):
        per = [r["throughput"][i] for r in runs]
        row: dict[str, Any] = {"node": first["node"]}
        for key in first:
            if key != "node" and key not in ("windows_before", "windows_after", "peers"):
                values = [p[key] for p in per if p[key] is not None]
                row[key] = statistics.fmean(values) if values else None
        throughput.append(row)
    return {
        "faults": faults,
        "false_alarms_mean": statistics.fmean(r["false_alarms"]["count"] for r in runs),
        "false_alarms_total": sum(r["false_alarms"]["count"] for r in runs),
        "false_alarm_node_s_mean": statistics.fmean(r["false_alarms"]["node_s"] for r in runs),
        "false_alarms_per_seed": [r["false_alarms"]["count"] for r in runs],
        "throughput": throughput,
    }
