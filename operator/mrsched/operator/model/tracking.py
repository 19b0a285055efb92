"""Task pods are not deleted before their outcome is in the job's status: a finalizer, as Kubernetes' Job
controller keeps ``batch.kubernetes.io/job-tracking`` on its pods.

Every task pod is created with :data:`TRACKING_FINALIZER`. A pod that someone deletes (the pod GC, a user, a
node's clean-up) then stays, marked for deletion, until a round has read its outcome and written it into the
job's ``status.tasks`` (``taskrecord``); only then does the operator remove the finalizer and the pod go. So a
finished task's success and a failed attempt's failure are never lost with the pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from mrsched.operator.model.pods import JOB_UID_LABEL, TRACKING_FINALIZER


def tracked(pod: Mapping[str, Any]) -> int | None:
    """The index of our finalizer in the pod's list, or None when it has none."""
    finalizers = (pod.get("metadata") or {}).get("finalizers") or []
    return finalizers.index(TRACKING_FINALIZER) if TRACKING_FINALIZER in finalizers else None


def releasable(
    pod: Mapping[str, Any],
    recorded: Set[str],
    departed: Set[str],
    nodes_up: Set[str],
) -> bool:
    """The pod's finalizer may go.

    ``recorded``: uids of the jobs whose status this round wrote (or found up to date) from these very pods;
    ``departed``: uids of jobs that are gone or being deleted (nothing to record: their pods go with them);
    ``nodes_up``: worker nodes that exist and are Ready.

    A finished pod goes once its job recorded it. A pod marked for deletion before it finished goes at once
    when its outcome can never come (it never reached a node, or its node is gone or NotReady: the operator
    gave the attempt up as lost, which counts nothing); on a healthy node the kubelet ends it first, and the
    outcome (exit 143) is recorded like any other.
    """
    meta = pod.get("metadata") or {}
    uid = (meta.get("labels") or {}).get(JOB_UID_LABEL, "")
    if not uid or uid in departed:
        return True
    if uid not in recorded:
        return False  # its job's status was not written this round: hold on
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        return True
    if not meta.get("deletionTimestamp"):
        return False
    node = (pod.get("spec") or {}).get("nodeName")
    return phase == "Pending" or not node or node not in nodes_up


def prunable(
    pods: list[dict[str, Any]], finished_at: Mapping[str, float], now: float, ttl_s: float
) -> list[tuple[str, str, str]]:
    """(namespace, name, job uid) of the finished task pods of jobs that ended at least ``ttl_s`` ago
    (``finished_at``: job uid -> completion time), not yet being deleted. Their outcomes are in the job's
    status, so they only cost the API server's and every watcher's memory; the job itself stays until its own
    ``ttlSecondsAfterFinished``."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        uid = (meta.get("labels") or {}).get(JOB_UID_LABEL, "")
        done = finished_at.get(uid)
        if done is None or now < done + ttl_s or meta.get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            out.append((meta["namespace"], meta["name"], uid))
    return out
