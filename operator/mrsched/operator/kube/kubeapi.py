"""The operator's Kubernetes API calls, on plain JSON dicts: the one module that talks to the API server.

Responses are read whole (``_preload_content=False``) so that connections return to the pool.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mrsched.operator.kube.informers import ClusterCaches, job_uid
from mrsched.operator.kube.kubeclient import (
    JSON_PATCH,
    MERGE_PATCH,
    REQUEST_TIMEOUT_S,
    _items,
    _json,
)
from mrsched.operator.kube.leaseapi import LeaseCalls
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION, KIND, PLURAL
from mrsched.operator.model.pods import JOB_LABEL, JOB_UID_LABEL


class PodNameTaken(RuntimeError):
    """A create found a pod of the same name that belongs to another job (another uid): not ours, not done."""


class ClusterApi(LeaseCalls):
    def __init__(self, api: client.ApiClient, namespaces: tuple[str, ...] = ()) -> None:
        self.api = api
        self.namespaces = namespaces
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.coordination: Any = client.CoordinationV1Api(api)
        self._event_lock = threading.Lock()
        #: Names this replica in the pods it creates (``metadata.managedFields``): which replica wrote what.
        self.field_manager = "mrsched"
        #: Watch caches (informers.py): once started, the reads below come from memory.
        self.caches: ClusterCaches | None = None

    def start_caches(self, node_selector: str, on_change: Callable[[], None]) -> ClusterCaches:
        """List and watch what a round reads; the list methods answer from the caches from now on."""
        self.caches = ClusterCaches(self.core, self.custom, self.namespaces, node_selector, on_change).start()
        return self.caches

    def stop_caches(self) -> None:
        if self.caches is not None:
            self.caches.stop()

    # reads --------------------------------------------------------------------------------------------------

    def list_nodes(self) -> list[dict[str, Any]]:
        """Every node (with caches: the worker nodes, by the node selector)."""
        if self.caches is not None:
            return self.caches.node_items()
        return _items(self.core.list_node(_request_timeout=REQUEST_TIMEOUT_S, _preload_content=False))

    def list_task_pods(self) -> list[dict[str, Any]]:
        if self.caches is not None:
            return self.caches.task_pod_items()
        kwargs = {
            "label_selector": JOB_LABEL,
            "_request_timeout": REQUEST_TIMEOUT_S,
            "_preload_content": False,
        }
        if not self.namespaces:
            return _items(self.core.list_pod_for_all_namespaces(**kwargs))
        return [
            p for ns in self.namespaces for p in _json(self.core.list_namespaced_pod(ns, **kwargs))["items"]
        ]

    def task_pods_by_job(self) -> dict[str, tuple[Hashable, list[dict[str, Any]]]]:
        """Task pods by their job's uid, each group with a signature that is equal in two calls only when none
        of the group's pods changed in between (with caches: the group's version, without reading the pods)."""
        if self.caches is not None:
            return dict(self.caches.task_pod_groups())
        groups: dict[str, list[dict[str, Any]]] = {}
        for pod in self.list_task_pods():
            groups.setdefault(job_uid(pod), []).append(pod)
        return {
            uid: (tuple((p["metadata"]["name"], p["metadata"].get("resourceVersion")) for p in pods), pods)
            for uid, pods in groups.items()
        }

    def pod_changes(self) -> Hashable | None:
        """Equal in two calls only when no pod that :meth:`list_task_pods` or :meth:`list_other_pods_on`
        returns changed in between; None without caches (nothing known: read them again)."""
        return self.caches.pod_changes() if self.caches is not None else None

    def list_other_pods_on(self) -> list[dict[str, Any]]:
        """Every bound, unfinished pod that :meth:`list_task_pods` does not return: with those, what takes node
        capacity. Leaving our own task pods out keeps a heartbeat to one list of them, not two."""
        if self.caches is not None:
            return self.caches.other_pod_items()
        kwargs: dict[str, Any] = {
            "field_selector": "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
            "_request_timeout": REQUEST_TIMEOUT_S,
            "_preload_content": False,
        }
        if not self.namespaces:
            return _items(self.core.list_pod_for_all_namespaces(label_selector=f"!{JOB_LABEL}", **kwargs))
        return [
            pod
            for pod in _items(self.core.list_pod_for_all_namespaces(**kwargs))
            if JOB_LABEL not in (pod["metadata"].get("labels") or {})
            or pod["metadata"]["namespace"] not in self.namespaces
        ]

    def list_jobs(self) -> list[dict[str, Any]]:
        if self.caches is not None:
            return self.caches.job_items()
        if not self.namespaces:
            body = self.custom.list_cluster_custom_object(
                API_GROUP, API_VERSION, PLURAL, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
            )
            return _items(body)
        return [
            item
            for ns in self.namespaces
            for item in _json(
                self.custom.list_namespaced_custom_object(
                    API_GROUP,
                    API_VERSION,
                    ns,
                    PLURAL,
                    _request_timeout=REQUEST_TIMEOUT_S,
                    _preload_content=False,
                )
            )["items"]
        ]

    def list_profiles(self, plural: str) -> list[dict[str, Any]]:
        """Every NodeProfile, AppProfile or PolicyProfile (cluster-scoped)."""
        return _items(
            self.custom.list_cluster_custom_object(
                API_GROUP, API_VERSION, plural, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
            )
        )

    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return _items(
            self.core.list_namespaced_pod(
                namespace,
                label_selector=label_selector,
                _request_timeout=REQUEST_TIMEOUT_S,
                _preload_content=False,
            )
        )

    # writes -------------------------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        path_params: dict[str, str],
        body: Any,
        *,
        query: list[tuple[str, str]] | None = None,
        content_type: str | None = None,
    ) -> tuple[Any, bytes]:
        """The request a generated client method makes (same URL, headers, credentials and JSON body), sent
        without the client's pydantic validation of its arguments (and, for typed bodies, of the body into a
        model and back): that was a third of the client's CPU per pod created, and with many write threads the
        client, not the API server, set the pace (32 threads on 2 cores and 200 emulated nodes: 160 pods/s with
        it, 330 without). Returns the response, its body read whole (the connection goes back to the pool)."""
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        method, url, headers, _, _ = self.api.param_serialize(
            method,
            path,
            path_params=path_params,
            query_params=query or [],
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        resp = self.api.call_api(
            method, url, header_params=headers, body=body, _request_timeout=REQUEST_TIMEOUT_S
        )
        return resp, resp.read()

    @staticmethod
    def _raise_unless_ok(resp: Any) -> None:
        if not 200 <= resp.status <= 299:
            body = resp.data.decode(errors="replace") if resp.data else None
            raise ApiException.from_response(http_resp=resp, body=body, data=None)

    def create_pod(self, pod: dict[str, Any]) -> bool:
        """Create a task pod; False when it exists already (a retried create after a restart: done)."""
        resp, data = self._send(
            "POST",
            "/api/v1/namespaces/{namespace}/pods",
            {"namespace": pod["metadata"]["namespace"]},
            pod,
            query=[("fieldManager", self.field_manager)],
        )
        if resp.status == 409:
            return self._ours_already(pod)
        self._raise_unless_ok(resp)
        if self.caches is not None and data:
            self.caches.wrote_pod(json.loads(data))  # the next round sees it, whatever the watch's delay
        return True

    def remove_finalizer(self, namespace: str, name: str, index: int, finalizer: str) -> None:
        """Remove ``finalizer``, found at ``index`` of the pod's list: a JSON patch that tests it is still there,
        so that a list changed meanwhile is never cut at the wrong place (422: the next round reads it again)."""
        path = f"/metadata/finalizers/{index}"
        try:
            pod = _json(
                self.core.patch_namespaced_pod(
                    name,
                    namespace,
                    [{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}],
                    _content_type="application/json-patch+json",
                    _request_timeout=REQUEST_TIMEOUT_S,
                    _preload_content=False,
                )
            )
            if self.caches is not None:
                self.caches.wrote_pod(pod)
        except ApiException as err:
            if err.status != 404:
                raise

    def _ours_already(self, pod: dict[str, Any]) -> bool:
        """After a 409: False when the pod that exists is this very attempt (a retried create); PodNameTaken when
        it belongs to another job, which must not count as this attempt's start."""
        meta = pod["metadata"]
        # A list by name, not a get: the operator's RBAC lists pods and never reads one by name.
        found = _json(
            self.core.list_namespaced_pod(
                meta["namespace"],
                field_selector=f"metadata.name={meta['name']}",
                _request_timeout=REQUEST_TIMEOUT_S,
                _preload_content=False,
            )
        )["items"]
        if not found:  # gone since: the next round creates the attempt again
            return False
        theirs = (found[0]["metadata"].get("labels") or {}).get(JOB_UID_LABEL)
        if theirs != meta["labels"][JOB_UID_LABEL]:
            raise PodNameTaken(
                f"pod {meta['namespace']}/{meta['name']} exists and belongs to job uid {theirs}"
            )
        return False

    def delete_pod(self, namespace: str, name: str, *, grace_s: int | None = None) -> None:
        try:
            pod = _json(
                self.core.delete_namespaced_pod(
                    name,
                    namespace,
                    grace_period_seconds=grace_s,
                    _request_timeout=REQUEST_TIMEOUT_S,
                    _preload_content=False,
                )
            )
            if self.caches is not None and pod.get("kind") == "Pod":
                self.caches.wrote_pod(pod)  # with its deletionTimestamp: no longer live
        except ApiException as err:
            if err.status != 404:
                raise

    def patch_job_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """A merge patch of the job's status subresource (patch_namespaced_custom_object_status's request, sent
        as :meth:`_send` says: one per job read, every round, is the loop's most frequent write after pods)."""
        resp, data = self._send(
            "PATCH",
            "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status",
            {
                "group": API_GROUP,
                "version": API_VERSION,
                "namespace": namespace,
                "plural": PLURAL,
                "name": name,
            },
            {"status": status},
            content_type=MERGE_PATCH,
        )
        if resp.status == 404:  # deleted meanwhile
            return
        self._raise_unless_ok(resp)
        if self.caches is not None and data:
            # The attempt record the next round builds on (taskrecord): never older than this write.
            self.caches.wrote_job(json.loads(data))

    def delete_job(self, namespace: str, name: str) -> None:
        try:
            _json(
                self.custom.delete_namespaced_custom_object(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    PLURAL,
                    name,
                    body={"propagationPolicy": "Background"},
                    _request_timeout=REQUEST_TIMEOUT_S,
                    _preload_content=False,
                )
            )
        except ApiException as err:
            if err.status != 404:
                raise

    def event(self, job: dict[str, Any], kind: str, reason: str, message: str) -> None:
        """A core/v1 Event on the job, so that ``kubectl describe mrj`` shows it."""
        meta = job["metadata"]
        involved = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": KIND,
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        }
        self._event(meta["namespace"], involved, kind, reason, message)

    def node_event(self, node: str, kind: str, reason: str, message: str) -> None:
        """A core/v1 Event about a Node, so that ``kubectl describe node`` shows it. The API server keeps
        Events of cluster-scoped objects in ``default`` (as the kubelet's own), and refuses them elsewhere."""
        self._event("default", {"apiVersion": "v1", "kind": "Node", "name": node}, kind, reason, message)

    def set_node_taints(self, node: str, taints: list[dict[str, Any]], resource_version: str) -> None:
        """Replace the Node's ``spec.taints`` with ``taints``, only if the Node is still at
        ``resource_version`` (a JSON patch's ``test``): a taint someone else set or removed since the list is
        never overwritten; the caller tries again from the next list. Needs ``patch`` on nodes
        (``--taint-degraded-nodes``)."""
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
            {"op": "add", "path": "/spec/taints", "value": taints},
        ]
        _json(
            self.core.patch_node(
                node,
                patch,
                _request_timeout=REQUEST_TIMEOUT_S,
                _preload_content=False,
                _content_type=JSON_PATCH,
            )
        )

    def _event(self, namespace: str, involved: dict[str, str], kind: str, reason: str, message: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": involved,
            "type": kind,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": "mrsched"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with contextlib.suppress(ApiException):  # events are best effort; never fail a round over one
            _json(
                self.core.create_namespaced_event(
                    namespace, body, _request_timeout=REQUEST_TIMEOUT_S, _preload_content=False
                )
            )

    def write_profile(
        self, plural: str, kind: str, name: str, spec: dict[str, Any], status: dict[str, Any]
    ) -> str:
        """Merge ``status`` into the cluster-scoped profile ``name``, creating it first if it does not exist.
        Returns its uid (probe pods are owned by their node's profile)."""
        for attempt in range(2):
            try:
                body = _json(
                    self.custom.patch_cluster_custom_object_status(
                        API_GROUP,
                        API_VERSION,
                        plural,
                        name,
                        {"status": status},
                        _request_timeout=REQUEST_TIMEOUT_S,
                        _preload_content=False,
                        _content_type=MERGE_PATCH,
                    )
                )
                return str(body["metadata"]["uid"])
            except ApiException as err:
                if err.status != 404 or attempt:
                    raise
            created = {
                "apiVersion": f"{API_GROUP}/{API_VERSION}",
                "kind": kind,
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "mrsched"}},
                "spec": spec,
            }
            try:
                _json(
                    self.custom.create_cluster_custom_object(
                        API_GROUP,
                        API_VERSION,
                        plural,
                        created,
                        _request_timeout=REQUEST_TIMEOUT_S,
                        _preload_content=False,
                    )
                )
            except ApiException as create_err:
                if create_err.status != 409:  # created meanwhile: patch it
                    raise
        raise AssertionError("unreachable")
