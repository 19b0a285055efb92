"""kopf handlers: thin. kopf logs in, starts and stops the runner, and serves the liveness endpoint; the loop does
the work (``mrsched.operator.scheduling.loop``).

The watches that wake the loop are the operator's own caches (informers.py), not kopf's: kopf cannot ask the
API server for a label or field selector, so its pod watch streamed every pod event of the cluster into Python
(with thousands of pods, most of the operator's CPU). Which instance schedules is decided by a Lease in the
loop's runner (kopf's peering pauses handlers, not a thread of ours).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf

from mrsched.operator.process.runner import OperatorRunner

RUNNER: OperatorRunner | None = None


def _runner() -> OperatorRunner:
    if RUNNER is None:
        raise kopf.PermanentError("the operator runner is not configured")
    return RUNNER


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """kopf connects with the same credentials as our client (kubeconfig or in-cluster)."""
    cfg = _runner().api.api.configuration
    keys: dict[str, str] = cfg.api_key or {}
    token = keys.get("authorization") or keys.get("BearerToken")
    scheme, _sep, value = (token or "").partition(" ")
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        scheme=scheme if value else ("Bearer" if token else None),
        token=(value or token) or None,
        default_namespace="default",
    )


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 300  # the API server closes each watch after this; kopf re-lists
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    settings.posting.enabled = False  # our Events are written by the loop, one per real transition
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    _runner().start()


@kopf.on.cleanup()
def stop(**_: Any) -> None:
    _runner().stop()


@kopf.on.probe(id="lastRoundAgeSeconds")
def loop_alive(**_: Any) -> float:
    age = time.monotonic() - _runner().alive_at()
    if age > _runner().liveness_limit_s:
        raise kopf.PermanentError(f"the scheduling loop has not finished a round for {age:.0f} s")
    return round(age, 1)
