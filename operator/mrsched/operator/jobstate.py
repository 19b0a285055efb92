"""A job's state, rebuilt from its pods on every heartbeat: nothing but the cluster holds it, so an operator
restarted at any moment carries on where the last one stopped, counting each task exactly once.

A task is succeeded when one of its attempts succeeded (the worker's commit makes duplicates harmless), running
while an attempt is live, and failed for good when its failed attempts exceed the job's backoff limit. Attempts
that the node rejected or lost are retried at once and never count as failures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mrsched.operator.jobspec import JobSpec
from mrsched.operator.pods import PodAttempt, TaskType


@dataclass
class TaskState:
    kind: TaskType
    index: int
    attempts: list[PodAttempt] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return any(a.phase == "Succeeded" for a in self.attempts)

    @property
    def live(self) -> list[PodAttempt]:
        return [a for a in self.attempts if a.live]

    @property
    def failures(self) -> list[PodAttempt]:
        return [a for a in self.attempts if a.phase == "Failed" and not a.rejected]

    @property
    def next_attempt(self) -> int:
        return max((a.attempt for a in self.attempts), default=-1) + 1

    def retry_at(self, base_s: float, max_s: float) -> float:
        """When the next attempt may start: exponential backoff after the last failure."""
        failures = self.failures
        if not failures:
            return 0.0
        last = max((a.finished or a.created) for a in failures)
        return last + min(max_s, base_s * (1 << (len(failures) - 1)))

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
        tasks: dict[tuple[str, int], TaskState] = {}
        for kind, count in (("map", spec.maps), ("reduce", spec.reduces)):
            for i in range(count):
                tasks[(kind, i)] = TaskState(kind, i)  # type: ignore[arg-type]
        commit = TaskState("commit", 0)
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
            status=dict(body.get("status") or {}),
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
            if not task.succeeded and len(task.failures) > self.spec.backoff_limit:
                return task
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
            "failed": sum(len(t.failures) for t in tasks),  # failed attempts, as Hadoop counts them
        }

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


def parse_time(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
