"""The chart's Grafana dashboard (issue 25) reads only what is exported: every series its queries name is one
the operator's registry or node_exporter (here: the emulator's node_exporter-style collector) exports. That each
query parses is checked by the real Prometheus (tests/cluster/test_dashboard.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from mrsched.emulator.node_exporter import NodeInfo, NodeMetricsCollector
from mrsched.emulator.runners import NodeUsage
from mrsched.operator.model.operator_metrics import OperatorMetrics

DASHBOARD = Path(__file__).resolve().parents[3] / "charts" / "mrsched" / "dashboards" / "mrsched.json"
#: Grafana's own variables in a query, and what they stand for when the query is sent (a rate window).
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h"}
#: PromQL words that are not series: aggregation modifiers, binary-operator keywords, literals.
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}
#: A series name's suffixes by metric type (the text exposition format).
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
    "summary": ("_sum", "_count", ""),
}


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, query) of every target, Grafana's variables replaced."""
    found = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            found.append((panel["title"], expr))
    return found


def series_named(expr: str) -> set[str]:
    """The series names a query selects: identifiers that are neither functions (followed by "("), keywords,
    label names (inside {...} or a by/without list) nor durations or numbers."""
    bare = re.sub(r'"[^"]*"', '""', expr)  # label values
    bare = re.sub(r"\{[^}]*\}", "", bare)  # label matchers
    bare = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", bare)  # grouping labels
    bare = re.sub(r"\[[^\]]*\]", "", bare)  # range durations
    names = set()
    for match in re.finditer(r"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*", bare):
        following = bare[match.end() :].lstrip()
        if match.group() not in KEYWORDS and not following.startswith("("):
            names.add(match.group())
    return names


def exported_series() -> set[str]:
    """Every series name the operator's registry and the node_exporter-style collector can expose."""
    families: list[Any] = list(OperatorMetrics(CollectorRegistry()).registry.collect())
    node = NodeInfo("n1", cores=2, memory_bytes=4e9)
    families += list(NodeMetricsCollector(lambda: [node], lambda name: NodeUsage()).collect())
    return {f.name + suffix for f in families for suffix in SUFFIXES[f.type]}


def test_every_panel_has_a_query_and_says_what_it_shows() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert {p["title"] for p in panels} >= {
        "Jobs by phase",
        "Tasks started",
        "Placement latency",
        "Load per node",
        "Health verdicts",
        "Metrics freshness",
    }
    for panel in panels:
        assert panel["targets"] and panel["description"], panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", "the data source is the user's pick"


def test_every_series_a_query_names_is_exported() -> None:
    exported = exported_series()
    for title, expr in dashboard_queries():
        named = series_named(expr)
        assert named, (title, expr)
        assert named <= exported, f"{title}: {expr} names {sorted(named - exported)}, which nothing exports"


def test_series_names_are_told_from_functions_labels_and_keywords() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, policy) (rate(a_bucket{mode="x"}[1m]))) - on (node) b offset 5m'
    )
    assert series_named(expr) == {"a_bucket", "b"}
    assert series_named("time() - max(c)") == {"c"}
