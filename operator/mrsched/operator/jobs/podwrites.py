"""The task-pod writes of a round, many at a time on a thread pool: an API round trip each, which one after the
other would make a round of many placements as slow as their sum.

:class:`PodWrites` creates the placed pods, after writing each job's attempts-to-be into its status so that an
attempt number is never used twice, and removes the tracking finalizer (``tracking``) from pods whose outcome
the job's status now holds. A write that fails is counted and logged, and the next round tries again; only
``LeadershipLost`` stops the round (no more writes once the Lease is lost: leader.py).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.leader import LeadershipLost
from mrsched.operator.model import tracking
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import (
    ATTEMPT_LABEL,
    INDEX_LABEL,
    JOB_UID_LABEL,
    TRACKING_FINALIZER,
    TYPE_LABEL,
)

_T = TypeVar("_T")
_R = TypeVar("_R")

log = logging.getLogger("mrsched.loop")

#: Reports an error in one job's part of the round (JobReconciler.job_error): body, stage, error.
JobErrorReporter = Callable[[dict[str, Any], str, Exception], None]
#: Fails a job whose spec cannot run (JobReconciler.refuse): body, message, now.
JobRefuser = Callable[[dict[str, Any], str, float], str]


class PodWrites:
    def __init__(
        self,
        api: ClusterApi,
        metrics: OperatorMetrics,
        pool: ThreadPoolExecutor,
        job_error: JobErrorReporter,
        refuse: JobRefuser,
        workers: int = 1,
    ) -> None:
        self.api = api
        self.metrics = metrics
        self.pool = pool  # owned by the loop, which shuts it down when it stops
        self.workers = workers  # the pool's threads
        self.job_error = job_error
        self.refuse = refuse

    def create_pods(
        self, active: list[tuple[dict[str, Any], JobState]], pods: list[dict[str, Any]], now: float
    ) -> int:
        """Create the placed ``pods`` of the ``active`` jobs; returns how many were created. A job whose pod the
        apiserver refuses as invalid (422: a toleration the Pod API rejects, which the CRD let through) cannot
        run, and retrying would only burn attempt numbers: it fails, reason InvalidSpec, with the apiserver's
        words."""
        ready = self._record_attempts(active, pods)
        bodies = {state.spec.uid: body for body, state in active}
        created = 0
        refused: dict[str, str] = {}
        for pod, (count, invalid) in zip(ready, self._in_chunks(self._create, ready), strict=True):
            created += count
            if invalid:
                refused.setdefault(pod["metadata"]["labels"][JOB_UID_LABEL], invalid)
        for uid, message in refused.items():
            self.refuse(bodies[uid], message, now)
        return created

    def _in_chunks(self, write: Callable[[_T], _R], items: list[_T]) -> list[_R]:
        """``[write(item) for item in items]`` on the pool, in chunks of consecutive items, four per thread: as
        many round trips at a time as one task per item, without a thread hand-off per pod (a round creates up
        to thousands), and still balanced when some round trips are slow."""
        if not items:
            return []
        size = -(-len(items) // (4 * self.workers))
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        return [
            out for done in self.pool.map(lambda chunk: [write(i) for i in chunk], chunks) for out in done
        ]

    def release(
        self, pods: list[dict[str, Any]], recorded: set[str], departed: set[str], up: set[str]
    ) -> set[str]:
        """Remove the tracking finalizer from the task pods whose outcome the job's status now holds (tracking);
        returns the uids of the jobs with a pod whose finalizer could not be removed (tried again next round)."""
        done, jobs = [], []
        for pod in pods:
            index = tracking.tracked(pod)
            if index is not None and tracking.releasable(pod, recorded, departed, up):
                done.append((pod["metadata"]["namespace"], pod["metadata"]["name"], index))
                jobs.append(pod["metadata"]["labels"].get(JOB_UID_LABEL, ""))
        failed_jobs = set()
        for uid, failed in zip(jobs, self.pool.map(self._remove_finalizer, done), strict=True):
            if failed:
                self.metrics.job_errors.labels("finalizer").inc()
                failed_jobs.add(uid)
        return failed_jobs

    def delete_pods(self, pods: list[tuple[str, str, str]]) -> set[str]:
        """Delete finished task pods, (namespace, name, job uid) from tracking.prunable; returns the uids of the
        jobs with a pod not deleted (tried again next round)."""
        failed_jobs = set()
        for (_, _, uid), failed in zip(pods, self.pool.map(self._delete, pods), strict=True):
            if failed:
                self.metrics.job_errors.labels("prune").inc()
                failed_jobs.add(uid)
        return failed_jobs

    def _delete(self, where: tuple[str, str, str]) -> bool:
        try:
            self.api.delete_pod(*where[:2])
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # the next round tries again
            log.warning("deleting the finished pod %s/%s: %s", *where[:2], err)
            return True
        return False

    def _remove_finalizer(self, where: tuple[str, str, int]) -> bool:
        namespace, name, index = where
        try:
            self.api.remove_finalizer(namespace, name, index, TRACKING_FINALIZER)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # the next round tries again
            log.warning("removing the finalizer of %s/%s: %s", namespace, name, err)
            return True
        return False

    def _record_attempts(
        self, active: list[tuple[dict[str, Any], JobState]], pods: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Write each job's attempts-to-be into its status (taskrecord) before any of its pods is created, so that
        an attempt number is never used twice, whatever happens to the pods; a job whose write fails creates none
        this round."""
        by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for pod in pods:
            by_job[pod["metadata"]["labels"][JOB_UID_LABEL]].append(pod)
        states = {state.spec.uid: (body, state) for body, state in active}

        def write(uid: str) -> Exception | None:
            state = states[uid][1]
            attempts = [
                (labels[TYPE_LABEL], int(labels[INDEX_LABEL]), int(labels[ATTEMPT_LABEL]))
                for labels in (pod["metadata"]["labels"] for pod in by_job[uid])
            ]
            record = state.record(attempts)
            try:
                if record != state.status.get("tasks"):
                    self.api.patch_job_status(state.spec.namespace, state.spec.name, {"tasks": record})
            except LeadershipLost:
                raise  # no more writes this round (leader.py)
            except Exception as err:  # placed again next round
                return err
            state.status["tasks"] = record
            return None

        ready = []
        # One patch per job, side by side (their round trips, not their work, would set the pace); every one
        # is answered before any pod is created.
        jobs = list(by_job)
        for uid, error in zip(jobs, self.pool.map(write, jobs), strict=True):
            if error is not None:
                self.job_error(states[uid][0], "record", error)
                continue
            ready += by_job[uid]
        return ready

    def _create(self, pod: dict[str, Any]) -> tuple[int, str]:
        """(1 if created else 0, the apiserver's message when it refused the pod as invalid)."""
        try:
            created = self.api.create_pod(pod)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # the next round places the task again
            reason = type(err).__name__
            status = getattr(err, "status", None)
            if status == 403 and "exceeded quota" in _status_message(err):
                # The namespace's ResourceQuota is full: the task stays pending and is placed again once the
                # tenant's running pods end (docs/security.md); the job is not failed for it.
                self.metrics.bind_errors.labels("ResourceQuota").inc()
                log.info(
                    "pod %s waits for its namespace's quota: %s",
                    pod["metadata"]["name"],
                    _status_message(err),
                )
                return 0, ""
            self.metrics.bind_errors.labels(f"{reason}{status or ''}").inc()
            log.warning("creating pod %s failed: %s", pod["metadata"]["name"], err)
            if status == 422:
                return 0, f"the apiserver refuses its task pods: {_status_message(err)}"
            return 0, ""
        if created:
            self.metrics.tasks_started.labels(pod["metadata"]["labels"]["mrsched.dev/task-type"]).inc()
        return int(created), ""


def _status_message(err: Exception) -> str:
    """The message of the apiserver's Status in an ApiException, else the exception's text."""
    try:
        return str(json.loads(getattr(err, "body", None) or "")["message"])
    except (ValueError, KeyError, TypeError):
        return str(err)
