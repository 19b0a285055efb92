"""Leader election that fences: at most one operator instance writes, even when one is paused, partitioned or
its clock is wrong. client-go's ``leaderelection`` semantics on a ``coordination.k8s.io`` Lease:

- A standby judges expiry on its own monotonic clock: the Lease's record (holder, renewTime, resourceVersion)
  must stay unchanged for ``lease_s`` as this process observes it (client-go's ``observedTime``). The
  ``renewTime`` another machine wrote is never compared with this machine's clock, so skew cannot make a
  standby take over early.
- The leader renews every ``retry_s`` from a thread of its own, so a long round (a slow Prometheus, 1,600 pods)
  never delays a renewal, and it counts as leader only while its last successful renewal was *sent* less than
  ``renew_deadline_s`` ago (10 s of a 15 s lease). A standby can take over no sooner than ``lease_s`` after it
  saw that renewal, which came after it was sent: a leader that cannot renew stops writing at least
  ``lease_s - renew_deadline_s`` before anyone else may start.
- :class:`FencedApi` checks that before every write of the scheduling loop, so a round begun as leader stops
  writing when leadership lapses mid-round (a SIGSTOP, a hung request).
- A cleanly stopped leader releases the Lease (client-go's ``ReleaseOnCancel``); no holder means free at once.

Why not ``kubernetes.leaderelection``: it judges expiry with ``time.time()``, blocks in ``acquire()`` with no way
to stop it (so no release), and offers no fence for work already under way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from mrsched.operator.kube.kubeapi import ClusterApi

log = logging.getLogger("mrsched.leader")


class LeadershipLost(RuntimeError):
    """A write refused because this instance is no longer certain to lead: the round stops here."""


class LeaderLease:
    def __init__(
        self,
        api: ClusterApi,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_s: float = 15.0,
        renew_deadline_s: float = 10.0,
        retry_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not retry_s < renew_deadline_s < lease_s:
            raise ValueError("leader election needs retry < renew deadline < lease duration")
        self.api = api
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_s, self.renew_deadline_s, self.retry_s = lease_s, renew_deadline_s, retry_s
        self.clock = clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None  # when the last successful renewal was sent
        self._lock = threading.Lock()

    # the fence ------------------------------------------------------------------------------------------

    def leading(self) -> bool:
        """True while the last successful renewal was sent less than the renew deadline ago."""
        with self._lock:
            renewed = self._renewed_at
        return renewed is not None and self.clock() - renewed < self.renew_deadline_s

    def check(self) -> None:
        if not self.leading():
            raise LeadershipLost(f"{self.identity} is no longer certain to hold {self.namespace}/{self.name}")

    # election -------------------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease; True when this instance holds it now."""
        sent = self.clock()
        lease = self.api.read_lease(self.namespace, self.name)
        stamp = _micro_time()
        if lease is None:
            body = {
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": int(self.lease_s),
                    "acquireTime": stamp,
                    "renewTime": stamp,
                    "leaseTransitions": 0,
                },
            }
            return self._won(sent) if self.api.create_lease(self.namespace, body) else self._lost()
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        record = (holder, spec.get("renewTime"), lease["metadata"].get("resourceVersion"))
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        if holder and holder != self.identity and self.clock() - self._observed_at < self.lease_s:
            return self._lost()  # held, and not seen unchanged for a whole lease yet
        spec = {
            **spec,
            "holderIdentity": self.identity,
            "renewTime": stamp,
            "leaseDurationSeconds": int(self.lease_s),
        }
        if holder != self.identity:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = int(spec.get("leaseTransitions", 0)) + 1
        lease["spec"] = spec
        return self._won(sent) if self.api.replace_lease(self.namespace, self.name, lease) else self._lost()

    def release(self) -> bool:
        """Give the Lease up (a clean stop): no holder, so a standby takes over at its next try."""
        with self._lock:
            self._renewed_at = None
        lease = self.api.read_lease(self.namespace, self.name)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        lease["spec"] = {**lease["spec"], "holderIdentity": None}
        return self.api.replace_lease(self.namespace, self.name, lease)

    def _won(self, sent: float) -> bool:
        with self._lock:
            self._renewed_at = sent
        return True

    def _lost(self) -> bool:
        with self._lock:
            self._renewed_at = None
        return False


class LeaseKeeper:
    """Renews (or tries to take) the Lease every ``retry_s`` in a thread of its own, until stopped."""

    def __init__(self, lease: LeaderLease, on_change: Callable[[bool], None] | None = None) -> None:
        self.lease = lease
        self.on_change = on_change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-lease", daemon=True)
        self._was_leading = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.lease.try_acquire_or_renew()
            except Exception:
                log.exception("cannot reach the leader Lease %s/%s", self.lease.namespace, self.lease.name)
            leading = self.lease.leading()
            if leading != self._was_leading:
                self._was_leading = leading
                log.info(
                    "%s the leader Lease %s/%s",
                    "holding" if leading else "lost",
                    self.lease.namespace,
                    self.lease.name,
                )
                if self.on_change is not None:
                    self.on_change(leading)
            self._stop.wait(self.lease.retry_s)


class FencedApi:
    """The cluster API as the scheduling loop sees it: reads (``list_*``, ``read_*``) pass, and every other call,
    a write, first checks that this instance still leads (:meth:`LeaderLease.check`). New writes are fenced by
    default."""

    def __init__(self, api: ClusterApi, fence: Callable[[], None]) -> None:
        self._api = api
        self._fence = fence

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if name.startswith(("list_", "read_")) or not callable(attr):
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._fence()
            return attr(*args, **kwargs)

        return fenced


def _micro_time() -> str:
    # MicroTime; a whole second would come back from the client's models without its fraction (rejected).
    moment = datetime.now(UTC)
    return moment.replace(microsecond=max(1, moment.microsecond)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
