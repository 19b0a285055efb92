"""The chart's Grafana dashboard (issue 25): rendered by the real helm into a ConfigMap Grafana's sidecar loads,
and every query in it accepted by the real Prometheus, the node panels showing an emulated node's series."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.toolchain import Toolchain
from tests.chart.helmtool import Helm, by_kind
from tests.conftest import EmulateFactory
from tests.kubehelpers import wait_for
from tests.unit.emulator.test_dashboard import DASHBOARD, dashboard_queries


@pytest.fixture(scope="module")
def helm(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(toolchain.helm, tmp_path_factory.mktemp("helm"))


def _query(url: str, expr: str) -> dict[str, Any]:
    """An instant query; Prometheus answers a query it cannot parse with 400 and errorType bad_data."""
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}") as resp:
            answer: dict[str, Any] = json.loads(resp.read())
    except urllib.error.HTTPError as err:
        answer = json.loads(err.read())
    return answer


def test_the_dashboard_is_a_configmap_for_grafanas_sidecar_only_when_asked(helm: Helm) -> None:
    assert not [d for d in by_kind(helm.render(), "ConfigMap") if "dashboard" in d["metadata"]["name"]]
    (config_map,) = by_kind(
        helm.render(
            "--set",
            "grafanaDashboard.enabled=true",
            "--set",
            "grafanaDashboard.annotations.grafana_folder=MR",
        ),
        "ConfigMap",
    )
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "MR"}
    assert json.loads(config_map["data"]["mrsched.json"]) == json.loads(DASHBOARD.read_text())


def test_prometheus_accepts_every_query_and_the_node_panels_show_the_nodes(
    local_cluster: LocalCluster, emulate: EmulateFactory
) -> None:
    url = local_cluster.prometheus.url
    broken = _query(url, "sum(rate(mrsched_jobs[1m])")
    assert (broken["status"], broken["errorType"]) == ("error", "bad_data"), (
        "a query that cannot parse is refused"
    )
    for title, expr in dashboard_queries():
        answer = _query(url, expr)
        assert answer["status"] == "success", f"{title}: {expr}: {answer.get('error')}"

    (node,) = emulate({"small": 1}).nodes
    by_panel = dict(dashboard_queries())

    def shown(title: str) -> set[str]:
        return {series["metric"].get("node", "") for series in _query(url, by_panel[title])["data"]["result"]}

    wait_for(
        lambda: node in shown("Load per node") and node in shown("CPU busy per node"), 60, "the node's series"
    )
