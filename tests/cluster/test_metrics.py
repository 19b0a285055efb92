"""Node metrics reach a real Prometheus with node_exporter's names, and follow the emulated load."""

from __future__ import annotations

import json

from prometheus_api_client import PrometheusConnect

from mrsched.localcluster.cluster import LocalCluster
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for


def _value(prom: PrometheusConnect, query: str) -> float | None:
    result = prom.custom_query(query)
    return float(result[0]["value"][1]) if result else None


def test_node_load_rises_in_prometheus_while_tasks_run_there(
    kube: Kube, namespace: str, emulate: EmulateFactory, local_cluster: LocalCluster
) -> None:
    busy, idle = emulate({"small": 2}).nodes  # 2 cores each
    prom = PrometheusConnect(url=local_cluster.prometheus.url, disable_ssl=True)

    # The series exists (scraped every second) and starts at zero for both nodes.
    assert wait_for(
        lambda: _value(prom, f'node_load1{{node="{busy}"}}') is not None,
        30,
        f"node_load1 of {busy} in Prometheus",
    )
    assert _value(prom, f'node_load1{{node="{busy}"}}') == 0.0
    assert _value(prom, f'node_memory_MemTotal_bytes{{node="{busy}"}}') == 4096 * 2**20

    # Four CPU-bound tasks (pi: 10 reference CPU-seconds each) on two cores: 4 runnable threads for ~20 s.
    for i in range(4):
        kube.create_pod(namespace, task_pod(f"pi-{i}", node=busy, app="pi", cpu="500m"))
    loaded = wait_for(
        lambda: v if (v := _value(prom, f'node_load1{{node="{busy}"}}')) and v > 0.5 else None,
        40,
        f"node_load1 of {busy} to rise",
    )
    assert loaded > 0.5
    busy_cpu = _value(prom, f'sum(rate(node_cpu_seconds_total{{node="{busy}",mode!="idle"}}[5s]))')
    assert busy_cpu is not None and busy_cpu > 1.5  # both cores busy
    assert _value(prom, f'node_load1{{node="{idle}"}}') == 0.0
    assert _value(prom, f'sum(rate(node_cpu_seconds_total{{node="{idle}",mode!="idle"}}[5s]))') == 0.0

    reported = 0
    for i in range(4):
        pod = kube.wait_pod(namespace, f"pi-{i}", phase_in("Succeeded"), timeout_s=90)
        report = json.loads(pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"])
        reported += report["writtenBytes"]
    # Pi's maps each write about 5 MB (seed 002 Table 2.1): the node's counter adds up the tasks' reports.
    assert 4 * 4e6 < reported < 4 * 6e6
    wait_for(
        lambda: abs((_value(prom, f'node_disk_written_bytes_total{{node="{busy}"}}') or 0) - reported) < 16,
        10,
        f"disk writes of {busy} to add up to the tasks' reports ({reported} bytes)",
    )
