"""The task record in a job's status (``taskrecord``) and the job state built from it and the pods: deleted pods
neither re-run finished tasks, nor reset the backoff, nor free an attempt number (issue 20, defect 2)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mrsched.operator.model import status as job_status
from mrsched.operator.model import taskrecord
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import OUTPUT_CONFLICT_EXIT, PodAttempt, TaskType


def body(status: dict[str, Any] | None = None, maps: int = 4, backoff: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "job", "namespace": "ns", "uid": "uid-1", "creationTimestamp": None},
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"paths": ["in"]},
            "output": {"path": "out"},
            "maps": maps,
            "reduces": 1,
            "backoffLimit": backoff,
        },
        "status": status or {},
    }


def pod(kind: TaskType, index: int, n: int, phase: str, exit_code: int | None = None) -> PodAttempt:
    return PodAttempt(
        name=f"job-uid-1-{kind[0]}{index:05d}-a{n}",
        kind=kind,
        index=index,
        attempt=n,
        node="a",
        phase=phase,  # type: ignore[arg-type]
        created=100.0 + n,
        started=101.0 + n,
        finished=110.0 + n if phase in ("Succeeded", "Failed") else None,
        exit_code=exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1),
    )


def test_the_encoding_round_trips_and_stays_small() -> None:
    rng = random.Random(7)
    for _ in range(200):
        rec = taskrecord.KindRecord(
            attempts={i: rng.choice((1, 1, 1, 2, 3)) for i in rng.sample(range(500), rng.randint(0, 500))},
            succeeded=set(rng.sample(range(500), rng.randint(0, 500))),
            failed={i: set(rng.sample(range(4), rng.randint(1, 3))) for i in rng.sample(range(500), 5)},
        )
        assert taskrecord.KindRecord.parse(rec.render()) == rec
    # 10,000 maps that each ran once and succeeded: a few bytes, not a field per task.
    every = taskrecord.KindRecord(attempts=dict.fromkeys(range(10_000), 1), succeeded=set(range(10_000)))
    assert every.render() == {"attempts": "0-9999=1", "succeeded": "0-9999", "failed": ""}


def test_an_unreadable_record_starts_empty_and_the_pods_still_count() -> None:
    record = taskrecord.parse({"tasks": {"map": {"attempts": "x=1", "succeeded": "0-1"}}})
    assert record["map"] == taskrecord.KindRecord()
    state = JobState.build(body({"tasks": {"map": {"succeeded": "zz"}}}), [pod("map", 0, 0, "Succeeded")])
    assert state.tasks[("map", 0)].succeeded


def test_a_finished_task_whose_pod_was_deleted_is_not_run_again() -> None:
    first = JobState.build(body(), [pod("map", 0, 0, "Succeeded"), pod("map", 1, 0, "Running")])
    status = {"tasks": first.record()}
    # The pod of map 0 is gone (pod GC, a user): the record still says it succeeded.
    again = JobState.build(body(status), [pod("map", 1, 0, "Running")])
    assert again.tasks[("map", 0)].succeeded
    assert again.tasks[("map", 0)].next_attempt == 1, "its attempt number is not reused either"
    assert again.counters("map", 200.0, 2.0, 60.0)["succeeded"] == 1


def test_failures_survive_their_pods_and_the_backoff_limit_still_holds() -> None:
    # backoffLimit 1: two failed attempts fail the job, even when the first failure's pod is gone.
    first = JobState.build(body(backoff=1), [pod("map", 2, 0, "Failed")])
    assert first.failed_task() is None
    status = {"tasks": first.record()}
    later = JobState.build(body(status, backoff=1), [pod("map", 2, 1, "Failed")])
    task = later.tasks[("map", 2)]
    assert task.failure_count == 2 and task.next_attempt == 2
    assert later.failed_task() is task
    verdict = job_status.decide(later)
    assert verdict.reason == "BackoffLimitExceeded" and "failed 2 times" in verdict.message
    # Both pods gone: still failed twice, and the message says so without a pod to quote.
    gone = JobState.build(body({"tasks": later.record()}, backoff=1), [])
    assert job_status.decide(gone).message == "task map-00002 failed 2 times (backoffLimit 1)"


def test_attempts_are_recorded_before_their_pods_exist() -> None:
    state = JobState.build(body(), [])
    record = state.record([("map", 3, 0), ("reduce", 0, 0)])
    assert record["map"]["attempts"] == "3=1" and record["reduce"]["attempts"] == "0=1"
    # The create failed or its pod was deleted before any round saw it: the number is still used.
    again = JobState.build(body({"tasks": record}), [])
    assert again.tasks[("map", 3)].next_attempt == 1


def test_an_outcome_is_recorded_once_and_known_as_recorded_after() -> None:
    failed = pod("map", 0, 0, "Failed")
    first = JobState.build(body(), [failed])
    assert not first.tasks[("map", 0)].outcome_recorded(failed), "new: announce and learn it"
    later = JobState.build(body({"tasks": first.record()}), [failed])
    assert later.tasks[("map", 0)].outcome_recorded(failed), "a restarted operator must not count it again"


@pytest.mark.parametrize("kind", ["map", "commit"])
def test_an_output_conflict_fails_the_job_at_once(kind: TaskType) -> None:
    state = JobState.build(body(backoff=5), [pod(kind, 0, 0, "Failed", exit_code=OUTPUT_CONFLICT_EXIT)])
    verdict = job_status.decide(state)
    assert (verdict.phase, verdict.reason) == ("Failed", "OutputExists")
