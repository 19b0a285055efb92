"""What placement sees of the nodes, and what operators see of that: each round's live node metrics from
Prometheus (``nodemetrics``) and the slot counts that policies set themselves.

:class:`LiveMetrics` reads the metrics once a round, jobs or not, so that the gauges always tell whether
metric-driven policies could see the nodes; when a node's metrics stop or start being fresh it says so with an
Event on the Node, since those policies then fall back (or stop falling back) without any other sign. Without a
Prometheus (no ``--prometheus-url``) it reads nothing and placement runs on slot counts alone.
"""

from __future__ import annotations

import logging
from collections import Counter

from mrsched.core.model import Node, NodeMetrics
from mrsched.core.policy import Policy
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.model.nodemetrics import NodeMetricsSource
from mrsched.operator.model.operator_metrics import OperatorMetrics

log = logging.getLogger("mrsched.loop")


class LiveMetrics:
    def __init__(self, api: ClusterApi, metrics: OperatorMetrics, source: NodeMetricsSource | None) -> None:
        self.api = api
        self.metrics = metrics
        self.source = source
        self._status: dict[str, str] = {}  # node -> its metrics' status at the last read

    def read(self, nodes: list[str]) -> dict[str, NodeMetrics]:
        """Prometheus's view of the nodes, each marked fresh, stale, missing or unavailable; an Event on the
        Node whenever its metrics stop or start being fresh (metric-driven policies fall back meanwhile)."""
        if self.source is None:
            return {}
        read = self.source.read(nodes)
        self.metrics.prometheus_up.set(int(self.source.available))
        counts = Counter(m.status for m in read.values())
        for status in ("fresh", "stale", "missing", "unavailable"):
            self.metrics.node_metrics.labels(status).set(counts.get(status, 0))
        for node, metrics in read.items():
            before = self._status.get(node)
            self._status[node] = metrics.status
            if before is None and metrics.status == "fresh":
                continue  # the normal start: nothing to say
            if (before == "fresh") != (metrics.status == "fresh") or before is None:
                self._event(node, metrics)
        return read

    def policy_gauges(
        self, name: str, policy: Policy, live: dict[str, NodeMetrics], nodes: dict[str, Node]
    ) -> None:
        """After ``policy`` placed on ``nodes``: how many of them it schedules on its fallback for want of fresh
        metrics (when it needs metrics), and the map and reduce slots it sets itself per node."""
        if policy.needs_metrics:
            unknown = sum(1 for n in nodes if n not in live or live[n].status != "fresh")
            self.metrics.metrics_fallback.labels(name).set(unknown)
        for node, (maps, reduces) in policy.slot_counts().items():
            self.metrics.node_slots.labels(node, "map", name).set(maps)
            self.metrics.node_slots.labels(node, "reduce", name).set(reduces)

    def _event(self, node: str, metrics: NodeMetrics) -> None:
        if metrics.status == "fresh":
            kind, reason = "Normal", "MetricsRecovered"
            message = "node metrics are fresh again: metric-driven policies use them again"
        else:
            kind, reason = "Warning", f"Metrics{metrics.status.capitalize()}"
            age = f" (latest sample {metrics.age_s:.0f} s old)" if metrics.age_s is not None else ""
            message = (
                f"node metrics {metrics.status}{age}: metric-driven policies fall back until they are fresh "
                "(adaptive-slots keeps the node's slot counts; learning places by Fair and learns nothing here)"
            )
        log.log(logging.WARNING if kind == "Warning" else logging.INFO, "%s: %s", node, message)
        self.api.node_event(node, kind, reason, message)
