"""The leader Lease's API calls (leader.py decides what they mean), as part of :class:`kubeapi.ClusterApi`."""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from mrsched.operator.kube.kubeclient import REQUEST_TIMEOUT_S, _json


class LeaseCalls:
    coordination: Any

    def read_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Lease, or None when there is none (leader.py decides what it means)."""
        try:
            return _json(
                self.coordination.read_namespaced_lease(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
                )
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def create_lease(self, namespace: str, body: dict[str, Any]) -> bool:
        """Create the Lease; False (409) when another instance created it first."""
        try:
            _json(
                self.coordination.create_namespaced_lease(
                    namespace, body, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
                )
            )
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    def replace_lease(self, namespace: str, name: str, lease: dict[str, Any]) -> bool:
        """Write ``lease`` back with the resourceVersion it was read at; False (409) when another instance wrote
        it meanwhile: a concurrent taker wins, and a release never clears a holder that took over."""
        try:
            _json(
                self.coordination.replace_namespaced_lease(
                    name, namespace, lease, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
                )
            )
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True
