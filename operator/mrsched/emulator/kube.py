"""The emulator's few Kubernetes API calls, on plain JSON dicts.

Responses are read whole (``_preload_content=False`` plus ``resp.data``) so that every connection goes back to
the pool: an unread body forces a new TLS handshake per call (seen here: 58 instead of 800 calls/s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from mrsched.emulator.nodes import LEASE_NAMESPACE

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


def _json(resp: Any) -> dict[str, Any]:
    """The response body, read whole (which returns the connection to the pool)."""
    data = resp.data
    return json.loads(data) if data else {}


class KubeClient:
    def __init__(self, kubeconfig: Path, *, pool_size: int = 8) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = pool_size
        self.api = client.ApiClient(cfg)
        # Typed as Any on purpose: this edge passes and receives plain JSON dicts, which the client accepts
        # and returns (with _preload_content=False), not its model classes.
        self.core: Any = client.CoreV1Api(self.api)
        self.coordination: Any = client.CoordinationV1Api(self.api)

    def close(self) -> None:
        self.api.close()

    # nodes
    def create_node(self, body: dict[str, Any]) -> dict[str, Any]:
        return _json(self.core.create_node(body, _preload_content=False))

    def patch_node(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return _json(self.core.patch_node(name, body, _content_type=STRATEGIC_PATCH, _preload_content=False))

    def patch_node_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        return _json(
            self.core.patch_node_status(
                name, {"status": status}, _content_type=STRATEGIC_PATCH, _preload_content=False
            )
        )

    def delete_node(self, name: str) -> None:
        _json(self.core.delete_node(name, _preload_content=False))

    # leases
    def create_lease(self, body: dict[str, Any]) -> None:
        _json(self.coordination.create_namespaced_lease(LEASE_NAMESPACE, body, _preload_content=False))

    def renew_lease(self, name: str, renew_time: str) -> None:
        _json(
            self.coordination.patch_namespaced_lease(
                name,
                LEASE_NAMESPACE,
                {"spec": {"renewTime": renew_time}},
                _content_type=MERGE_PATCH,
                _preload_content=False,
            )
        )

    # pods
    def list_pods_on_nodes(self) -> tuple[list[dict[str, Any]], str]:
        body = _json(
            self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=", _preload_content=False)
        )
        return body.get("items") or [], body["metadata"]["resourceVersion"]

    def watch_pods_on_nodes(self, resource_version: str, timeout_s: int) -> Iterator[dict[str, Any]]:
        """Raw watch events ({"type", "object"}) of pods bound to some node, from ``resource_version``."""
        stream = watch.Watch().stream(
            self.core.list_pod_for_all_namespaces,
            field_selector="spec.nodeName!=",
            resource_version=resource_version,
            timeout_seconds=timeout_s,
            allow_watch_bookmarks=True,
            deserialize=False,
        )
        for event in stream:
            yield {"type": event["type"], "object": event.get("raw_object") or event["object"]}

    def patch_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        # A merge patch replaces the conditions and containerStatuses lists whole: statuses here are complete.
        _json(
            self.core.patch_namespaced_pod_status(
                name, namespace, {"status": status}, _content_type=MERGE_PATCH, _preload_content=False
            )
        )

    def delete_pod_now(self, namespace: str, name: str, uid: str) -> None:
        """Finish a pod's deletion as the kubelet does once its containers stopped: grace 0, this UID only."""
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            _json(self.core.delete_namespaced_pod(name, namespace, body=body, _preload_content=False))
        except ApiException as err:
            if err.status not in (404, 409):  # gone already, or a new pod with the same name
                raise

    # what a kubelet gives a pod to reach the API (the projected kube-api-access volume)
    def request_token(
        self, namespace: str, service_account: str, pod: dict[str, Any], expiration_s: int
    ) -> str:
        """A ServiceAccount token bound to ``pod`` (TokenRequest, as a kubelet asks for a projected token)."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": expiration_s,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        }
        created = _json(
            self.core.create_namespaced_service_account_token(
                service_account, namespace, body, _preload_content=False
            )
        )
        return str(created["status"]["token"])

    def config_map_value(self, namespace: str, name: str, key: str) -> str:
        data = _json(self.core.read_namespaced_config_map(name, namespace, _preload_content=False)).get(
            "data"
        )
        return str((data or {})[key])

    @property
    def api_address(self) -> tuple[str, str]:
        """The apiserver's host and port, as KUBERNETES_SERVICE_HOST and _PORT give them to a pod."""
        host = str(self.api.configuration.host).removeprefix("https://").removeprefix("http://")
        address, _, port = host.rpartition(":")
        return address.strip("[]"), port

    def evict_pod(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        _json(self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False))
