"""A job's state, rebuilt on every heartbeat from its status's task record (``taskrecord``) and its pods:
nothing but the cluster holds it, so an operator restarted at any moment carries on where the last one stopped,
counting each task exactly once, and a deleted pod neither re-runs a finished task nor resets a backoff.

A task is succeeded when the record says so or one of its attempts succeeded (the worker's commit makes
duplicates harmless), running while an attempt is live, and failed for good when its failed attempts (recorded
or visible) exceed the job's backoff limit. Attempts that the node rejected or lost are retried at once and never
count as failures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mrsched.operator.model import taskrecord
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.pods import OUTPUT_CONFLICT_EXIT, PodAttempt, TaskType, parse_time


@dataclass
class TaskState:
    kind: TaskType
    index: int
    attempts: list[PodAttempt] = field(default_factory=list)
    #: What the job's status recorded before this round (pods may be gone since).
    recorded_attempts: int = 0
    recorded_failed: frozenset[int] = frozenset()
    recorded_succeeded: bool = False

    @property
    def succeeded(self) -> bool:
        return self.recorded_succeeded or any(a.phase == "Succeeded" for a in self.attempts)

    @property
    def live(self) -> list[PodAttempt]:
        return [a for a in self.attempts if a.live]

    @property
    def failures(self) -> list[PodAttempt]:
        """The failed attempts whose pods still exist (the record may hold more: ``failure_count``)."""
        return [a for a in self.attempts if a.phase == "Failed" and not a.rejected]

    @property
    def failed_attempts(self) -> frozenset[int]:
        return self.recorded_failed | {a.attempt for a in self.failures}

    @property
    def failure_count(self) -> int:
        """Failed attempts that count against the backoff limit, whether or not their pods still exist."""
        return len(self.failed_attempts)

    @property
    def next_attempt(self) -> int:
        """Never a number used before: the record counts attempts whose pods are gone."""
        return max(self.recorded_attempts, max((a.attempt for a in self.attempts), default=-1) + 1)

    def outcome_recorded(self, attempt: PodAttempt) -> bool:
        """The attempt's outcome was in the job's status before this round: an earlier round (maybe of an
        operator since restarted) has counted it, announced it and fed it to the policy."""
        if attempt.phase == "Succeeded":
            return self.recorded_succeeded
        return attempt.phase == "Failed" and attempt.attempt in self.recorded_failed

    def retry_at(self, base_s: float, max_s: float) -> float:
        """When the next attempt may start: exponential backoff after the last failure (from its pod, when the
        pod still exists; a failure known only from the record retries at once)."""
        count = self.failure_count
        if not count:
            return 0.0
        failures = self.failures
        if not failures:
            return 0.0
        last = max((a.finished or a.created) for a in failures)
        return last + min(max_s, base_s * (1 << (count - 1)))

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.index:05d}"


@dataclass
class JobState:
    spec: JobSpec
    created: float
    tasks: dict[tuple[str, int], TaskState]
    status: dict[str, Any]
    deleting: bool = False
    generation: int = 0
    #: The job commit (Hadoop's commitJob: ``_SUCCESS``, temporary data removed), once every task succeeded.
    commit: TaskState = field(default_factory=lambda: TaskState("commit", 0))

    @classmethod
    def build(cls, body: dict[str, Any], attempts: Iterable[PodAttempt]) -> JobState:
        spec = JobSpec.from_resource(body)
        status = dict(body.get("status") or {})
        record = taskrecord.parse(status)
        tasks: dict[tuple[str, int], TaskState] = {}
        for kind, count in (("map", spec.maps), ("reduce", spec.reduces)):
            for i in range(count):
                tasks[(kind, i)] = _recorded(kind, i, record[kind])  # type: ignore[arg-type]
        commit = _recorded("commit", 0, record["commit"])
        for attempt in attempts:
            task = commit if attempt.kind == "commit" else tasks.get((attempt.kind, attempt.index))
            if task is not None:
                task.attempts.append(attempt)
        meta = body["metadata"]
        return cls(
            commit=commit,
            spec=spec,
            created=parse_time(meta.get("creationTimestamp")) or 0.0,
            tasks=tasks,
            status=status,
            deleting=bool(meta.get("deletionTimestamp")),
            generation=int(meta.get("generation", 0)),
        )

    def of(self, kind: TaskType) -> list[TaskState]:
        return [t for (k, _), t in self.tasks.items() if k == kind]

    @property
    def finished_phase(self) -> str | None:
        """Succeeded or Failed once recorded in the status; a finished job never runs again."""
        phase = self.status.get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    def failed_task(self) -> TaskState | None:
        """The first task whose failures exceed the backoff limit, which fails the job."""
        for task in self.every_task():
            if not task.succeeded and task.failure_count > self.spec.backoff_limit:
                return task
        return None

    def output_refused(self) -> PodAttempt | None:
        """An attempt the worker refused because the output belongs to someone else (exit 3): retrying cannot
        help, so the job fails at once, as Hadoop refuses a job whose output directory exists."""
        for task in self.every_task():
            for attempt in task.attempts:
                if attempt.phase == "Failed" and attempt.exit_code == OUTPUT_CONFLICT_EXIT:
                    return attempt
        return None

    def every_task(self) -> list[TaskState]:
        """Maps, reduces and the job commit: everything that runs as a pod."""
        return [*self.tasks.values(), self.commit]

    def counters(self, kind: TaskType, now: float, base_s: float, max_s: float) -> dict[str, int]:
        tasks = self.of(kind)
        succeeded = sum(t.succeeded for t in tasks)
        running = sum(1 for t in tasks if not t.succeeded and t.live)
        return {
            "total": len(tasks),
            "pending": len(tasks) - succeeded - running,
            "running": running,
            "succeeded": succeeded,
            "failed": sum(t.failure_count for t in tasks),  # failed attempts, as Hadoop counts them
        }

    def record(self, created: Iterable[tuple[str, int, int]] = ()) -> dict[str, dict[str, str]]:
        """``status.tasks``: what the record held, what the pods show, and the attempts ``created`` (kind, index,
        attempt number) about to be; it only grows."""
        record = {kind: taskrecord.KindRecord() for kind in ("map", "reduce", "commit")}
        for task in self.every_task():
            rec = record[task.kind]
            if task.next_attempt:
                rec.attempts[task.index] = task.next_attempt
            if task.succeeded:
                rec.succeeded.add(task.index)
            if task.failed_attempts:
                rec.failed[task.index] = set(task.failed_attempts)
        for kind, index, attempt in created:
            rec = record[kind]
            rec.attempts[index] = max(rec.attempts.get(index, 0), attempt + 1)
        return taskrecord.render(record)

    def maps_done(self) -> int:
        return sum(t.succeeded for t in self.of("map"))

    def reduces_allowed(self) -> bool:
        maps = self.of("map")
        return not maps or self.maps_done() >= self.spec.reduce_slowstart * len(maps)

    def all_succeeded(self) -> bool:
        """Every map and reduce (not the commit) succeeded."""
        return all(t.succeeded for t in self.tasks.values())

    def needs_commit(self) -> bool:
        return self.all_succeeded() and not self.commit.succeeded and not self.commit.live

    def first_start(self) -> float | None:
        starts = [a.created for t in self.tasks.values() for a in t.attempts]
        return min(starts) if starts else None

    def last_finish(self) -> float | None:
        ends = [a.finished for t in self.tasks.values() for a in t.attempts if a.finished]
        return max(ends) if ends else None


def _recorded(kind: TaskType, index: int, record: taskrecord.KindRecord) -> TaskState:
    return TaskState(
        kind,
        index,
        recorded_attempts=record.attempts.get(index, 0),
        recorded_failed=frozenset(record.failed.get(index, ())),
        recorded_succeeded=index in record.succeeded,
    )


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
