"""A job's locality, reduce starvation (seed 003 §III) and reduce idle time in its status, its map output by
node for the policies (seed 003's w_i(u)), and its user, all from hand-made pod attempts."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mrsched.core.report import TaskReport
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model import status as job_status
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import PodAttempt, TaskType

RACKS = {"a1": "rack-1", "a2": "rack-1", "b1": "rack-2", "b2": "rack-2"}
SPLIT = 8 * 2**20


def body(
    maps: int = 4, reduces: int = 2, hosts: list[list[str]] | None = None, **spec: Any
) -> dict[str, Any]:
    splits = [
        {"path": f"in/part-{i}", "start": 0, "length": SPLIT, **({"hosts": h} if h else {})}
        for i, h in enumerate(hosts or [[] for _ in range(maps)])
    ]
    return {
        "metadata": {"name": "job", "namespace": "team-a", "uid": "uid-1", "creationTimestamp": None},
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"splits": splits},
            "output": {"path": "out"},
            "maps": maps,
            "reduces": reduces,
            **spec,
        },
    }


def attempt(
    kind: TaskType,
    index: int,
    node: str | None,
    started: float | None,
    finished: float | None = None,
    *,
    n: int = 0,
    phase: str = "",
    reason: str = "",
    written: int | None = None,
) -> PodAttempt:
    phase = phase or (
        "Succeeded" if finished is not None else "Running" if started is not None else "Pending"
    )
    report = TaskReport("succeeded", written_bytes=written) if written is not None else None
    return PodAttempt(
        name=f"job-{kind[0]}{index:05d}-a{n}",
        kind=kind,
        index=index,
        attempt=n,
        node=node,
        phase=phase,  # type: ignore[arg-type]
        created=started or 0.0,
        started=started,
        finished=finished,
        reason=reason,
        report=report,
    )


def state(attempts: list[PodAttempt], **kwargs: Any) -> JobState:
    return JobState.build(body(**kwargs), attempts)


def test_user_defaults_to_the_namespace() -> None:
    assert JobSpec.from_resource(body()).user == "team-a"
    assert JobSpec.from_resource(body(user="alice")).user == "alice"
    assert JobSpec.from_resource(body(user="")).user == "team-a"


def test_locality_counts_node_rack_and_off_rack_from_split_hosts() -> None:
    hosts = [["a1"], ["a1", "b1"], ["b2"], ["a2"]]
    attempts = [
        attempt("map", 0, "a1", 10.0, 20.0),  # on its replica's node
        attempt("map", 1, "a2", 10.0, 20.0),  # a replica (a1) in rack-1
        attempt("map", 2, "a1", 10.0, phase="Failed", finished=15.0),  # replica in rack-2 only: off-rack
        attempt("map", 2, "b2", 16.0, n=1),  # its retry, node-local
        attempt("map", 3, None, None),  # not started: not counted
        attempt("map", 3, "b1", 9.0, 9.0, n=1, phase="Failed", reason="OutOfcpu"),  # refused: never ran
    ]
    s = state(attempts, hosts=hosts)
    assert job_status.map_locality_counts(s, RACKS) == {
        "nodeLocal": 2,
        "rackLocal": 1,
        "offRack": 1,
        "unknown": 0,
    }
    assert job_status.map_locality(s, RACKS) == {
        "nodeLocal": 0.5,
        "rackLocal": 0.25,
        "offRack": 0.25,
        "unknown": 0.0,
        "mapAttempts": 4,
    }


def test_maps_without_hosts_or_on_unknown_nodes_count_as_unknown() -> None:
    hosts = [[], ["a1"], ["zz"], ["a1"]]
    attempts = [
        attempt("map", 0, "a1", 1.0),  # no host information
        attempt("map", 1, "gone", 1.0),  # its node is no longer known
        attempt("map", 2, "a1", 1.0),  # its host is no node of ours: off-rack, as the core's locality says
        attempt("map", 3, "a1", 1.0, 2.0, phase="Failed", reason="NodeLost"),  # ran, then its node was lost
    ]
    s = state(attempts, hosts=hosts)
    assert job_status.map_locality_counts(s, RACKS) == {
        "nodeLocal": 1,
        "rackLocal": 0,
        "offRack": 1,
        "unknown": 2,
    }
    assert job_status.map_locality(state([]), RACKS)["nodeLocal"] == 0.0


def test_starvation_is_the_mean_delay_of_reduces_started_after_the_last_map() -> None:
    maps = [
        attempt("map", 0, "a1", 0.0, 10.0),
        attempt("map", 1, "a1", 0.0, 30.0),  # the last map ...
        attempt("map", 1, "a2", 5.0, 40.0, n=1),  # ... at its first success: a later duplicate does not count
    ]
    early = attempt("reduce", 0, "b1", 5.0, 50.0)  # before the last map: not starved
    late = [attempt("reduce", 1, "b1", 34.0, 60.0), attempt("reduce", 2, "b2", 40.0)]
    s = state([*maps, early, *late], maps=2, reduces=3, hosts=[["a1"], ["a1"]])
    assert job_status.last_map_finish(s) == 30.0
    assert job_status.starvation_seconds(s) == pytest.approx((4.0 + 10.0) / 2)
    # A reduce retried after the last map started when its first attempt did.
    retried = attempt("reduce", 0, "b1", 35.0, n=1)
    s = state([*maps, attempt("reduce", 0, "b1", 5.0, 8.0, phase="Failed"), retried], maps=2, reduces=1)
    assert job_status.starvation_seconds(s) == 0.0
    # Until every map finished there is no starvation yet.
    assert job_status.starvation_seconds(state([maps[0], late[0]], maps=2, reduces=3)) == 0.0


def test_reduce_idle_is_slot_time_held_before_the_last_map_finished() -> None:
    maps = [attempt("map", 0, "a1", 0.0, 10.0), attempt("map", 1, "a1", 0.0, 30.0)]
    reduces = [
        attempt("reduce", 0, "b1", 5.0, 50.0),  # 25 s before the last map
        attempt("reduce", 1, "b1", 8.0, 12.0, phase="Failed"),  # 4 s, then failed
        attempt("reduce", 1, "b2", 20.0, n=1),  # still running: 10 s
        attempt("reduce", 2, "b2", 33.0),  # after the last map: 0
    ]
    s = state([*maps, *reduces], maps=2, reduces=3)
    assert job_status.reduce_idle_seconds(s, now=100.0) == pytest.approx(25 + 4 + 10)
    # While maps still run, the idle time counts up to now.
    running = state([maps[0], attempt("map", 1, "a1", 0.0), reduces[0]], maps=2, reduces=3)
    assert job_status.reduce_idle_seconds(running, now=22.0) == pytest.approx(17.0)


def test_status_carries_the_fields_and_freezes_them_at_completion() -> None:
    attempts = [
        attempt("map", 0, "a1", 0.0, 10.0),
        attempt("map", 1, "b1", 0.0, 20.0),
        attempt("reduce", 0, "a1", 4.0, 30.0),
        attempt("reduce", 1, "b1", 25.0, 31.0),
    ]
    s = state(attempts, maps=2, reduces=2, hosts=[["a1"], ["a2"]])
    verdict = job_status.decide(s)
    new, _ = job_status.compute(s, verdict, "coupling", 40.0, (1.0, 10.0), RACKS)
    assert new["user"] == "team-a"
    assert new["locality"]["nodeLocal"] == 0.5 and new["locality"]["offRack"] == 0.5
    assert new["starvationSeconds"] == 5.0
    assert new["reduceIdleSeconds"] == 16.0
    # Once the job has finished its pods and nodes may go: what the status says at completion stays.
    finished = state([], maps=2, reduces=2)
    finished.status = {**new, "phase": "Succeeded"}
    again, _ = job_status.compute(finished, job_status.decide(finished), "coupling", 99.0, (1.0, 10.0), {})
    assert {k: again[k] for k in job_status.FROZEN_AT_COMPLETION} == {
        k: new[k] for k in job_status.FROZEN_AT_COMPLETION
    }


def test_running_job_idle_time_moves_in_steps() -> None:
    attempts = [attempt("map", 0, "a1", 0.0), attempt("reduce", 0, "a1", 1.0)]
    s = state(attempts, maps=1, reduces=1)
    seen = {
        job_status.compute(s, job_status.decide(s), "fair", now, (1.0, 10.0), RACKS)[0]["reduceIdleSeconds"]
        for now in (10.0, 11.0, 12.5, 14.9)
    }
    assert seen == {9.0}


def test_job_metrics_are_observed_by_policy_and_level() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    metrics.job_finished("coupling", 5.0, 16.0, {"nodeLocal": 3, "rackLocal": 0, "offRack": 1, "unknown": 0})
    r = metrics.registry
    assert r.get_sample_value("mrsched_job_starvation_seconds_sum", {"policy": "coupling"}) == 5.0
    assert r.get_sample_value("mrsched_job_reduce_idle_seconds_count", {"policy": "coupling"}) == 1.0
    assert (
        r.get_sample_value("mrsched_map_locality_total", {"policy": "coupling", "level": "node-local"}) == 3.0
    )
    assert (
        r.get_sample_value("mrsched_map_locality_total", {"policy": "coupling", "level": "off-rack"}) == 1.0
    )


def test_map_output_by_node_from_reports_else_the_input_size() -> None:
    attempts = [
        attempt("map", 0, "a1", 0.0, 10.0, written=3 * 2**20),
        attempt("map", 1, "a1", 0.0, 12.0, written=2**20),
        attempt("map", 1, "b1", 0.0, 14.0, n=1, written=5 * 2**20),  # a later duplicate: not kept
        attempt("map", 2, "b1", 0.0, 11.0),  # no report: its split's size stands in
        attempt("map", 3, "b2", 0.0),  # running: no output yet
    ]
    s = state(attempts)
    job = snap.core_job(s, 20.0, (1.0, 10.0))
    assert job.map_output_mb == {"a1": 4.0, "b1": SPLIT / 2**20}
    assert job.user == "team-a"
    # Updated in place as maps finish (the policies keep the Job object).
    s2 = state([*attempts[:4], attempt("map", 3, "b2", 0.0, 21.0, written=2**20)])
    same = snap.core_job(s2, 22.0, (1.0, 10.0), job)
    assert same is job and job.map_output_mb == {"a1": 4.0, "b1": 8.0, "b2": 1.0}
