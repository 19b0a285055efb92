"""The operator's API client against a throttled, a failing and a hung apiserver (issue 20, defect 6): a plain HTTP
server on loopback speaks for the apiserver, and the real kubernetes client (our ``api_client``) talks to it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from mrsched.operator.kube import kubeapi
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.kubeclient import api_client


class FakeApiserver(ThreadingHTTPServer):
    """Answers each request with the next scripted reply for its method and path: (status, headers, body, delay)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: dict[tuple[str, str], list[tuple[int, dict[str, str], Any, float]]] = {}
        self.seen: list[tuple[str, str, float]] = []
        self.sent: list[tuple[str, str, str, bytes]] = []  # method, path, Content-Type, body


class _Handler(BaseHTTPRequestHandler):
    server: FakeApiserver

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self) -> None:
        path = self.path.split("?", 1)[0]
        self.server.seen.append((self.command, path, time.monotonic()))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        self.server.sent.append((self.command, path, self.headers.get("Content-Type") or "", body))
        replies = self.server.script.get((self.command, path)) or [
            (404, {}, {"kind": "Status", "code": 404}, 0)
        ]
        status, headers, body, delay = replies.pop(0) if len(replies) > 1 else replies[0]
        time.sleep(delay)
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout): nothing to answer

    do_GET = do_POST = do_PATCH = do_DELETE = _reply


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[FakeApiserver, ClusterApi]]:
    fake = FakeApiserver()
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{fake.server_address[1]}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    yield fake, ClusterApi(api_client(kubeconfig))
    fake.shutdown()


THROTTLED = {"kind": "Status", "code": 429, "reason": "TooManyRequests"}


def test_a_429_is_retried_after_the_time_it_asks_for(server: tuple[FakeApiserver, ClusterApi]) -> None:
    fake, api = server
    nodes = {"kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]}
    fake.script[("GET", "/api/v1/nodes")] = [(429, {"Retry-After": "1"}, THROTTLED, 0), (200, {}, nodes, 0)]
    assert [n["metadata"]["name"] for n in api.list_nodes()] == ["n1"]
    (_, _, first), (_, _, second) = fake.seen
    assert second - first >= 0.95, "Retry-After: 1 honoured"


def test_a_throttled_create_is_sent_again_and_counts_once(server: tuple[FakeApiserver, ClusterApi]) -> None:
    fake, api = server
    path = "/api/v1/namespaces/ns/pods"
    fake.script[("POST", path)] = [(429, {"Retry-After": "1"}, THROTTLED, 0), (201, {}, {"kind": "Pod"}, 0)]
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"mrsched.dev/job-uid": "u"}}}
    assert api.create_pod(pod) is True
    assert [m for m, p, _ in fake.seen] == ["POST", "POST"]


def test_a_hung_write_times_out_instead_of_holding_the_round(
    server: tuple[FakeApiserver, ClusterApi], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, api = server
    monkeypatch.setattr(kubeapi, "REQUEST_TIMEOUT_S", 1)
    path = "/apis/mrsched.dev/v1alpha1/namespaces/ns/mapreducejobs/job/status"
    fake.script[("PATCH", path)] = [(200, {}, {}, 4.0)]
    started = time.monotonic()
    with pytest.raises(Exception, match=r"(?i)timed? ?out"):
        api.patch_job_status("ns", "job", {"phase": "Running"})
    assert time.monotonic() - started < 3.0
    assert len([s for s in fake.seen if s[0] == "PATCH"]) == 1, "a write whose answer was lost is not re-sent"


def test_a_status_patch_is_a_merge_patch_of_the_status_and_fails_loudly_except_for_a_job_gone(
    server: tuple[FakeApiserver, ClusterApi],
) -> None:
    """patch_job_status sends its request without the generated client method (ClusterApi._send): the same
    request, and the same outcomes."""
    fake, api = server
    path = "/apis/mrsched.dev/v1alpha1/namespaces/ns/mapreducejobs/job/status"
    job = {"kind": "MapReduceJob", "metadata": {"name": "job"}, "status": {"phase": "Running"}}
    fake.script[("PATCH", path)] = [
        (200, {}, job, 0),
        (404, {}, {"kind": "Status", "code": 404}, 0),
        (500, {}, {"kind": "Status", "code": 500}, 0),
    ]
    api.patch_job_status("ns", "job", {"phase": "Running"})
    method, sent_path, content_type, body = fake.sent[-1]
    assert (method, sent_path, content_type) == ("PATCH", path, "application/merge-patch+json")
    assert json.loads(body) == {"status": {"phase": "Running"}}
    api.patch_job_status("ns", "job", {"phase": "Running"})  # 404: deleted meanwhile, nothing to do
    with pytest.raises(ApiException) as failed:
        api.patch_job_status("ns", "job", {"phase": "Running"})
    assert failed.value.status == 500
