"""What a kubelet gives a pod's processes to reach the API (the chart's operator runs in the local
cluster as in a real one): the projected ``kube-api-access`` volume that ServiceAccount admission adds to a pod,
filled with a token bound to the pod (TokenRequest), the cluster's CA (the ``kube-root-ca.crt`` ConfigMap) and
the namespace, and KUBERNETES_SERVICE_HOST/PORT naming the apiserver."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

#: A projected token's lifetime when its source names none (the API's default for the field).
DEFAULT_EXPIRATION_S = 3600


class CredentialsApi(Protocol):
    def request_token(
        self, namespace: str, service_account: str, pod: dict[str, Any], expiration_s: int
    ) -> str: ...

    def config_map_value(self, namespace: str, name: str, key: str) -> str: ...

    @property
    def api_address(self) -> tuple[str, str]: ...


def token_volumes(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod's projected volumes that hold a ServiceAccount token, by name."""
    found = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        sources = (volume.get("projected") or {}).get("sources") or []
        if any("serviceAccountToken" in source for source in sources):
            found[volume["name"]] = volume
    return found


class PodCredentials:
    """Fills a pod's token volumes as a kubelet does, and gives its processes the apiserver's address."""

    def __init__(self, api: CredentialsApi) -> None:
        self.api = api

    def fill(self, pod: dict[str, Any], volume: dict[str, Any], directory: Path) -> None:
        """Write each source of the projected ``volume`` into ``directory``: the token, ConfigMap keys and the
        downward API's metadata fields (what kube-api-access holds: token, ca.crt, namespace)."""
        meta = pod["metadata"]
        namespace = meta["namespace"]
        directory.mkdir(parents=True, exist_ok=True)
        for source in volume["projected"]["sources"]:
            if token := source.get("serviceAccountToken"):
                account = pod["spec"].get("serviceAccountName") or "default"
                expiration = int(token.get("expirationSeconds") or DEFAULT_EXPIRATION_S)
                _write(directory / token["path"], self.api.request_token(namespace, account, pod, expiration))
            elif config_map := source.get("configMap"):
                for item in config_map.get("items") or []:
                    value = self.api.config_map_value(namespace, config_map["name"], item["key"])
                    _write(directory / item["path"], value)
            elif downward := source.get("downwardAPI"):
                for item in downward.get("items") or []:
                    field = (item.get("fieldRef") or {}).get("fieldPath", "")
                    value = {"metadata.namespace": namespace, "metadata.name": meta["name"]}.get(field, "")
                    _write(directory / item["path"], value)

    def environment(self) -> dict[str, str]:
        host, port = self.api.api_address
        return {
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": port,
            "KUBERNETES_SERVICE_PORT_HTTPS": port,
        }


def _write(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(value)
