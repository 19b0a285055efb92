"""Pending tasks of a job in index order, found without rescanning the finished ones every round."""

from __future__ import annotations

from collections.abc import Iterator

from mrsched.core.model import Job, Task, TaskType


class PendingTasks:
    """Per job and task type, a cursor past the tasks that are done for good (a done task never comes back;
    a failed attempt's task does, so running and failed tasks stay in view)."""

    def __init__(self) -> None:
        self._cursor: dict[tuple[str, TaskType], int] = {}

    def of(self, job: Job, kind: TaskType) -> Iterator[Task]:
        tasks = job.tasks(kind)
        key = (job.id, kind)
        start = self._cursor.get(key, 0)
        while start < len(tasks) and tasks[start].done:
            start += 1
        self._cursor[key] = start
        return (tasks[i] for i in range(start, len(tasks)) if tasks[i].pending)

    def forget(self, job_id: str) -> None:
        self._cursor.pop((job_id, "map"), None)
        self._cursor.pop((job_id, "reduce"), None)
