"""What the policies hear of the cluster between placements: job submissions, finished attempts, requeued tasks
and finished jobs, each once, through the core's ``Policy`` hooks (as Hadoop's JobTracker tells its scheduler).

The loop rebuilds every job's state each round, so :class:`LearningFeed` remembers, per job, what this process
has told its policy already, and keeps each job's core ``Job`` object across rounds (policies index their tasks
by it). An attempt whose outcome the job's status recorded before this round was learnt by an earlier round,
perhaps of an operator since restarted, whose policy saved what it learnt (``profiles``): it is not fed again.
Finished map attempts also reach the node-health monitor (``health``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from mrsched.core.model import Job, TaskOutcome
from mrsched.core.policy import Policy
from mrsched.operator.learning.health import NodeHealthReporter
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState, TaskState
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import PodAttempt


class LearningFeed:
    def __init__(
        self,
        policy: Callable[[str], Policy],
        config: OperatorConfig,
        metrics: OperatorMetrics,
        health: NodeHealthReporter,
    ) -> None:
        self.policy = policy  # by name, made (and its saved state loaded) on first use: SchedulingLoop.policy
        self.config = config
        self.metrics = metrics
        self.health = health
        self._jobs: dict[str, Job] = {}  # by uid: the same objects every round (policies index their tasks)
        # What this process has told the policies, by job uid; forgotten once the job is gone (``forget``).
        self._known_jobs: dict[str, str] = {}  # uid -> the job's policy
        self._finished_jobs: set[str] = set()
        self._seen_outcomes: dict[str, set[str]] = defaultdict(set)  # uid -> attempts seen finished

    def learn(self, states: list[tuple[dict[str, Any], JobState]], now: float) -> None:
        """Feed finished attempts and finished jobs to the policies' hooks, once each."""
        for _, state in states:
            spec = state.spec
            if spec.uid in self._finished_jobs:
                continue
            policy = self.policy(spec.policy or self.config.policy)
            job = self.core_job(state, now)
            if spec.uid not in self._known_jobs:
                self._known_jobs[spec.uid] = spec.policy or self.config.policy
                if not state.finished_phase:
                    policy.on_job_submitted(job, now)
            seen = self._seen_outcomes[spec.uid]
            for task in state.tasks.values():
                for attempt in task.attempts:
                    if attempt.phase not in ("Succeeded", "Failed") or attempt.rejected:
                        continue
                    if attempt.name in seen:
                        continue
                    seen.add(attempt.name)
                    if task.outcome_recorded(attempt):
                        # Recorded in the job's status before this round: an earlier round (maybe of an operator
                        # since restarted) counted and learnt it, and the policy's saved state has it. One that
                        # finished while no operator ran is not recorded yet: it is learnt now, once.
                        continue
                    self.metrics.tasks_finished.labels(task.kind, attempt.phase.lower()).inc()
                    outcome = _outcome(job, task, attempt, now)
                    policy.on_task_finished(outcome)
                    self.health.task_finished(spec.app, task.kind, outcome, now)
            if state.status.get("phase") in ("Succeeded", "Failed") and spec.uid not in self._finished_jobs:
                self._finished_jobs.add(spec.uid)
                policy.on_job_finished(job, now)
                self._jobs.pop(spec.uid, None)
                self._seen_outcomes.pop(spec.uid, None)  # recorded in its status: nothing more to learn

    def forget(self, present: AbstractSet[str], now: float) -> None:
        """Drop what is remembered of jobs (by uid) that no longer exist; a job deleted before it finished is
        finished for its policy too (lsps would otherwise keep its user's share)."""
        for uid in [u for u in self._known_jobs if u not in present]:
            policy = self._known_jobs.pop(uid)
            job = self._jobs.pop(uid, None)
            if uid not in self._finished_jobs and job is not None:
                self.policy(policy).on_job_finished(job, now)
            self._finished_jobs.discard(uid)
            self._seen_outcomes.pop(uid, None)

    def held_job(self, uid: str) -> Job | None:
        """The job's core object as the last :meth:`core_job` left it, if any."""
        return self._jobs.get(uid)

    def core_job(self, state: JobState, now: float) -> Job:
        """The job's core object, kept across rounds; tasks that became schedulable again are announced."""
        backoff = (self.config.backoff_base_s, self.config.backoff_max_s)
        existing = self._jobs.get(state.spec.uid)
        before = {t.key: t.pending for t in (*existing.maps, *existing.reduces)} if existing else {}
        job = self._jobs[state.spec.uid] = snap.core_job(state, now, backoff, existing)
        if existing is not None:
            policy = self.policy(state.spec.policy or self.config.policy)
            for task in (*job.maps, *job.reduces):
                if task.pending and not before.get(task.key, True):
                    policy.on_task_requeued(task)
        return job


def _outcome(job: Job, task: TaskState, attempt: PodAttempt, now: float) -> TaskOutcome:
    assert task.kind != "commit", "the job commit is not a task the policies schedule"
    core_task = next(t for t in job.tasks(task.kind) if t.index == task.index)
    report = attempt.report
    finished = attempt.finished or now
    started = attempt.started or attempt.created
    if report is not None and report.wall_s > 0:
        # The task's own clock: sub-second, where the container's timestamps have whole seconds.
        started = finished - report.wall_s
    return TaskOutcome(
        core_task,
        attempt.node or "",
        started,
        finished,
        attempt.phase == "Succeeded",
        cpu_s=(report.cpu_user_s + report.cpu_system_s) if report else 0.0,
        read_bytes=report.read_bytes if report else 0,
        written_bytes=report.written_bytes if report else 0,
        network_bytes=report.network_bytes if report else 0,
    )
