"""One job's part of a round: status, Events and clean-up, from the state rebuilt from its record and pods.

For each job the loop lists, :class:`JobReconciler` retires the attempts that cannot finish (node gone, or
NotReady past ``node_lost_grace_s``; pending past ``pending_timeout_s``) so that they are placed again without
counting as failures, ends the attempts no task needs (a late-created older attempt, one of a task or job
already done), decides the job's phase (``status.decide``), writes its status and an Event for each
transition and each failed attempt, deletes the pods of a failed job and deletes a job past its TTL. A job
whose spec cannot run is refused here, and an error in one job's part is reported here, so that the round goes
on for the other jobs. What it remembers between rounds (announced kube-scheduler verdicts, when a NotReady
node was first seen) is only to say things once and to time node loss.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from mrsched.operator.jobs import fit
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.leader import LeadershipLost
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model import status as job_status
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState, TaskState
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import TRANSIENT_WAITING, PodAttempt, parse_time
from mrsched.operator.model.roundstats import RoundStats

log = logging.getLogger("mrsched.loop")


class JobReconciler:
    def __init__(self, api: ClusterApi, config: OperatorConfig, metrics: OperatorMetrics) -> None:
        self.api = api
        self.config = config
        self.metrics = metrics
        # "<job uid>/<pod>" -> the kube-scheduler verdict last announced for it. A new verdict is announced again:
        # the first is often transient (a PersistentVolumeClaim not yet bound) and hides the lasting one.
        self._unschedulable: dict[str, str] = {}
        self._not_ready_seen: dict[str, float] = {}  # NotReady nodes without a transition time: first seen

    def reconcile(
        self,
        body: dict[str, Any],
        state: JobState,
        workers: dict[str, snap.NodeInfo],
        racks: dict[str, str],
        now: float,
        stats: RoundStats,
    ) -> str:
        """Status, Events and clean-up for one job; returns its phase."""
        spec = state.spec
        if state.deleting:
            return state.finished_phase or "Running"  # the garbage collector removes its pods
        policy = spec.policy or self.config.policy
        fatal = ""
        if not state.finished_phase:
            for task in state.every_task():
                for attempt in task.live:
                    gone = attempt.node is not None and attempt.node not in workers
                    lost = gone or self._node_lost(attempt.node, workers, now)
                    stuck = (
                        attempt.phase == "Pending"
                        and attempt.started is None
                        and attempt.reason not in TRANSIENT_WAITING  # pod_start_grace_s decides for those
                        and (now - attempt.created > self.config.pending_timeout_s)
                    )
                    key = f"{spec.uid}/{attempt.name}"
                    if attempt.unschedulable and self._unschedulable.get(key) != attempt.message:
                        self._unschedulable[key] = attempt.message
                        self.api.event(
                            body, "Warning", "TaskUnschedulable", f"{attempt.name}: {attempt.message}"
                        )
                    if attempt.cannot_start(now, self.config.pod_start_grace_s):
                        fatal = f"pod {attempt.name} cannot start: {attempt.reason}: {attempt.message}"
                    elif lost or stuck:
                        why = (
                            f"node {attempt.node} is gone"
                            if gone
                            else f"node {attempt.node} NotReady for {self.config.node_lost_grace_s:.0f} s"
                            if lost
                            else "pending too long"
                        )
                        log.info("retrying %s/%s: %s", spec.namespace, attempt.name, why)
                        self.api.event(
                            body, "Warning", "TaskRescheduled", f"{attempt.name}: {why}; placing it again"
                        )
                        # Never forced while its node may still run it: the kubelet ends it within its grace
                        # period once back (the replacement shares no file with it: its scratch and temporary
                        # names are keyed by the pod's uid). A Node that no longer exists runs nothing, and
                        # the pod GC would force-delete its pods anyway.
                        self.api.delete_pod(spec.namespace, attempt.name, grace_s=0 if gone else None)
                        stats.deleted += 1
                        task.attempts.remove(attempt)
                        task.attempts.append(_lost(attempt))
        for task, attempt in _surplus(state):
            # A pod the operator no longer wants: a task that has succeeded, a job that has finished, or an older
            # attempt that appeared after its task was placed again (a create that timed out and was delivered
            # late). Ended gracefully, as Hadoop's AM kills an attempt it does not need; never counted as a
            # failure, and its output never committed (the task's or job's commit has happened or will take
            # the surviving attempt's).
            log.info("ending %s/%s: no longer needed", spec.namespace, attempt.name)
            self.api.delete_pod(spec.namespace, attempt.name)
            stats.deleted += 1
            task.attempts.remove(attempt)
            task.attempts.append(
                replace(attempt, phase="Failed", reason="Superseded", deleting=True, disrupted=True)
            )
        verdict = job_status.decide(state, fatal)
        backoff = (self.config.backoff_base_s, self.config.backoff_max_s)
        blocked = fit.unplaceable(spec, workers) if verdict.phase == "Pending" else None
        new, transitions = job_status.compute(state, verdict, policy, now, backoff, racks, blocked)
        if _differs(state.status, new):
            self.api.patch_job_status(spec.namespace, spec.name, new)
        if not state.finished_phase and verdict.phase in ("Succeeded", "Failed"):
            # Once per job: this round records its completion (a restarted operator sees it finished already).
            self.metrics.job_finished(
                policy,
                new["starvationSeconds"],
                new["reduceIdleSeconds"],
                job_status.map_locality_counts(state, racks),
            )
        for t in transitions:
            self.api.event(body, t.type, t.reason, t.message)
        self._announce_failures(body, state)
        if verdict.phase == "Failed":
            for task in state.every_task():
                for attempt in task.live:
                    self.api.delete_pod(spec.namespace, attempt.name)
                    stats.deleted += 1
        if verdict.phase in ("Succeeded", "Failed") and spec.ttl_after_finished_s is not None:
            done_at = parse_time(new.get("completionTime")) or now
            if now >= done_at + spec.ttl_after_finished_s:
                log.info(
                    "deleting %s: finished %.0f s ago (ttlSecondsAfterFinished)", spec.key, now - done_at
                )
                self.api.delete_job(spec.namespace, spec.name)
        state.status = new
        return verdict.phase

    def refuse(self, body: dict[str, Any], message: str, now: float, reason: str = "InvalidSpec") -> str:
        """A job whose spec cannot run (jobspec.InvalidSpec) or is not allowed here (jobpolicy.NotAllowed):
        Failed with ``reason``, saying why, once; other jobs go on."""
        old = dict(body.get("status") or {})
        if old.get("reason") == reason:
            return "Failed"
        meta = body["metadata"]
        log.warning("%s/%s cannot run: %s", meta["namespace"], meta["name"], message)
        self.metrics.job_errors.labels("spec").inc()
        try:
            self.api.patch_job_status(
                meta["namespace"], meta["name"], job_status.invalid(old, message, now, reason)
            )
            self.api.event(body, "Warning", reason, message)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # written again next round
            self.job_error(body, "spec", err)
        return "Failed"

    def job_error(self, body: dict[str, Any], stage: str, err: Exception) -> None:
        """An error in one job's part of the round: logged, counted, and an Event on the job when the API takes
        one; the round goes on for the other jobs."""
        meta = body["metadata"]
        log.error("%s/%s: %s failed: %s", meta["namespace"], meta["name"], stage, err, exc_info=err)
        self.metrics.job_errors.labels(stage).inc()
        try:
            self.api.event(body, "Warning", "ReconcileError", f"{stage}: {type(err).__name__}: {err}")
        except Exception:  # the API refusing the event too (throttled): the log and the metric have it
            log.debug("no event for %s/%s's error", meta["namespace"], meta["name"], exc_info=True)

    def forget(self, present: AbstractSet[str]) -> None:
        """Drop the announced verdicts of jobs (by uid) that no longer exist."""
        for key in [k for k in self._unschedulable if k.split("/", 1)[0] not in present]:
            del self._unschedulable[key]

    def _node_lost(self, node: str | None, workers: dict[str, snap.NodeInfo], now: float) -> bool:
        """The node has been NotReady for ``node_lost_grace_s``: since its Ready condition's last transition,
        else since this operator first saw it NotReady (taint-based eviction's timing, not the first miss)."""
        if node is None or node not in workers or workers[node].ready:
            self._not_ready_seen.pop(node or "", None)
            return False
        since = workers[node].not_ready_since or self._not_ready_seen.setdefault(node, now)
        return now - since >= self.config.node_lost_grace_s

    def _announce_failures(self, body: dict[str, Any], state: JobState) -> None:
        for task in state.every_task():
            for attempt in task.failures:
                # The record alone says whether a failure was announced: a failure is announced in the round
                # that first records it in the job's status (``status.compute`` writes every visible failure
                # into ``status.tasks``), and that status patch comes before this call and raises when it
                # fails, so a later round, of this operator or of one after a restart, finds it recorded.
                if task.outcome_recorded(attempt):
                    continue
                why = attempt.report.error if attempt.report and attempt.report.error else attempt.message
                self.api.event(
                    body,
                    "Warning",
                    "TaskFailed",
                    f"{attempt.name} on {attempt.node} failed (exit {attempt.exit_code}, {attempt.reason}): {why}; "
                    f"{task.failure_count} of {state.spec.backoff_limit + 1} attempts used",
                )


def _surplus(state: JobState) -> list[tuple[TaskState, PodAttempt]]:
    """The live attempts no task needs: every one of a finished job or of a task that has succeeded, and of two
    or more live attempts of one task (the operator runs one at a time), all but the latest."""
    surplus = []
    for task in state.every_task():
        live = sorted(task.live, key=lambda a: a.attempt)
        keep = [] if state.finished_phase or task.succeeded else live[-1:]
        surplus += [(task, a) for a in live if a not in keep]
    return surplus


def _lost(attempt: PodAttempt) -> PodAttempt:
    """An attempt the operator gave up on (node lost, stuck): gone, and not counted as the task's failure."""
    return replace(attempt, phase="Failed", reason="NodeLost", deleting=True)


def _differs(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return any(old.get(k) != v for k, v in new.items())
