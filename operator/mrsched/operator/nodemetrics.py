"""Live node metrics from Prometheus for the scheduling snapshot: PromQL templates, the series-label → node
mapping, and the age of every sample, so that a stale or missing series reaches policies as *unknown* (None
with a status), never as zero.

Each metric is one PromQL expression evaluated as an instant query; ``{window}`` in it is replaced by the
configured rate window. Besides the values, one query reads the timestamp of a raw series per node
(``timestamp(node_load1)`` by default): its age is the age of the node's latest scrape, since ``rate()``
results carry the evaluation time, not the sample's.

Statuses, per node:

* ``fresh``: the node's latest sample is at most ``max_age_s`` old;
* ``stale``: the node had samples once and has none newer than ``max_age_s`` now (exporter down, target
  dropped: Prometheus's staleness markers make its series vanish, so "seen before" tells stale from missing);
* ``missing``: no series for this node has ever been read;
* ``unavailable``: Prometheus itself did not answer this round.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from mrsched.core.model import NodeMetrics

log = logging.getLogger("mrsched.metrics")

#: One expression per NodeMetrics field, over node_exporter's series; ``{window}`` is the rate window.
DEFAULT_QUERIES: dict[str, str] = {
    "load1": "node_load1",
    "cpu_utilisation": '1 - avg by ({label}) (rate(node_cpu_seconds_total{{mode="idle"}}[{window}]))',
    "memory_available_mb": "node_memory_MemAvailable_bytes / 1048576",
    "disk_bytes_per_s": (
        "sum by ({label}) (rate(node_disk_read_bytes_total[{window}])"
        " + rate(node_disk_written_bytes_total[{window}]))"
    ),
    "network_bytes_per_s": (
        "sum by ({label}) (rate(node_network_receive_bytes_total[{window}])"
        " + rate(node_network_transmit_bytes_total[{window}]))"
    ),
}
#: The raw series whose sample timestamp dates a node's metrics.
DEFAULT_AGE_QUERY = "timestamp(node_load1)"
FIELDS = tuple(DEFAULT_QUERIES)


@dataclass(frozen=True)
class MetricsSettings:
    """How to read node metrics: expressions, which label names the node, and when a sample is too old."""

    queries: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_QUERIES))
    age_query: str = DEFAULT_AGE_QUERY
    #: The series label that identifies the node (``node`` after relabelling, or ``instance``) ...
    node_label: str = "node"
    #: ... and a regular expression whose first group is the node's name (``(.*)``; ``([^:]+):\\d+`` for
    #: ``instance="worker-1:9100"``).
    node_pattern: str = "(.*)"
    rate_window: str = "1m"
    max_age_s: float = 30.0

    def expression(self, metric: str) -> str:
        return self.queries[metric].format(window=self.rate_window, label=self.node_label)


Query = Callable[[str], list[dict[str, Any]]]


def prometheus_query(url: str, timeout_s: float = 5.0) -> Query:
    """Instant queries against the Prometheus at ``url`` (prometheus-api-client)."""
    # The client retries failed requests with backoff by default: one try, bounded by the timeout, so that a
    # Prometheus outage costs a round at most ``timeout_s`` per query, never a stall.
    prom = PrometheusConnect(url=url, disable_ssl=True, retry=Retry(total=0), timeout=timeout_s)
    server_timeout = f"{max(1, int(timeout_s * 1000))}ms"

    def query(expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = prom.custom_query(expr, params={"timeout": server_timeout})
        return result

    return query


class NodeMetricsSource:
    """Reads every node's metrics each round and remembers which nodes it has seen (to tell stale from
    missing)."""

    def __init__(
        self, query: Query, settings: MetricsSettings | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.query = query
        self.settings = settings or MetricsSettings()
        self.clock = clock
        self._pattern = re.compile(self.settings.node_pattern)
        self._last_seen: dict[str, float] = {}
        self.available = True

    def read(self, nodes: Iterable[str]) -> dict[str, NodeMetrics]:
        names = list(nodes)
        now = self.clock()
        try:
            ages = self._by_node(self.query(self.settings.age_query))
            values = {m: self._by_node(self.query(self.settings.expression(m))) for m in FIELDS}
        except Exception as err:  # connection refused, timeout, bad query: the round goes on without metrics
            if self.available:
                log.warning("Prometheus unavailable, node metrics unknown until it answers: %s", err)
            self.available = False
            return {n: NodeMetrics(status="unavailable", age_s=self._age(n, now)) for n in names}
        if not self.available:
            log.info("Prometheus answers again")
        self.available = True
        for node, sampled_at in ages.items():
            self._last_seen[node] = max(sampled_at, self._last_seen.get(node, 0.0))
        return {n: self._node(n, values, now) for n in names}

    def _node(self, node: str, values: dict[str, dict[str, float]], now: float) -> NodeMetrics:
        age = self._age(node, now)
        if age is None:
            return NodeMetrics(status="missing")
        if age > self.settings.max_age_s:
            return NodeMetrics(status="stale", age_s=age)
        return NodeMetrics(**{m: values[m].get(node) for m in FIELDS}, age_s=age, status="fresh")

    def _age(self, node: str, now: float) -> float | None:
        seen = self._last_seen.get(node)
        return None if seen is None else max(0.0, now - seen)

    def _by_node(self, result: list[dict[str, Any]]) -> dict[str, float]:
        """Vector result → {node: value}; series without the node label or not matching are ignored."""
        out: dict[str, float] = {}
        for series in result:
            raw = (series.get("metric") or {}).get(self.settings.node_label)
            match = self._pattern.fullmatch(raw) if raw is not None else None
            if match is None:
                continue
            node = match.group(1) if match.groups() else match.group(0)
            value = float(series["value"][1])
            if value == value:  # NaN (e.g. rate over a single sample) is as good as missing
                out[node] = value
        return out
