"""Live node metrics from Prometheus for the scheduling snapshot: PromQL templates, the series-label → node
mapping, and the time of every sample. What a sample's age means (fresh, stale, missing, unavailable) is decided
in :mod:`mrsched.core.node_metrics`, which the simulator feeds too, so that a stale or missing series reaches
policies as *unknown* (None with a status), never as zero.

Each metric is one PromQL expression evaluated as an instant query; ``{window}`` in it is replaced by the
configured rate window. Besides the values, one query reads the timestamp of a raw series per node
(``timestamp(node_load1)`` by default): its age is the age of the node's latest scrape, since ``rate()``
results carry the evaluation time, not the sample's. When a node's exporter goes away, Prometheus's staleness
markers make its series vanish: no newer sample arrives, so the node turns ``stale`` once its last one is older
than ``max_age_s``; a node never seen is ``missing``; a Prometheus that does not answer makes every node
``unavailable``.
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
from mrsched.core.node_metrics import FIELDS, MetricsTracker, Sample

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
assert set(DEFAULT_QUERIES) == set(FIELDS)


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
    """Reads every node's metrics from Prometheus each round into a :class:`~mrsched.core.node_metrics.MetricsTracker`
    (which remembers each node's last sample, to tell stale from missing)."""

    def __init__(
        self, query: Query, settings: MetricsSettings | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.query = query
        self.settings = settings or MetricsSettings()
        self.clock = clock
        self._pattern = re.compile(self.settings.node_pattern)
        self.tracker = MetricsTracker(self.settings.max_age_s)

    @property
    def available(self) -> bool:
        return self.tracker.available

    def read(self, nodes: Iterable[str]) -> dict[str, NodeMetrics]:
        names = list(nodes)
        try:
            ages = self._by_node(self.query(self.settings.age_query))
            values = {m: self._by_node(self.query(self.settings.expression(m))) for m in FIELDS}
        except Exception as err:  # connection refused, timeout, bad query: the round goes on without metrics
            if self.tracker.available:
                log.warning("Prometheus unavailable, node metrics unknown until it answers: %s", err)
            self.tracker.source_down()
            return self.tracker.read(names, self.clock())
        if not self.tracker.available:
            log.info("Prometheus answers again")
        self.tracker.record(
            {
                node: Sample(sampled_at, {m: values[m].get(node) for m in FIELDS})
                for node, sampled_at in ages.items()
            }
        )
        return self.tracker.read(names, self.clock())

    def _by_node(self, result: list[dict[str, Any]]) -> dict[str, float]:
        """Vector result → {node: value}; series without the node label or not matching are ignored."""
        out: dict[str, float] = {}
        for series in result:
            raw = (series.get("metric") or {}).get(self.settings.node_label)
            match = self._pattern.fullmatch(raw) if raw is not None else None
            if match is None:
                continue
            node = match.group(1) if match.groups() else match.group(0)
            out[node] = float(series["value"][1])
        return out
