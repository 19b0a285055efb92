"""The node-metrics reader's bookkeeping: label → node mapping, and fresh / stale / missing / unavailable.

Prometheus answers are given as the instant-query vectors it returns; tests/cluster/test_node_metrics.py
reads the same through a real Prometheus.
"""

from __future__ import annotations

from typing import Any

import pytest

from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.nodemetrics import DEFAULT_AGE_QUERY, MetricsSettings, NodeMetricsSource


def vector(label: str, values: dict[str, float]) -> list[dict[str, Any]]:
    return [{"metric": {label: k}, "value": [0, str(v)]} for k, v in values.items()]


class FakeProm:
    """Answers each expression from a table: what Prometheus's HTTP API would return for it."""

    def __init__(self, settings: MetricsSettings) -> None:
        self.settings = settings
        self.answers: dict[str, list[dict[str, Any]]] = {}
        self.down = False

    def set(self, metric: str, values: dict[str, float], label: str | None = None) -> None:
        expr = self.settings.age_query if metric == "age" else self.settings.expression(metric)
        self.answers[expr] = vector(label or self.settings.node_label, values)

    def __call__(self, expr: str) -> list[dict[str, Any]]:
        if self.down:
            raise ConnectionError("connection refused")
        return self.answers.get(expr, [])


def test_fresh_values_stale_and_missing_nodes_and_an_outage() -> None:
    settings = MetricsSettings(max_age_s=10)
    prom = FakeProm(settings)
    now = [1000.0]
    source = NodeMetricsSource(prom, settings, clock=lambda: now[0])
    prom.set("age", {"a": 998.0, "b": 999.0})
    prom.set("load1", {"a": 0.0, "b": 3.5})
    prom.set("cpu_utilisation", {"a": 0.25})  # b's CPU series is absent: unknown, not zero
    prom.set("memory_available_mb", {"a": 2048.0, "b": 1024.0})

    read = source.read(["a", "b", "ghost"])
    assert read["a"].status == "fresh" and read["a"].age_s == pytest.approx(2.0)
    assert (
        read["a"].load1 == 0.0 and read["a"].cpu_utilisation == 0.25 and read["a"].memory_available_mb == 2048
    )
    assert read["b"].status == "fresh" and read["b"].cpu_utilisation is None and read["b"].load1 == 3.5
    assert read["ghost"].status == "missing" and read["ghost"].load1 is None and read["ghost"].age_s is None

    # b's exporter goes away: its series vanish; 11 s later it is stale, with no values at all.
    prom.set("age", {"a": 1010.0})
    prom.set("load1", {"a": 1.0})
    now[0] = 1011.0
    read = source.read(["a", "b"])
    assert read["a"].status == "fresh" and read["a"].load1 == 1.0
    assert read["b"].status == "stale" and read["b"].age_s == pytest.approx(12.0)
    assert read["b"].load1 is None and read["b"].memory_available_mb is None

    prom.down = True
    read = source.read(["a", "b"])
    assert not source.available
    assert {m.status for m in read.values()} == {"unavailable"}
    assert read["a"].load1 is None and read["a"].age_s == pytest.approx(1.0)

    prom.down = False
    assert source.read(["a"])["a"].status == "fresh" and source.available


def test_instance_label_is_mapped_to_node_names_and_nan_is_unknown() -> None:
    settings = MetricsSettings(node_label="instance", node_pattern=r"([^:]+):\d+")
    prom = FakeProm(settings)
    source = NodeMetricsSource(prom, settings, clock=lambda: 100.0)
    prom.set("age", {"worker-1:9100": 99.0, "10.0.0.7": 99.0})  # the second does not match the pattern
    prom.set("load1", {"worker-1:9100": 0.5})
    prom.set("disk_bytes_per_s", {"worker-1:9100": float("nan")})
    read = source.read(["worker-1", "10.0.0.7"])
    assert read["worker-1"].status == "fresh" and read["worker-1"].load1 == 0.5
    assert read["worker-1"].disk_bytes_per_s is None
    assert read["10.0.0.7"].status == "missing"


def test_configured_queries_fill_in_window_and_label() -> None:
    config = OperatorConfig(
        metrics_node_label="instance",
        metrics_rate_window="5s",
        metrics_queries={"load1": "avg by ({label}) (node_load5)"},
    )
    settings = config.metrics_settings()
    assert settings.expression("load1") == "avg by (instance) (node_load5)"
    assert "[5s]" in settings.expression("cpu_utilisation") and "by (instance)" in settings.expression(
        "cpu_utilisation"
    )
    assert settings.age_query == DEFAULT_AGE_QUERY
    with pytest.raises(ValueError, match="unknown node metrics"):
        OperatorConfig(metrics_queries={"load": "node_load1"})
    from_env = OperatorConfig.from_env({"MRSCHED_METRICS_QUERIES": '{"load1": "node_load15"}'})
    assert from_env.metrics_settings().expression("load1") == "node_load15"
