"""A job's status subresource computed from its state, and the transitions worth an Event."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mrsched.operator.model.jobstate import JobState, rfc3339
from mrsched.operator.model.pods import PodAttempt, parse_time

LocalityLevel = Literal["nodeLocal", "rackLocal", "offRack", "unknown"]
#: The locality levels of status.locality, best first (Hadoop's node-local, rack-local, off-rack).
LOCALITY_LEVELS: tuple[LocalityLevel, ...] = ("nodeLocal", "rackLocal", "offRack", "unknown")
#: Status fields computed from the job's attempts that stay as they were once the job has finished (its pods
#: may be deleted or their nodes gone by then).
FROZEN_AT_COMPLETION = ("locality", "starvationSeconds", "reduceIdleSeconds")
IDLE_RESOLUTION_S = 5.0


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
    if (refused := state.output_refused()) is not None:
        why = refused.report.error if refused.report and refused.report.error else refused.message
        return Verdict("Failed", "OutputExists", f"{refused.name}: {why}")
    if (task := state.failed_task()) is not None:
        message = (
            f"task {task.name} failed {task.failure_count} times (backoffLimit {state.spec.backoff_limit})"
        )
        if task.failures:  # the last failure's own words, while its pod exists
            last = max(task.failures, key=lambda a: a.attempt)
            why = (last.report.error if last.report and last.report.error else last.message) or last.reason
            # The pod's own reason when it says more than the exit code (DeadlineExceeded, OOMKilled).
            note = f" ({last.reason})" if last.reason and last.reason not in ("Error", "Completed") else ""
            message += f"; last attempt {last.name} on {last.node}: exit {last.exit_code}{note}: {why}"
        return Verdict("Failed", "BackoffLimitExceeded", message)
    if state.all_succeeded():
        if state.commit.succeeded:
            return Verdict("Succeeded", "AllTasksSucceeded", f"{len(state.tasks)} tasks succeeded")
        return Verdict("Running", "Committing", f"{len(state.tasks)} tasks succeeded; committing the output")
    if any(t.attempts for t in state.tasks.values()):
        return Verdict("Running")
    return Verdict("Pending", "Waiting", "waiting for the scheduler to place the first task")


def _ran(attempt: PodAttempt) -> bool:
    """The attempt started on a node (a kubelet's admission refusal never ran; a lost node's attempt did)."""
    return (
        attempt.started is not None
        and bool(attempt.node)
        and not (attempt.rejected and attempt.reason != "NodeLost")
    )


def map_locality_counts(state: JobState, racks: Mapping[str, str]) -> dict[str, int]:
    """The job's started map attempts by data locality, as Hadoop counts its locality levels.

    Node-local: the attempt's node holds a replica of its split (``input.splits[].hosts``); rack-local: a
    replica's node is in the attempt node's rack (``racks``: node name to the label topology.mrsched.dev/rack,
    of the nodes the operator knows); off-rack otherwise. A map without host information (no explicit splits,
    or a split without hosts), or whose node is no longer known, counts as unknown.
    """
    counts: dict[str, int] = dict.fromkeys(LOCALITY_LEVELS, 0)
    for task in state.of("map"):
        split = state.spec.split_of(task.index)
        hosts = split.hosts if split is not None else ()
        for attempt in task.attempts:
            if not _ran(attempt):
                continue
            node = attempt.node or ""
            level: LocalityLevel
            if not hosts:
                level = "unknown"
            elif node in hosts:
                level = "nodeLocal"
            elif node not in racks:
                level = "unknown"
            elif any(racks.get(h) == racks[node] for h in hosts):
                level = "rackLocal"
            else:
                level = "offRack"
            counts[level] += 1
    return counts


def map_locality(state: JobState, racks: Mapping[str, str]) -> dict[str, Any]:
    """``status.locality``: :func:`map_locality_counts` as fractions of the started map attempts (0 before
    any started), and their number."""
    counts = map_locality_counts(state, racks)
    total = sum(counts.values())
    shares: dict[str, Any] = {k: round(v / total, 4) if total else 0.0 for k, v in counts.items()}
    shares["mapAttempts"] = total
    return shares


def last_map_finish(state: JobState) -> float | None:
    """When the job's last map finished (each map at its first successful attempt), None until all have."""
    ends = []
    for task in state.of("map"):
        done = [a.finished or a.started or a.created for a in task.attempts if a.phase == "Succeeded"]
        if not done:
            return None
        ends.append(min(done))
    return max(ends) if ends else None


def starvation_seconds(state: JobState) -> float:
    """Seed 003 §III's starvation time of the job's reduces: the mean, over the reduces that started after
    the last map finished, of how long after it they started (start − lastMapFinish); 0 when none did, or
    while maps still run. A reduce starts when its first attempt started (the job first had its slot)."""
    end = last_map_finish(state)
    if end is None:
        return 0.0
    waits = []
    for task in state.of("reduce"):
        starts = [a.started for a in task.attempts if _ran(a) and a.started is not None]
        if starts and min(starts) > end:
            waits.append(min(starts) - end)
    return sum(waits) / len(waits) if waits else 0.0


def reduce_idle_seconds(state: JobState, now: float) -> float:
    """Seconds the job's reduce attempts held their slots before the last map finished (seed 003 §III: reduces
    launched early wait for map output, idle): Σ over attempts of max(0, min(lastMapFinish, end) − start),
    an attempt still running ending now, and ``now`` standing in for lastMapFinish while maps still run."""
    cut = last_map_finish(state)
    cut = now if cut is None else cut
    idle = 0.0
    for task in state.of("reduce"):
        for attempt in task.attempts:
            if not _ran(attempt) or attempt.started is None:
                continue
            end = attempt.finished if attempt.finished is not None else now
            idle += max(0.0, min(cut, end) - attempt.started)
    return idle


def compute(
    state: JobState,
    verdict: Verdict,
    policy: str,
    now: float,
    backoff: tuple[float, float],
    racks: Mapping[str, str] | None = None,
    unplaceable: tuple[str, str] | None = None,
) -> tuple[dict[str, Any], list[Transition]]:
    """The new status, and the transitions since the old one (each an Event); ``racks`` maps the known nodes
    to their racks (for ``status.locality``); ``unplaceable``: why no worker node could run the job
    (``fit.unplaceable``), shown as the condition ``Unplaceable`` while it holds."""
    old = state.status
    maps = state.counters("map", now, *backoff)
    reduces = state.counters("reduce", now, *backoff)
    total = maps["total"] + reduces["total"]
    done = maps["succeeded"] + reduces["succeeded"]
    # A finished job's pods may be gone (pruned after finishedPodTTLSeconds): its start is then the recorded one.
    start = state.first_start() or parse_time(old.get("startTime"))
    status: dict[str, Any] = {
        "phase": verdict.phase,
        "policy": policy,
        "maps": maps,
        "reduces": reduces,
        "mapsCompleted": f"{maps['succeeded']}/{maps['total']}",
        "reducesCompleted": f"{reduces['succeeded']}/{reduces['total']}",
        "progress": int(100 * done / total) if total else 100,
        "observedGeneration": state.generation,
        "user": state.spec.user,
        "outputPath": state.spec.output_dir,
        "tasks": state.record(),
    }
    if state.finished_phase and all(k in old for k in FROZEN_AT_COMPLETION):
        status.update({k: old[k] for k in FROZEN_AT_COMPLETION})
    else:
        status["locality"] = map_locality(state, racks or {})
        status["starvationSeconds"] = round(starvation_seconds(state), 3)
        # While maps run, the idle time grows with the clock: counted up to the last multiple of
        # IDLE_RESOLUTION_S only, so that it does not cost a status write every round.
        status["reduceIdleSeconds"] = round(
            reduce_idle_seconds(state, now - now % IDLE_RESOLUTION_S if verdict.phase == "Running" else now),
            3,
        )
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
    if unplaceable is not None or "Unplaceable" in old_conditions:  # shown once it has held
        blocked = unplaceable is not None and verdict.phase == "Pending"
        reason, message = (
            unplaceable if blocked and unplaceable else ("Placeable", "a worker node can run the job")
        )
        wanted["Unplaceable"] = (blocked, reason, message)
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
            warning = kind in ("Failed", "Unplaceable")
            transitions.append(Transition("Warning" if warning else "Normal", reason, message))
    status["conditions"] = conditions
    return status, transitions


def invalid(old: dict[str, Any], message: str, now: float, reason: str = "InvalidSpec") -> dict[str, Any]:
    """The status of a job whose spec the operator cannot run (``jobspec.InvalidSpec``) or may not run
    (``jobpolicy.NotAllowed``): Failed with ``reason``, saying why; the spec is immutable, so it never runs."""
    previous = {c["type"]: c for c in old.get("conditions") or []}.get("Failed")
    since = previous["lastTransitionTime"] if previous and previous.get("status") == "True" else rfc3339(now)
    return {
        "phase": "Failed",
        "reason": reason,
        "message": message,
        "completionTime": old.get("completionTime") or rfc3339(now),
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": since,
            }
        ],
    }
