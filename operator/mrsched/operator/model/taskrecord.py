"""What a job's tasks have done, kept in the job's status (``status.tasks``) so that pods can come and go.

Pods are not a record: the pod garbage collector, a user or a node's clean-up can delete them, and a job's state
rebuilt from pods alone would run finished tasks again, forget failures (resetting ``backoffLimit``) and reuse
attempt numbers. So the operator writes, per task type, three facts that only ever grow:

``attempts``
    attempts created so far per task (the next attempt's number), written *before* the pods are created;
``succeeded``
    the tasks that succeeded;
``failed``
    per task, the attempt numbers that failed and count against its backoff limit.

A job's state is the union of this record and the pods that exist (``jobstate.JobState.build``). The encoding is
compact enough for 10,000 tasks in a status patch: ranges of equal values, ``"0-97=1,98=2,99=1"`` for attempts,
``"0-41,43"`` for succeeded, ``"98:0.1"`` for failed attempts (task 98's attempts 0 and 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class KindRecord:
    """The record of one task type (map, reduce, or the job commit)."""

    attempts: dict[int, int] = field(default_factory=dict)  # task index -> attempts created
    succeeded: set[int] = field(default_factory=set)
    failed: dict[int, set[int]] = field(default_factory=dict)  # task index -> failed attempt numbers

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> KindRecord:
        """The record as written in the status; a malformed one raises ValueError."""
        raw = raw or {}
        return cls(
            attempts=_parse_values(str(raw.get("attempts") or "")),
            succeeded=set(_parse_ranges(str(raw.get("succeeded") or ""))),
            failed={
                int(task): {int(a) for a in attempts.split(".")}
                for task, _, attempts in (
                    item.partition(":") for item in str(raw.get("failed") or "").split(",") if item
                )
            },
        )

    def render(self) -> dict[str, str]:
        return {
            "attempts": _render_values(self.attempts),
            "succeeded": _render_ranges(self.succeeded),
            "failed": ",".join(
                f"{task}:{'.'.join(str(a) for a in sorted(attempts))}"
                for task, attempts in sorted(self.failed.items())
                if attempts
            ),
        }


def parse(status: Mapping[str, Any]) -> dict[str, KindRecord]:
    """``status.tasks`` by task type; what is missing or unreadable starts empty (the pods still count)."""
    tasks = status.get("tasks") or {}
    record = {}
    for kind in ("map", "reduce", "commit"):
        try:
            record[kind] = KindRecord.parse(tasks.get(kind) if isinstance(tasks, Mapping) else None)
        except (ValueError, AttributeError):
            record[kind] = KindRecord()
    return record


def render(record: Mapping[str, KindRecord]) -> dict[str, dict[str, str]]:
    return {kind: rec.render() for kind, rec in record.items()}


def _parse_ranges(text: str) -> Iterable[int]:
    for item in text.split(","):
        if not item:
            continue
        low, _, high = item.partition("-")
        yield from range(int(low), int(high or low) + 1)


def _render_ranges(values: Iterable[int]) -> str:
    runs: list[list[int]] = []
    for value in sorted(values):
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in runs)


def _parse_values(text: str) -> dict[int, int]:
    values = {}
    for item in text.split(","):
        if not item:
            continue
        indices, _, value = item.partition("=")
        for index in _parse_ranges(indices):
            values[index] = int(value)
    return values


def _render_values(values: Mapping[int, int]) -> str:
    runs: list[tuple[int, int, int]] = []  # (first index, last index, value)
    for index in sorted(values):
        value = values[index]
        if runs and runs[-1][1] == index - 1 and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], index, value)
        else:
            runs.append((index, index, value))
    return ",".join(f"{lo}={v}" if lo == hi else f"{lo}-{hi}={v}" for lo, hi, v in runs)
