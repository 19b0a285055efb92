"""Runs the scheduling loop in a thread while this instance leads (leader.py): the Lease is renewed by a thread
of its own, and every write of the loop is fenced on it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from mrsched import __version__
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.leader import FencedApi, LeaderLease, LeadershipLost, LeaseKeeper
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.scheduling.loop import SchedulingLoop

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
        lease_s: float = 15.0,
        renew_deadline_s: float = 10.0,
        retry_s: float = 2.0,
    ) -> None:
        self.api = api
        self.config = config
        # The pod's name where the chart gives it (a pod's hostname, but also where its process cannot see that
        # hostname, as on the local control plane), else this host's: who leads, and who wrote each object.
        self.identity = f"{os.environ.get('POD_NAME') or socket.gethostname()}-{os.getpid()}"
        api.field_manager = f"mrsched-{self.identity}"[:128]
        # The apiserver names a write's field manager after its User-Agent when the request names none (status
        # patches, profiles, finalizers, Events): the same name, so that every object says which replica wrote it.
        api.api.user_agent = f"{api.field_manager}/{__version__}"
        self.lease = LeaderLease(
            api,
            lease_namespace,
            lease_name,
            self.identity,
            lease_s=lease_s,
            renew_deadline_s=renew_deadline_s,
            retry_s=retry_s,
        )
        self.keeper = LeaseKeeper(self.lease, on_change=self._leadership_changed)
        self.metrics = metrics
        self.loop = SchedulingLoop(FencedApi(api, self._fence), config, metrics)  # type: ignore[arg-type]
        self.liveness_limit_s = max(60.0, 30 * config.heartbeat_s)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._alive = time.monotonic()

    @property
    def leading(self) -> bool:
        return self.lease.leading()

    def alive_at(self) -> float:
        return max(self._alive, self.loop.healthy_at)

    def start(self) -> None:
        # Every replica keeps its caches warm: a standby that takes over places at once, without a relist.
        self.api.start_caches(self.config.node_selector, self.loop.wake)
        self.keeper.start()
        self._thread = threading.Thread(target=self._run, name="scheduling-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.loop.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.loop.close()
        self.keeper.stop()
        self.api.stop_caches()
        if self._thread is None or not self._thread.is_alive():
            # The loop has stopped placing: hand the Lease over now, not after the lease duration.
            try:
                if self.lease.release():
                    log.info("released the leader Lease %s/%s", self.lease.namespace, self.lease.name)
            except Exception:
                log.exception("cannot release the leader Lease; a standby takes over when it expires")

    def _fence(self) -> None:
        try:
            self.lease.check()
        except LeadershipLost:
            self.metrics.fenced_writes.inc()
            raise

    def _leadership_changed(self, leading: bool) -> None:
        self.loop.wake()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._alive = time.monotonic()
            caches = self.api.caches
            if caches is not None and not caches.synced():
                wait = 0.1  # the first lists are under way: a round now would see an empty cluster
            elif self.lease.leading():
                started = time.monotonic()
                try:
                    self.loop.round()
                except LeadershipLost as lost:
                    log.warning("round abandoned before its writes: %s", lost)
                except Exception:
                    log.exception("scheduling round failed")
                wait = max(0.05, self.config.heartbeat_s - (time.monotonic() - started))
            else:
                wait = self.lease.retry_s
            self.loop.wait(wait)
