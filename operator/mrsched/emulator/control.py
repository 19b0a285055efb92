"""The emulator's HTTP endpoint on loopback: Prometheus metrics and the chaos hooks.

    GET    /metrics                          node_exporter-style series of every emulated node
    GET    /healthz                          200 once the nodes are registered
    GET    /nodes                            names, classes, heartbeats, running pods, injected faults
    GET    /heartbeat-gaps                   each live node's longest time between two Lease renewals (s)
    POST   /nodes/<node>/heartbeats          {"enabled": false}: stop renewing the Lease (node goes NotReady)
    POST   /nodes/<node>/shutdown            {"graceS": 5}: graceful node shutdown: its pods ended within graceS and
                                              marked disrupted (DisruptionTarget), none admitted, then NotReady
    DELETE /nodes/<node>                     the machine disappears: tasks die, the Node object is deleted
    POST   /nodes/<node>/faults              {"kind": "cpu-hog"|"disk-hog"|"lost-cores", "intensity": 1,
                                              "startInS": 0, "durationS": null}  (model seconds; model mode)
    DELETE /nodes/<node>/faults              end every fault on the node now
    POST   /pods/<namespace>/<name>/evict    evict through the Eviction API, as `kubectl drain` does
    POST   /image-pull-failures              {"image": "busybox:1.36", "forS": 60, "backoffS": null}: pulls of that
                                              exact image fail for forS seconds (0 clears); backoffS sets the
                                              first pull back-off (the kubelet's 10 s by default)

Errors come back as JSON ``{"error": "..."}`` with 400 (bad request), 404 (unknown node or pod) or 409.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from mrsched.core.physics import Fault
from mrsched.emulator.service import Emulator

_FAULT_KINDS = ("cpu-hog", "disk-hog", "lost-cores")


class ControlServer:
    def __init__(self, emulator: Emulator, host: str = "127.0.0.1", port: int = 0) -> None:
        self.emulator = emulator
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(emulator.metrics)
        self.ready = threading.Event()
        handler = _handler_for(self)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- routes -------------------------------------------------------------------------------------------

    def route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        emu = self.emulator
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            (
                "GET",
                r"/healthz",
                lambda: (200 if self.ready.is_set() else 503, {"ready": self.ready.is_set()}),
            ),
            ("GET", r"/nodes", lambda: (200, emu.call(emu.describe))),
            # Not through the kubelet's loop thread: a benchmark asks while that thread has a backlog.
            ("GET", r"/heartbeat-gaps", lambda: (200, emu.heartbeat_gaps())),
            ("POST", r"/nodes/([^/]+)/heartbeats", lambda n: self._heartbeats(n, body)),
            ("POST", r"/nodes/([^/]+)/shutdown", lambda n: self._shut_down(n, body)),
            (
                "DELETE",
                r"/nodes/([^/]+)",
                lambda n: (200, {"lostPods": emu.call(lambda: emu.delete_node(n))}),
            ),
            ("POST", r"/nodes/([^/]+)/faults", lambda n: self._fault(n, body)),
            (
                "DELETE",
                r"/nodes/([^/]+)/faults",
                lambda n: (200, emu.call(lambda: emu.clear_faults(n)) or {}),
            ),
            ("POST", r"/pods/([^/]+)/([^/]+)/evict", lambda ns, n: (200, self._evict(ns, n))),
            ("POST", r"/image-pull-failures", lambda: self._fail_pulls(body)),
        ]
        for want_method, pattern, action in routes:
            match = re.fullmatch(pattern, path)
            if match and method == want_method:
                return action(*match.groups())  # type: ignore[no-any-return]
        return 404, {"error": f"no route {method} {path}"}

    def _evict(self, namespace: str, name: str) -> dict[str, str]:
        self.emulator.kube.evict_pod(namespace, name)
        return {"evicted": f"{namespace}/{name}"}

    def _shut_down(self, node: str, body: dict[str, Any]) -> tuple[int, Any]:
        grace = body.get("graceS", 30)
        if not isinstance(grace, int | float) or isinstance(grace, bool):
            return 400, {"error": 'body must be {"graceS": <seconds>}'}
        ended = self.emulator.call(lambda: self.emulator.shut_down_node(node, float(grace)))
        return 200, {"node": node, "endedPods": ended}

    def _heartbeats(self, node: str, body: dict[str, Any]) -> tuple[int, Any]:
        enabled = body.get("enabled")
        if not isinstance(enabled, bool):
            return 400, {"error": 'body must be {"enabled": true|false}'}
        self.emulator.call(lambda: self.emulator.set_heartbeats(node, enabled))
        return 200, {"node": node, "heartbeats": enabled}

    def _fail_pulls(self, body: dict[str, Any]) -> tuple[int, Any]:
        image = body.get("image")
        if not isinstance(image, str) or not image:
            return 400, {"error": 'body must be {"image": "<container image>", "forS": <seconds>}'}
        try:
            for_s = float(body["forS"])
            backoff_s = None if body.get("backoffS") is None else float(body["backoffS"])
        except (KeyError, TypeError, ValueError):
            return 400, {"error": "forS (and backoffS, if given) must be numbers of seconds"}
        failing = self.emulator.call(lambda: self.emulator.fail_image_pulls(image, for_s, backoff_s))
        return 200, {"image": image, "forS": for_s, "failing": failing}

    def _fault(self, node: str, body: dict[str, Any]) -> tuple[int, Any]:
        kind = body.get("kind")
        if kind not in _FAULT_KINDS:
            return 400, {"error": f"kind must be one of {', '.join(_FAULT_KINDS)}, not {kind!r}"}
        try:
            duration = body.get("durationS")
            start = float(body.get("startInS", 0.0))
            fault = Fault(
                kind,
                start_s=start,
                end_s=None if duration is None else start + float(duration),
                intensity=float(body.get("intensity", 1.0)),
            )
        except (TypeError, ValueError) as err:
            return 400, {"error": f"startInS, durationS and intensity must be numbers: {err}"}
        self.emulator.call(lambda: self.emulator.add_fault(node, fault))
        return 200, {"node": node, "fault": body}


def _handler_for(server: ControlServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: Prometheus scrapes every second
            pass

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _handle(self, method: str) -> None:
            path = self.path.split("?", 1)[0]
            if method == "GET" and path == "/metrics":
                self._send(200, generate_latest(server.registry), CONTENT_TYPE_LATEST)
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                if not isinstance(body, dict):
                    raise ValueError("the request body must be a JSON object")
                status, result = server.route(method, path, body)
            except KeyError as err:
                status, result = 404, {"error": str(err.args[0]) if err.args else str(err)}
            except ValueError as err:
                status, result = 409 if "model mode" in str(err) else 400, {"error": str(err)}
            except ApiException as err:
                status, result = err.status or 500, {"error": f"API server: {err.reason}: {err.body}"}
            self._send(status, json.dumps(result).encode(), "application/json")

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

    return Handler
