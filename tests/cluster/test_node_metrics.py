"""Node metrics for the scheduling snapshot, read from the real Prometheus: fresh while the nodes' exporter
is scraped, stale after it goes away, missing for a node without series, unavailable when Prometheus is not
there; and the operator reports what it sees on its own /metrics."""

from __future__ import annotations

from pathlib import Path

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.ports import free_port
from mrsched.operator.model.nodemetrics import MetricsSettings, NodeMetricsSource, prometheus_query
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import apply_crds, start_operator


def test_fresh_then_stale_when_the_exporter_goes_away(
    local_cluster: LocalCluster, emulate: EmulateFactory
) -> None:
    handle = emulate({"small": 1, "large": 1})
    small, large = handle.nodes
    settings = MetricsSettings(rate_window="5s", max_age_s=4)
    source = NodeMetricsSource(prometheus_query(local_cluster.prometheus.url), settings)

    def idle_and_fresh() -> dict | None:
        # rate() divides by the whole window: until a new series spans it, an idle node reads as busy.
        read = source.read([small, large, "no-such-node"])
        ok = all(
            read[n].status == "fresh"
            and read[n].cpu_utilisation is not None
            and read[n].cpu_utilisation < 0.05
            for n in (small, large)
        )
        return read if ok else None

    read = wait_for(idle_and_fresh, 40, "fresh metrics of two idle emulated nodes", interval_s=1)
    assert read[small].load1 == 0.0 and read[small].disk_bytes_per_s == 0.0  # idle: real zeros
    assert read[small].memory_available_mb == 4096 and read[large].memory_available_mb > 4096
    assert read[small].age_s is not None and read[small].age_s < 4
    assert read["no-such-node"].status == "missing" and read["no-such-node"].load1 is None

    local_cluster.stop_emulator(handle.emulator_id)  # its scrape target goes: Prometheus ends the series
    stale = wait_for(
        lambda: (
            r
            if all((r := source.read([small, large]))[n].status == "stale" for n in (small, large))
            else None
        ),
        30,
        "both nodes' metrics to go stale",
        interval_s=1,
    )
    assert stale[small].load1 is None and stale[small].memory_available_mb is None  # unknown, never 0
    assert stale[small].age_s is not None and stale[small].age_s > 4


def test_prometheus_down_is_unavailable_not_zero() -> None:
    source = NodeMetricsSource(prometheus_query(f"http://127.0.0.1:{free_port()}", timeout_s=1))
    read = source.read(["a"])
    assert read["a"].status == "unavailable" and read["a"].load1 is None
    assert not source.available


def test_operator_exports_how_many_nodes_it_sees_fresh(
    kube: Kube, namespace: str, local_cluster: LocalCluster, emulate: EmulateFactory, tmp_path: Path
) -> None:
    emulate({"small": 2})
    apply_crds(kube)
    url = local_cluster.prometheus.url
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        extra=("--prometheus-url", url, "--metrics-rate-window", "5s", "--metrics-max-age", "5"),
    )
    try:
        # Other tests' emulators may run beside ours: at least our two nodes are fresh, and Prometheus is up.
        def fresh() -> float | None:
            for line in operator.metrics().splitlines():
                if line.startswith('mrsched_node_metrics_nodes{status="fresh"}'):
                    value = float(line.split()[-1])
                    return value if value >= 2 else None
            return None

        wait_for(fresh, 40, "the operator to see two nodes' metrics fresh", interval_s=1)
        assert "mrsched_prometheus_up 1.0" in operator.metrics()
    finally:
        operator.stop()
