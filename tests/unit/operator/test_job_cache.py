"""Quiet jobs (jobcache): a job is taken from the cache only while its key holds and none of its timers is due;
each timer the round depends on makes the job read again when it comes (a pod waiting at its kubelet: its start
grace or pending timeout), and what cannot wait (a pod not yet bound, a node not Ready) keeps it read every
round; a job not started is read again when any worker changes."""

from __future__ import annotations

import math
from typing import Any

from mrsched.core.model import Node
from mrsched.operator.jobs.jobcache import JobCache, QuietJob, nodes_of, quiet_until
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import PodAttempt
from mrsched.operator.model.snapshot import LiveAttempts, NodeInfo, core_job
from mrsched.operator.model.status import IDLE_RESOLUTION_S

NOW = 1000.0
CONFIG = OperatorConfig()


def worker(name: str, ready: bool = True, rack: str = "r1") -> NodeInfo:
    return NodeInfo(Node(name, 4, 8192, rack=rack), ready=ready, schedulable=True, taints=(), labels={})


WORKERS = {"a": worker("a"), "b": worker("b")}


def body(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "job", "namespace": "ns", "uid": "uid-1", "creationTimestamp": None},
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"paths": ["in"]},
            "output": {"path": "out"},
            "maps": 2,
            "reduces": 1,
            "backoffLimit": 3,
            **spec,
        },
        "status": status or {},
    }


def attempt(
    index: int, n: int, phase: str, kind: str = "map", node: str | None = "a", **kw: Any
) -> PodAttempt:
    finished = 900.0 + n if phase in ("Succeeded", "Failed") else None
    return PodAttempt(
        name=f"job-uid-1-{kind[0]}{index:05d}-a{n}",
        kind=kind,  # type: ignore[arg-type]
        index=index,
        attempt=n,
        node=node,
        phase=phase,  # type: ignore[arg-type]
        created=800.0 + n,
        started=801.0 + n if phase != "Pending" else None,
        finished=kw.pop("finished", finished),
        exit_code=0 if phase == "Succeeded" else 1,
        **kw,
    )


def until(
    pods: list[PodAttempt], phase: str = "Running", workers: dict[str, NodeInfo] = WORKERS, **kw: Any
) -> float:
    state = JobState.build(body(**kw), pods)
    return quiet_until(state, phase, NOW, CONFIG, workers, has_pods=bool(pods))


def test_a_job_whose_pods_all_run_on_ready_nodes_has_no_timer() -> None:
    assert until([attempt(0, 0, "Running"), attempt(1, 0, "Running", node="b")]) == math.inf
    assert until([attempt(0, 0, "Succeeded"), attempt(1, 0, "Running")]) == math.inf


def test_anything_in_flight_is_read_every_round() -> None:
    assert until([attempt(0, 0, "Pending", node=None)]) == NOW, "kube-scheduler's verdicts"
    assert until([attempt(0, 0, "Pending", reason="InvalidImageName")]) == NOW, "it fails the job"
    assert until([attempt(0, 0, "Pending", node="gone")]) == NOW, "its node is gone"
    assert until([attempt(0, 0, "Running", node="gone")]) == NOW, "its node is gone"
    not_ready = {**WORKERS, "a": worker("a", ready=False)}
    assert until([attempt(0, 0, "Running")], workers=not_ready) == NOW, "the node-lost grace runs"
    assert until([attempt(0, 0, "Running")], phase="Pending") == NOW, "a job starting"
    every_task_done = [
        attempt(0, 0, "Succeeded"),
        attempt(1, 0, "Succeeded"),
        attempt(0, 0, "Succeeded", "reduce"),
    ]
    assert until(every_task_done) == NOW, "its commit is due"


def test_a_pod_bound_and_not_yet_running_is_read_again_when_its_start_grace_or_pending_timeout_is_due() -> (
    None
):
    """Its kubelet's progress changes the pod, and so the job's key; only its timers make the clock matter."""
    pending = attempt(0, 0, "Pending")
    assert until([pending, attempt(1, 0, "Running")]) == pending.created + CONFIG.pending_timeout_s
    pulling = attempt(0, 0, "Pending", reason="ImagePullBackOff")
    assert until([pulling]) == pulling.created + CONFIG.pod_start_grace_s
    not_ready = {**WORKERS, "a": worker("a", ready=False)}
    assert until([pending], workers=not_ready) == NOW, "the node-lost grace runs"


def test_a_job_not_started_is_held_until_it_or_a_worker_changes() -> None:
    """Its round is its Unplaceable verdict (fit.unplaceable over every worker) and its status: nothing changes
    them but its object and the workers."""
    assert until([], phase="Pending") == math.inf
    state = JobState.build(body(), [])
    cache = JobCache()
    cache.begin_round(WORKERS)
    cache.put("uid-1", QuietJob(("1", ()), math.inf, body(), state, "Pending", True, reads_every_worker=True))
    cache.begin_round(dict(WORKERS))
    assert cache.get("uid-1", ("1", ()), NOW) is not None, "the same workers, as equal objects"
    bigger = {
        **WORKERS,
        "b": NodeInfo(Node("b", 64, 8192), ready=True, schedulable=True, taints=(), labels={}),
    }
    cache.begin_round(bigger)
    assert cache.get("uid-1", ("1", ()), NOW) is None and cache.misses == {"node": 1}
    cache.begin_round(bigger)
    assert cache.get("uid-1", ("1", ()), NOW) is not None
    cache.begin_round({"a": WORKERS["a"]})
    assert cache.get("uid-1", ("1", ()), NOW) is None, "a worker gone"


def test_a_failed_task_backing_off_is_read_again_when_its_retry_is_due() -> None:
    failed = attempt(0, 0, "Failed", finished=NOW - 1)
    due = until([failed, attempt(1, 0, "Running")])
    assert due == NOW - 1 + CONFIG.backoff_base_s, due


def test_a_refusing_node_is_remembered_until_its_cooldown_ends() -> None:
    refused = attempt(0, 0, "Failed", reason="OutOfcpu", finished=NOW - 2)
    due = until([refused, attempt(0, 1, "Running"), attempt(1, 0, "Running")])
    assert due == NOW - 2 + CONFIG.node_refusal_cooldown_s, due


def test_reduce_idle_seconds_grow_with_the_clock_while_maps_run() -> None:
    early = [attempt(0, 0, "Running"), attempt(1, 0, "Succeeded"), attempt(0, 0, "Running", "reduce")]
    assert until(early) == NOW - NOW % IDLE_RESOLUTION_S + IDLE_RESOLUTION_S
    late = [attempt(0, 0, "Succeeded"), attempt(1, 0, "Succeeded"), attempt(0, 0, "Running", "reduce")]
    assert until(late) == math.inf, "maps done: the idle time is fixed"


def test_a_finished_job_waits_for_its_pods_prune_and_its_own_ttl() -> None:
    done = "1970-01-01T00:15:00Z"  # 900 s
    pods = [attempt(0, 0, "Succeeded"), attempt(1, 0, "Succeeded")]
    state = JobState.build(
        body({"phase": "Succeeded", "completionTime": done}, ttlSecondsAfterFinished=60), pods
    )
    assert quiet_until(state, "Succeeded", NOW, CONFIG, WORKERS, has_pods=True) == 960.0
    state = JobState.build(body({"phase": "Succeeded", "completionTime": done}), pods)
    assert (
        quiet_until(state, "Succeeded", NOW, CONFIG, WORKERS, has_pods=True)
        == 900.0 + CONFIG.finished_pod_ttl_s
    )
    assert quiet_until(state, "Succeeded", NOW, CONFIG, WORKERS, has_pods=False) == math.inf


def test_the_cache_answers_only_for_the_same_key_nodes_and_before_the_timer_and_until_touched() -> None:
    state = JobState.build(body(), [attempt(0, 0, "Running"), attempt(1, 0, "Succeeded", node="b")])
    nodes = nodes_of(state, WORKERS)
    assert nodes == {"a": (True, "r1"), "b": (True, "r1")}

    def held(then: dict[str, Any]) -> JobCache:
        """A cache holding the job as a round with WORKERS left it, at the start of a round with ``then``."""
        cache = JobCache()
        cache.begin_round(WORKERS)
        cache.put("uid-1", QuietJob(("5", (0, 3)), NOW + 10, body(), state, "Running", True, nodes=nodes))
        cache.begin_round(then)
        return cache

    cache = held(WORKERS)
    assert cache.get("uid-1", ("5", (0, 3)), NOW) is not None
    assert cache.get("uid-1", ("6", (0, 3)), NOW) is None, "the job changed"
    assert cache.get("uid-1", ("5", (0, 4)), NOW) is None, "one of its pods changed"
    assert cache.get("uid-1", ("5", (0, 3)), NOW + 10) is None, "a timer is due"
    assert cache.misses == {"job": 1, "pods": 1, "timer": 1}, "each miss says why"
    for changed in (
        {**WORKERS, "a": worker("a", ready=False)},
        {"a": WORKERS["a"]},
        {**WORKERS, "b": worker("b", rack="r2")},
    ):
        assert held(changed).get("uid-1", ("5", (0, 3)), NOW) is None, changed
    elsewhere = {**WORKERS, "c": worker("c", ready=False)}
    assert held(elsewhere).get("uid-1", ("5", (0, 3)), NOW) is not None, "a node it never ran on"
    node_changed = held({**WORKERS, "a": worker("a", ready=False)})
    node_changed.get("uid-1", ("5", (0, 3)), NOW)
    assert node_changed.misses == {"node": 1}
    cache.touch(["uid-1"])
    assert cache.get("uid-1", ("5", (0, 3)), NOW) is None, "touched: read again"
    assert cache.misses["new"] == 1


def test_live_attempts_are_made_again_only_for_a_job_read_again() -> None:
    """A quiet job's state and core Job are the very objects of the last round: its attempts are kept; a job read
    again (a new state) gets new ones, and an attempt not started yet (its start is the round's time) is made
    every round."""
    live = LiveAttempts()
    running = JobState.build(body(), [attempt(0, 0, "Running"), attempt(1, 0, "Running", node="b")])
    job = core_job(running, NOW, (10.0, 300.0))
    first = live.of(running, job, NOW)
    assert sorted((a.task.index, a.node, a.start_s) for a in first) == [(0, "a", 801.0), (1, "b", 801.0)]
    assert live.of(running, job, NOW + 1) is first, "the same job as last round: the same attempts"
    live.forget({"uid-other"})
    assert live.of(running, job, NOW + 1) is not first, "a job gone is forgotten"
    again = JobState.build(body(), [attempt(0, 0, "Running"), attempt(1, 0, "Running", node="b")])
    assert live.of(again, core_job(again, NOW, (10.0, 300.0)), NOW + 1) is not first, "read again: made again"
    pending = JobState.build(body(), [attempt(0, 0, "Running"), attempt(1, 0, "Pending", node="b")])
    job = core_job(pending, NOW, (10.0, 300.0))
    assert {a.start_s for a in live.of(pending, job, NOW)} == {801.0, NOW}
    assert {a.start_s for a in live.of(pending, job, NOW + 1)} == {801.0, NOW + 1}, (
        "its start is this round's"
    )
