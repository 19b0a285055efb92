"""Test helpers over the real API server, on plain JSON dicts (no client model classes in the way)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException


class Kube:
    def __init__(self, kubeconfig: Path, kubectl: Path) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        self.api = client.ApiClient(cfg)
        self.core = client.CoreV1Api(self.api)
        self.kubeconfig = kubeconfig
        self.kubectl_path = kubectl

    def close(self) -> None:
        self.api.close()

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.kubectl_path), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def create_pod(self, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
        return json.loads(self.core.create_namespaced_pod(namespace, pod, _preload_content=False).data)

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        return json.loads(self.core.read_namespaced_pod(name, namespace, _preload_content=False).data)

    def list_all_pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(
            self.core.list_pod_for_all_namespaces(_preload_content=False).data
        )["items"]
        return items

    def node(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.core.read_node(name, _preload_content=False).data)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def bind(self, namespace: str, pod: str, node: str) -> None:
        """Assign a pod to a node through the pods/binding subresource, as a scheduler does."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.core.create_namespaced_pod_binding(pod, namespace, body, _preload_content=False).data  # noqa: B018

    def wait_pod(
        self, namespace: str, name: str, until: Callable[[dict[str, Any]], bool], timeout_s: float = 60.0
    ) -> dict[str, Any]:
        return wait_for(
            lambda: p if until(p := self.pod(namespace, name)) else None, timeout_s, f"pod {namespace}/{name}"
        )


def wait_for(probe: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.2) -> Any:
    """Poll ``probe`` until it returns something truthy; fail the test with ``what`` at the timeout."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


def phase_in(*phases: str) -> Callable[[dict[str, Any]], bool]:
    return lambda pod: (pod.get("status") or {}).get("phase") in phases


def task_pod(
    name: str,
    *,
    node: str | None = None,
    app: str | None = "wordcount",
    input_bytes: int = 10_000_000,
    cpu: str = "500m",
    memory: str = "256Mi",
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    volumes: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """A MapReduce-task-like pod: declares its work in the environment, as the operator's pods do."""
    variables = dict(env or {})
    if app:
        variables.setdefault("MRSCHED_APP", app)
        variables.setdefault("MRSCHED_INPUT_BYTES", str(input_bytes))
    container: dict[str, Any] = {
        "name": "task",
        "image": "mrsched/worker:test",
        "env": [{"name": k, "value": v} for k, v in variables.items()],
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if command:
        container["command"] = command
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "terminationGracePeriodSeconds": 5,
    }
    if volumes:
        container["volumeMounts"] = [{"name": n, "mountPath": p} for n, p in volumes.items()]
        spec["volumes"] = [{"name": n, "emptyDir": {}} for n in volumes]
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
