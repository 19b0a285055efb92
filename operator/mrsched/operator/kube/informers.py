"""The operator's watch caches (watchcache.WatchedList), one per thing a round reads, each as narrow as the API
server can make it:

- worker nodes: the node selector's label selector;
- task pods: the ``mrsched.dev/job`` label, in each watched namespace (or cluster-wide);
- MapReduceJobs: in each watched namespace (or cluster-wide);
- other pods that take worker capacity: bound (``spec.nodeName!=``) and unfinished, without our label; when
  namespaced, also labelled task pods of other namespaces (another release's), by a second field-selected watch.

A round then costs no request at all when nothing changed. Every change wakes the loop (``on_change``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from mrsched.operator.kube.watchcache import WatchedList, wait_all_synced
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION, PLURAL
from mrsched.operator.model.pods import JOB_LABEL, JOB_UID_LABEL

#: Bound pods that still hold their requests: what the kubelet counts against allocatable.
BOUND_UNFINISHED = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


def job_uid(pod: dict[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(JOB_UID_LABEL, ""))


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod as a round reads it (pods.read_attempt, snapshot.pod_request, tracking, canary): its metadata and
    status whole; of its spec, the node, the scheduler and each container's requests. The rest (command, env,
    volumes, security context, the explanation annotation) is most of a task pod's JSON and is never read from
    the cache: 10,000 pods fit the chart's memory limit."""
    spec = pod.get("spec") or {}
    pod["spec"] = {
        "nodeName": spec.get("nodeName"),
        "schedulerName": spec.get("schedulerName"),
        "containers": [
            {
                "name": c.get("name"),
                "resources": {"requests": (c.get("resources") or {}).get("requests") or {}},
            }
            for c in spec.get("containers") or []
        ],
    }
    meta = pod.get("metadata") or {}
    meta.pop("annotations", None)
    meta.pop("ownerReferences", None)
    return pod


class ClusterCaches:
    def __init__(
        self,
        core: Any,
        custom: Any,
        namespaces: tuple[str, ...],
        node_selector: str,
        on_change: Callable[[], None],
    ) -> None:
        watch = partial(WatchedList, on_change=on_change)
        pods = partial(WatchedList, on_change=on_change, transform=slim_pod)
        # Everyone else's bound pods: what already takes each worker's capacity.
        not_ours = pods(
            "other-pods",
            partial(
                core.list_pod_for_all_namespaces,
                label_selector=f"!{JOB_LABEL}",
                field_selector=BOUND_UNFINISHED,
            ),
        )
        self.nodes = watch("nodes", partial(core.list_node, label_selector=node_selector))
        if namespaces:
            self.task_pods = [
                pods(
                    f"task-pods/{ns}",
                    partial(core.list_namespaced_pod, ns, label_selector=JOB_LABEL),
                    group_by=job_uid,
                )
                for ns in namespaces
            ]
            self.jobs = [
                watch(
                    f"jobs/{ns}",
                    partial(custom.list_namespaced_custom_object, API_GROUP, API_VERSION, ns, PLURAL),
                )
                for ns in namespaces
            ]
            elsewhere = ",".join(f"metadata.namespace!={ns}" for ns in namespaces)
            others = [
                pods(
                    "other-task-pods",
                    partial(
                        core.list_pod_for_all_namespaces,
                        label_selector=JOB_LABEL,
                        field_selector=f"{BOUND_UNFINISHED},{elsewhere}",
                    ),
                ),
            ]
        else:
            self.task_pods = [
                pods(
                    "task-pods",
                    partial(core.list_pod_for_all_namespaces, label_selector=JOB_LABEL),
                    group_by=job_uid,
                )
            ]
            self.jobs = [
                watch("jobs", partial(custom.list_cluster_custom_object, API_GROUP, API_VERSION, PLURAL))
            ]
            others = []
        self.others = [not_ours, *others]
        self._by_namespace = {ns: i for i, ns in enumerate(namespaces)}

    @property
    def all(self) -> list[WatchedList]:
        return [self.nodes, *self.task_pods, *self.jobs, *self.others]

    def start(self) -> ClusterCaches:
        for cache in self.all:
            cache.start()
        return self

    def stop(self) -> None:
        for cache in self.all:
            cache.stop()

    def synced(self) -> bool:
        return all(cache.synced for cache in self.all)

    def wait_synced(self, timeout_s: float) -> bool:
        return wait_all_synced(self.all, timeout_s)

    # reads --------------------------------------------------------------------------------------------------

    def node_items(self) -> list[dict[str, Any]]:
        return self.nodes.items()

    def task_pod_items(self) -> list[dict[str, Any]]:
        return [pod for cache in self.task_pods for pod in cache.items()]

    def task_pod_groups(self) -> dict[str, tuple[tuple[int, int], list[dict[str, Any]]]]:
        """Task pods by their job's uid, each group with a version that changes whenever one of its pods does."""
        out: dict[str, tuple[tuple[int, int], list[dict[str, Any]]]] = {}
        for i, cache in enumerate(self.task_pods):
            for uid, (version, pods) in cache.groups().items():
                out[uid] = ((i, version), pods)  # a job's pods are all in its own namespace: one cache
        return out

    def pod_changes(self) -> tuple[int, ...]:
        """Changes seen so far by every pod cache: equal in two calls, no pod changed in between."""
        return tuple(cache.changes for cache in (*self.task_pods, *self.others))

    def job_items(self) -> list[dict[str, Any]]:
        return [job for cache in self.jobs for job in cache.items()]

    def other_pod_items(self) -> list[dict[str, Any]]:
        return [pod for cache in self.others for pod in cache.items()]

    # writes through -----------------------------------------------------------------------------------------

    def _of(self, caches: list[WatchedList], obj: dict[str, Any]) -> WatchedList | None:
        if len(caches) == 1:
            return caches[0]
        index = self._by_namespace.get((obj.get("metadata") or {}).get("namespace", ""))
        return caches[index] if index is not None else None

    def wrote_pod(self, pod: dict[str, Any]) -> None:
        """A task pod as the API server answered our create, patch or delete."""
        if JOB_LABEL in ((pod.get("metadata") or {}).get("labels") or {}):
            cache = self._of(self.task_pods, pod)
            if cache is not None:
                cache.apply(pod)

    def wrote_job(self, job: dict[str, Any]) -> None:
        """A job as the API server answered our status patch."""
        cache = self._of(self.jobs, job)
        if cache is not None:
            cache.apply(job)
