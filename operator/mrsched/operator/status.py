"""A job's status subresource computed from its state, and the transitions worth an Event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mrsched.operator.jobstate import JobState, rfc3339


@dataclass(frozen=True)
class Transition:
    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass(frozen=True)
class Verdict:
    """What the loop concluded about a job this round."""

    phase: str
    reason: str = ""
    message: str = ""


def decide(state: JobState, fatal: str = "") -> Verdict:
    if state.finished_phase:
        return Verdict(state.finished_phase, state.status.get("reason", ""), state.status.get("message", ""))
    if fatal:
        return Verdict("Failed", "PodCannotStart", fatal)
    if (task := state.failed_task()) is not None:
        last = max(task.failures, key=lambda a: a.attempt)
        why = (last.report.error if last.report and last.report.error else last.message) or last.reason
        return Verdict(
            "Failed",
            "BackoffLimitExceeded",
            f"task {task.name} failed {len(task.failures)} times (backoffLimit {state.spec.backoff_limit}); "
            f"last attempt {last.name} on {last.node}: exit {last.exit_code}: {why}",
        )
    if state.all_succeeded():
        if state.commit.succeeded:
            return Verdict("Succeeded", "AllTasksSucceeded", f"{len(state.tasks)} tasks succeeded")
        return Verdict("Running", "Committing", f"{len(state.tasks)} tasks succeeded; committing the output")
    if any(t.attempts for t in state.tasks.values()):
        return Verdict("Running")
    return Verdict("Pending", "Waiting", "waiting for the scheduler to place the first task")


def compute(
    state: JobState, verdict: Verdict, policy: str, now: float, backoff: tuple[float, float]
) -> tuple[dict[str, Any], list[Transition]]:
    """The new status, and the transitions since the old one (each an Event)."""
    old = state.status
    maps = state.counters("map", now, *backoff)
    reduces = state.counters("reduce", now, *backoff)
    total = maps["total"] + reduces["total"]
    done = maps["succeeded"] + reduces["succeeded"]
    start = state.first_start()
    status: dict[str, Any] = {
        "phase": verdict.phase,
        "policy": policy,
        "maps": maps,
        "reduces": reduces,
        "mapsCompleted": f"{maps['succeeded']}/{maps['total']}",
        "reducesCompleted": f"{reduces['succeeded']}/{reduces['total']}",
        "progress": int(100 * done / total) if total else 100,
        "observedGeneration": state.generation,
    }
    # None removes a stale value: status is written with a merge patch.
    status["reason"] = verdict.reason or None
    status["message"] = verdict.message or None
    if start is not None:
        status["startTime"] = old.get("startTime") or rfc3339(start)
    if verdict.phase in ("Succeeded", "Failed"):
        status["completionTime"] = old.get("completionTime") or rfc3339(now)

    wanted = {
        "Scheduled": (
            start is not None,
            "TaskPlaced" if start is not None else "Waiting",
            f"first task placed by {policy}" if start is not None else "no task placed yet",
        ),
        "MapsCompleted": (
            maps["succeeded"] == maps["total"],
            "AllMapsSucceeded" if maps["succeeded"] == maps["total"] else "MapsRunning",
            f"{maps['succeeded']}/{maps['total']} maps succeeded",
        ),
        "Succeeded": (
            verdict.phase == "Succeeded",
            verdict.reason if verdict.phase == "Succeeded" else "NotFinished",
            verdict.message if verdict.phase == "Succeeded" else "job not finished",
        ),
        "Failed": (
            verdict.phase == "Failed",
            verdict.reason if verdict.phase == "Failed" else "NoFailure",
            verdict.message if verdict.phase == "Failed" else "no task exceeded its backoff limit",
        ),
    }
    old_conditions = {c["type"]: c for c in old.get("conditions") or []}
    conditions, transitions = [], []
    for kind, (holds, reason, message) in wanted.items():
        value = "True" if holds else "False"
        previous = old_conditions.get(kind)
        changed = previous is None or previous.get("status") != value
        conditions.append(
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": rfc3339(now) if changed else previous["lastTransitionTime"],  # type: ignore[index]
            }
        )
        if changed and holds:
            transitions.append(Transition("Warning" if kind == "Failed" else "Normal", reason, message))
    status["conditions"] = conditions
    return status, transitions
