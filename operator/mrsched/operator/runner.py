"""Runs the scheduling loop in a thread while this instance holds the leader Lease."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from mrsched.operator.config import OperatorConfig
from mrsched.operator.kubeapi import ClusterApi
from mrsched.operator.loop import SchedulingLoop
from mrsched.operator.metrics import OperatorMetrics

log = logging.getLogger("mrsched.runner")


class OperatorRunner:
    def __init__(
        self,
        api: ClusterApi,
        config: OperatorConfig,
        metrics: OperatorMetrics,
        *,
        lease_namespace: str,
        lease_name: str = "mrsched-leader",
        lease_s: int = 15,
    ) -> None:
        self.api = api
        self.config = config
        self.loop = SchedulingLoop(api, config, metrics)
        self.lease_namespace = lease_namespace
        self.lease_name = lease_name
        self.lease_s = lease_s
        self.identity = f"{socket.gethostname()}-{os.getpid()}"
        self.liveness_limit_s = max(60.0, 30 * config.heartbeat_s)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._alive = time.monotonic()
        self.leading = False

    def alive_at(self) -> float:
        return max(self._alive, self.loop.healthy_at)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="scheduling-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.loop.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.leading and (self._thread is None or not self._thread.is_alive()):
            # The loop has stopped placing: hand the Lease over now, not after lease_s.
            try:
                if self.api.release_lead(self.lease_namespace, self.lease_name, self.identity):
                    log.info("released the leader Lease %s/%s", self.lease_namespace, self.lease_name)
            except Exception:
                log.exception("cannot release the leader Lease; a standby takes over when it expires")
            self.leading = False

    def _run(self) -> None:
        while not self._stop.is_set():
            self._alive = time.monotonic()
            try:
                leading = self.api.try_lead(
                    self.lease_namespace, self.lease_name, self.identity, self.lease_s
                )
            except Exception:
                log.exception("cannot reach the leader Lease")
                leading = False
            if leading != self.leading:
                log.info(
                    "%s the leader Lease %s/%s",
                    "holding" if leading else "lost",
                    self.lease_namespace,
                    self.lease_name,
                )
                self.leading = leading
            if leading:
                started = time.monotonic()
                try:
                    self.loop.round()
                except Exception:
                    log.exception("scheduling round failed")
                wait = max(0.05, self.config.heartbeat_s - (time.monotonic() - started))
            else:
                wait = self.lease_s / 3
            self.loop.wait(wait)
