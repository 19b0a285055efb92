"""A fault-injecting proxy between the operator and the real API server (issue 20's chaos suite).

The operator is given a kubeconfig that points at the proxy (plain HTTP on loopback, no credentials); the proxy
forwards every request, watches included, to the API server with the test's own credentials, and on the
requests a :class:`Fault` matches it answers in the API server's stead (a 429 with Retry-After, a 5xx), holds
the request before forwarding it (a hung write, delivered late as a slow etcd would), or runs a hook first (to
create a conflicting pod, or kill the operator at a chosen point). :meth:`ApiProxy.outage` is an API server
restart as a client sees it: the listener closes, every open connection and watch is cut, new connections are
refused, and after the outage it listens again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import ClientSession, ClientTimeout, TCPConnector, web
from kubernetes import client, config

from mrsched.localcluster.ports import free_port

#: Not forwarded either way: hop-by-hop headers, and what the proxy's own framing replaces.
_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "content-encoding",
    "upgrade",
}


@dataclass
class Fault:
    """What the proxy does to the next ``times`` requests whose method is ``method`` (or any, ``*``) and whose
    path (with its query) matches ``path``: answer ``status`` itself (with ``Retry-After: retry_after`` if set),
    or hold the request ``delay_s`` and then forward it; ``hook(method, path, body)`` runs first, off the
    proxy's event loop, in either case; ``after(method, path, body, status)`` runs once the API server has
    answered a forwarded request, before its answer goes back."""

    method: str
    path: str
    status: int = 0
    retry_after: int | None = None
    delay_s: float = 0.0
    times: int = 1
    hook: Callable[[str, str, bytes], None] | None = None
    after: Callable[[str, str, bytes, int], None] | None = None
    #: Only requests whose body contains this (a pod's name, a Lease holder), when set.
    body_has: bytes = b""
    hits: list[float] = field(default_factory=list)

    def matches(self, method: str, path: str, body: bytes) -> bool:
        return (
            len(self.hits) < self.times
            and self.method in ("*", method)
            and re.search(self.path, path) is not None
            and self.body_has in body
        )


@dataclass
class Seen:
    method: str
    path: str
    name: str  # the object's name a create sends, else ""
    status: int
    at: float
    body: bytes  # what a write sent (b"" for reads)


class ApiProxy:
    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        self.upstream = cfg.host.rstrip("/")
        self._ssl = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            self._ssl.load_cert_chain(cfg.cert_file, cfg.key_file)
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        self._auth = (
            {"Authorization": token if token.startswith("Bearer") else f"Bearer {token}"} if token else {}
        )
        self.port = free_port()
        self.kubeconfig = workdir / "proxy-kubeconfig"
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "proxy", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
                    "users": [{"name": "proxy", "user": {}}],
                    "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}],
                    "current-context": "proxy",
                }
            )
        )
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="apiproxy")
        self._active: set[asyncio.Task[Any]] = set()
        self._detached: set[asyncio.Future[Any]] = set()
        self._site: web.TCPSite | None = None
        self._thread.start()
        self._call(self._start())

    # the test's side ------------------------------------------------------------------------------------------

    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def outage(self, seconds: float) -> None:
        """The API server restarting: no listener and every connection cut for ``seconds``."""
        self._call(self._stop_listening())
        time.sleep(seconds)
        self._call(self._listen())

    def requests(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method and re.search(path, s.path)]

    def close(self) -> None:
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    # the proxy's side -----------------------------------------------------------------------------------------

    async def _start(self) -> None:
        self._session = ClientSession(
            connector=TCPConnector(ssl=self._ssl, limit=0),
            timeout=ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await self._listen()

    async def _listen(self) -> None:
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await self._site.start()

    async def _stop_listening(self) -> None:
        if self._site is not None:
            await self._site.stop()
            self._site = None
        for task in list(self._active):
            task.cancel()
        server = self._runner.server
        for conn in list(getattr(server, "connections", []) if server else []):
            conn.force_close()
            if conn.transport is not None:
                conn.transport.abort()

    async def _shutdown(self) -> None:
        for late in list(self._detached):
            late.cancel()
        await self._stop_listening()
        await self._runner.cleanup()
        await self._session.close()

    def _fault_for(self, method: str, path: str, body: bytes) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path, body):
                    fault.hits.append(time.time())
                    return fault
        return None

    def _record(self, method: str, path: str, body: bytes, status: int) -> None:
        name = ""
        if method == "POST" and body:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                name = str(json.loads(body)["metadata"]["name"])
        with self._lock:
            self.seen.append(Seen(method, path, name, status, time.time(), b"" if method == "GET" else body))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._active.add(task)
        try:
            return await self._forward(request)
        finally:
            self._active.discard(task)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        path = request.path_qs
        body = await request.read()
        fault = self._fault_for(request.method, path, body)
        if fault is not None and fault.hook is not None:
            await asyncio.to_thread(fault.hook, request.method, path, body)
        if fault is not None and fault.status:
            self._record(request.method, path, body, fault.status)
            return _status_response(fault.status, fault.retry_after)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP | {"authorization"}}
        headers.update(self._auth)
        headers["Accept-Encoding"] = "identity"
        if fault is not None and fault.delay_s:
            # Held, then delivered even if the client gave up or an outage cut its connection meanwhile: the
            # write happens late, as a slow etcd completes one whose client timed out.
            late = asyncio.ensure_future(self._late(fault, request.method, path, headers, body))
            self._detached.add(late)
            late.add_done_callback(self._detached.discard)
            status, answer_headers, answer = await asyncio.shield(late)
            return web.Response(status=status, body=answer, headers=answer_headers)
        async with self._send(request.method, path, headers, body) as upstream:
            self._record(request.method, path, body, upstream.status)
            if fault is not None and fault.after is not None:
                await asyncio.to_thread(fault.after, request.method, path, body, upstream.status)
            response = web.StreamResponse(status=upstream.status)
            response.headers.update(_end_to_end(upstream.headers))
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    def _send(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Any:
        # A request without a Content-Type (the kubernetes client sends none on creates) goes on without one: the
        # API server reads that as JSON, and refuses aiohttp's default, application/octet-stream, with a 415.
        return self._session.request(
            method,
            self.upstream + path,
            headers=headers,
            data=body or None,
            skip_auto_headers=("Content-Type",),
        )

    async def _late(
        self, fault: Fault, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        await asyncio.sleep(fault.delay_s)
        async with self._send(method, path, headers, body) as upstream:
            answer = await upstream.read()
            self._record(method, path, body, upstream.status)
            if fault.after is not None:
                await asyncio.to_thread(fault.after, method, path, body, upstream.status)
            return upstream.status, _end_to_end(upstream.headers), answer


def _end_to_end(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP}


def _status_response(status: int, retry_after: int | None) -> web.Response:
    """The API server's own shape of an error: a Status object, with Retry-After when throttling."""
    reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}.get(status, "Unknown")
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": f"injected by the chaos proxy: {status}",
        "reason": reason,
        "code": status,
    }
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return web.Response(
        status=status, text=json.dumps(body), content_type="application/json", headers=headers
    )


@contextlib.contextmanager
def api_proxy(kubeconfig: Path, workdir: Path) -> Any:
    proxy = ApiProxy(kubeconfig, workdir)
    try:
        yield proxy
    finally:
        proxy.close()
