"""A real Prometheus paused (SIGSTOP: connections accepted by the kernel, never answered), not stopped, while a
metric-driven policy places a job (issue 20): every query costs the operator its timeout, and still the rounds
go on, placements continue on the kept slot counts, the leader keeps its Lease, and once Prometheus resumes the
policy is back on fresh metrics and the job succeeds.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.ports import free_port
from mrsched.localcluster.prometheus import stop_prometheus
from mrsched.localcluster.toolchain import Toolchain
from tests.cluster.test_metric_policies_live import METRICS_FLAGS, _own_prometheus, gauge, pi_job
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import apply, apply_crds, start_operator, task_pods, wait_phase

PAUSE_S = 25.0


def test_a_paused_prometheus_slows_rounds_but_stops_nothing(
    kube: Kube,
    namespace: str,
    tmp_path: Path,
    emulate: EmulateFactory,
    local_cluster: LocalCluster,
    toolchain: Toolchain,
) -> None:
    apply_crds(kube)
    emulate({"small": 2}, time_scale=10.0)
    prometheus = _own_prometheus(toolchain, local_cluster, tmp_path / "prom", free_port())
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        policy="adaptive-slots",
        extra=("--prometheus-url", prometheus.url, *METRICS_FLAGS),
    )
    paused = False
    try:
        apply(kube, namespace, pi_job("patient", 120, "adaptive-slots"))
        wait_for(
            lambda: gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 0,
            60,
            "both nodes' metrics fresh",
        )
        os.kill(prometheus.pid, signal.SIGSTOP)
        paused = True
        paused_at = time.time()
        pods_before = len(task_pods(kube, namespace, "patient"))
        rounds = []
        while time.time() - paused_at < PAUSE_S:
            rounds.append(gauge(operator, "mrsched_last_round_timestamp_seconds"))
            time.sleep(1.0)
        assert gauge(operator, "mrsched_prometheus_up") == 0, "queries that time out: Prometheus is down"
        assert gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 2
        ended = {r for r in rounds if r is not None and r > paused_at}
        assert len(ended) >= 3, f"rounds went on while Prometheus hung: {sorted(ended)}"
        assert len(task_pods(kube, namespace, "patient")) > pods_before, "placements went on"
        assert "lost the leader Lease" not in operator.logs(), (
            "the Lease is renewed whatever a round waits on"
        )
        assert operator.proc.poll() is None

        os.kill(prometheus.pid, signal.SIGCONT)
        paused = False
        wait_for(lambda: gauge(operator, "mrsched_prometheus_up") == 1, 60, "Prometheus answering again")
        wait_for(
            lambda: gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 0,
            60,
            "the policy back on fresh metrics",
        )
        job = wait_phase(kube, namespace, "patient", ("Succeeded", "Failed"), 300)
        assert job["status"]["phase"] == "Succeeded", job["status"]
    finally:
        if paused:
            os.kill(prometheus.pid, signal.SIGCONT)
        operator.stop()
        stop_prometheus(prometheus)
