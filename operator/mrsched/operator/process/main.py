"""``mrsched run``: the operator process (kopf watches, the scheduling loop, /metrics and /healthz)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path

import kopf
from prometheus_client import start_http_server

from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.kubeclient import api_client
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.gcsettings import tune_gc
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.process import handlers
from mrsched.operator.process.runner import OperatorRunner


def run_operator(
    config: OperatorConfig,
    *,
    kubeconfig: Path | None = None,
    bind_address: str = "127.0.0.1",
    liveness_port: int = 8080,
    lease_namespace: str = "default",
    verbose: bool = False,
    stop: threading.Event | None = None,
) -> None:
    """Run until SIGTERM/SIGINT (or ``stop`` is set)."""
    if kubeconfig is not None:
        os.environ["KUBECONFIG"] = str(kubeconfig)  # kopf's own login reads it
    kopf.configure(verbose=verbose, log_format=kopf.LogFormat.JSON, log_prefix=False)
    logging.getLogger("mrsched").setLevel(logging.DEBUG if verbose else logging.INFO)
    tune_gc()
    api = ClusterApi(api_client(kubeconfig), config.namespaces)
    metrics = OperatorMetrics()
    start_http_server(config.metrics_port, addr=bind_address, registry=metrics.registry)
    handlers.RUNNER = OperatorRunner(api, config, metrics, lease_namespace=lease_namespace)
    stop_flag = None
    if stop is not None:
        stop_flag = asyncio.Event()
        _bridge(stop, stop_flag)
    kopf.run(
        standalone=True,
        clusterwide=not config.namespaces,
        namespaces=list(config.namespaces),
        liveness_endpoint=f"http://{bind_address}:{liveness_port}/healthz",
        stop_flag=stop_flag,
    )


def _bridge(stop: threading.Event, flag: asyncio.Event) -> None:
    """Set kopf's asyncio stop flag from another thread's threading.Event (tests run the operator in-process)."""

    def watch() -> None:
        stop.wait()
        loop = getattr(flag, "_loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(flag.set)

    threading.Thread(target=watch, daemon=True).start()
