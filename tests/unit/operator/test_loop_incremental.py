"""The loop's rounds cost what changed (jobcache): over an API server held in memory, a round after nothing
changed reads no pod and rebuilds no job, and one pod's change rebuilds its job alone, while what a round must
still do on time (a failed task's retry, a node going NotReady) still happens."""

from __future__ import annotations

import copy
import itertools
from typing import Any, cast

import pytest

from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import ATTEMPT_LABEL, INDEX_LABEL, JOB_UID_LABEL, TYPE_LABEL
from mrsched.operator.scheduling.loop import SchedulingLoop
from mrsched.policies import make_policy

T0 = 1_000_000.0


def rfc3339(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MemoryApi:
    """The part of ClusterApi a round uses, over dicts; every write bumps the object's resourceVersion as an
    API server does. ``nodes`` / ``jobs`` / ``pods`` may be changed between rounds by the test."""

    def __init__(self) -> None:
        self.versions = itertools.count(100)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.status_patches = 0
        self.created_at = T0  # the creationTimestamp given to the pods created

    def stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["resourceVersion"] = str(next(self.versions))
        return obj

    # reads
    def list_nodes(self) -> list[dict[str, Any]]:
        return list(self.nodes.values())

    def list_jobs(self) -> list[dict[str, Any]]:
        return list(self.jobs.values())

    def list_task_pods(self) -> list[dict[str, Any]]:
        return list(self.pods.values())

    def list_other_pods_on(self) -> list[dict[str, Any]]:
        return []

    def pod_changes(self) -> Any:
        return None

    def task_pods_by_job(self) -> dict[str, tuple[Any, list[dict[str, Any]]]]:
        return ClusterApi.task_pods_by_job(cast(ClusterApi, self))

    caches = None

    def list_profiles(self, plural: str) -> list[dict[str, Any]]:
        return []

    # writes
    def patch_job_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        job = self.jobs[name]
        job["status"] = {k: v for k, v in {**job.get("status", {}), **patch}.items() if v is not None}
        self.stamp(job)
        self.status_patches += 1

    def create_pod(self, pod: dict[str, Any]) -> bool:
        pod = copy.deepcopy(pod)
        pod["metadata"]["uid"] = f"pod-{pod['metadata']['name']}"
        pod["metadata"]["creationTimestamp"] = rfc3339(self.created_at)
        pod["status"] = {"phase": "Pending"}
        self.pods[pod["metadata"]["name"]] = self.stamp(pod)
        self.created.append(pod)
        return True

    def event(self, *args: Any, **kwargs: Any) -> None:
        pass

    def node_event(self, *args: Any, **kwargs: Any) -> None:
        pass

    def delete_pod(self, namespace: str, name: str, grace_s: float | None = None) -> None:
        self.pods.pop(name, None)

    def remove_finalizer(self, namespace: str, name: str, index: int, finalizer: str) -> None:
        pod = self.pods[name]
        pod["metadata"]["finalizers"] = [f for f in pod["metadata"].get("finalizers", []) if f != finalizer]
        self.stamp(pod)

    def write_profile(self, *args: Any, **kwargs: Any) -> None:
        pass

    # the test's hand
    def run_pod(self, name: str, phase: str = "Running", at: float = T0 + 1) -> None:
        pod = self.pods[name]
        pod["status"] = {"phase": phase, "startTime": rfc3339(at)}
        if phase in ("Succeeded", "Failed"):
            pod["status"]["containerStatuses"] = [
                {
                    "name": "task",
                    "state": {
                        "terminated": {
                            "exitCode": 0 if phase == "Succeeded" else 1,
                            "startedAt": rfc3339(at),
                            "finishedAt": rfc3339(at + 1),
                        }
                    },
                }
            ]
        self.stamp(pod)


def node(name: str, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"n-{name}", "labels": {"mrsched.dev/worker": "true"}},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi"},
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": rfc3339(T0)}
            ],
        },
        "spec": {},
    }


def job(name: str, maps: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "creationTimestamp": rfc3339(T0),
            "generation": 1,
        },
        "spec": {
            "workload": {"app": "wordcount"},
            "input": {"paths": ["in"]},
            "output": {"path": f"out-{name}"},
            "maps": maps,
            "reduces": 1,
            "user": "ns",
        },
        "status": {},
    }


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many job states each round builds."""
    calls = {"build": 0}
    real = JobState.build.__func__  # type: ignore[attr-defined]

    def build(cls: type[JobState], *args: Any) -> JobState:
        calls["build"] += 1
        return cast(JobState, real(cls, *args))

    monkeypatch.setattr(JobState, "build", classmethod(build))
    return calls


def setup(clock: list[float]) -> tuple[MemoryApi, SchedulingLoop]:
    api = MemoryApi()
    for name in ("n1", "n2"):
        api.nodes[name] = api.stamp(node(name))
    for name in ("a", "b"):
        api.jobs[name] = api.stamp(job(name, maps=2))
    config = OperatorConfig(policy="fifo", probe_nodes="never", namespaces=("ns",), health_monitor=False)
    loop = SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: clock[0])
    return api, loop


def settle(api: MemoryApi, loop: SchedulingLoop) -> None:
    """Rounds until the maps are placed and every pod runs, then one more to record it."""
    for _ in range(4):
        loop.round()
        for pod in api.pods.values():
            if pod["status"]["phase"] == "Pending":
                api.run_pod(pod["metadata"]["name"])
    loop.round()


def test_a_round_after_nothing_changed_rebuilds_no_job_and_writes_nothing(counted: dict[str, int]) -> None:
    clock = [T0 + 10]
    api, loop = setup(clock)
    settle(api, loop)
    assert len(api.pods) == 4 and all(p["status"]["phase"] == "Running" for p in api.pods.values())
    counted["build"], patches, created = 0, api.status_patches, len(api.created)
    for _ in range(3):
        clock[0] += 1
        loop.round()
    assert counted["build"] == 0, "no job changed: none rebuilt"
    assert (api.status_patches, len(api.created)) == (patches, created)

    # One of b's maps succeeds: b alone is read again, records it, and then is quiet again.
    b_map = next(n for n, p in api.pods.items() if p["metadata"]["labels"][JOB_UID_LABEL] == "uid-b")
    api.run_pod(b_map, "Succeeded", at=clock[0])
    loop.round()
    assert counted["build"] == 1, counted
    assert api.jobs["b"]["status"]["maps"]["succeeded"] == 1
    settle(api, loop)  # its own status write changed b once more; its reduce may start
    counted["build"] = 0
    clock[0] += 1
    loop.round()
    assert counted["build"] == 0


def test_a_node_going_not_ready_and_a_failed_tasks_retry_still_happen_on_time(
    counted: dict[str, int],
) -> None:
    clock = [T0 + 10]
    api, loop = setup(clock)
    settle(api, loop)
    # A map of a fails: its retry waits out the backoff, with no change anywhere, and is then placed.
    a_map = next(
        n
        for n, p in api.pods.items()
        if p["metadata"]["labels"][JOB_UID_LABEL] == "uid-a" and p["metadata"]["labels"][INDEX_LABEL] == "0"
    )
    api.run_pod(a_map, "Failed", at=clock[0])
    loop.round()
    loop.round()
    retries = [p for p in api.created if p["metadata"]["labels"][ATTEMPT_LABEL] == "1"]
    assert not retries, "still backing off"
    clock[0] += loop.config.backoff_max_s + 2
    loop.round()
    retries = [p for p in api.created if p["metadata"]["labels"][ATTEMPT_LABEL] == "1"]
    assert [(p["metadata"]["labels"][TYPE_LABEL], p["metadata"]["labels"][INDEX_LABEL]) for p in retries] == [
        ("map", "0")
    ], "placed again once its retry was due, with nothing else changing"
    for pod in api.pods.values():
        if pod["status"]["phase"] == "Pending":
            api.run_pod(pod["metadata"]["name"])
    loop.round()
    loop.round()
    # A node goes NotReady: the jobs with attempts there are read again, and after the grace the pods there are
    # given up.
    lost = api.nodes["n1"]
    api.nodes["n1"] = api.stamp(node("n1", ready=False))
    on_n1 = {
        n
        for n, p in api.pods.items()
        if p["spec"].get("nodeName") == "n1" and p["status"]["phase"] == "Running"
    }
    assert on_n1 and lost is not api.nodes["n1"]
    counted["build"] = 0
    loop.round()
    assert counted["build"] == 2
    clock[0] += loop.config.node_lost_grace_s + 1
    loop.round()
    assert not on_n1 & set(api.pods), "the attempts on the lost node were given up and deleted"


def test_pods_waiting_at_their_kubelet_leave_their_job_quiet_until_the_pending_timeout_which_still_fires(
    counted: dict[str, int],
) -> None:
    """A kubelet slow to start its pods (bench-scale's: minutes) changes nothing a round reads until a pod
    changes or its pending timeout comes: the jobs are not read again meanwhile, and the timeout still gives the
    pods up and places them again."""
    clock = [T0 + 10]
    api, loop = setup(clock)
    for _ in range(6):  # placed, recorded, and read once more after its own status write: then quiet
        counted["build"] = 0
        clock[0] += 1
        loop.round()
        if api.created and counted["build"] == 0:
            break
    waiting = set(api.pods)
    assert waiting and all(p["status"]["phase"] == "Pending" for p in api.pods.values())
    assert counted["build"] == 0, "the waiting pods' jobs are taken from the cache"
    created = len(api.created)
    clock[0] = T0 + loop.config.pending_timeout_s + 1  # the pods were created at T0
    api.created_at = clock[0]
    loop.round()
    assert not waiting & set(api.pods), "given up at the pending timeout"
    for _ in range(3):
        loop.round()
    again = [p for p in api.created[created:] if p["metadata"]["labels"][ATTEMPT_LABEL] == "1"]
    assert len(again) == len(waiting) == len(api.pods), "and placed again, once"


def policy_setup(clock: list[float], policy: str) -> tuple[MemoryApi, SchedulingLoop]:
    api, _ = setup(clock)
    config = OperatorConfig(policy=policy, probe_nodes="never", namespaces=("ns",), health_monitor=False)
    return api, SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: clock[0])


@pytest.mark.parametrize("policy", ["fifo", "fair", "dara", "diagnosis"])
def test_a_policy_with_no_task_to_start_skips_rounds_in_which_nothing_changed_and_any_change_asks_it_again(
    policy: str,
) -> None:
    clock = [T0 + 10]
    api, loop = policy_setup(clock, policy)
    settle(api, loop)
    asked = {"rounds": 0}
    real = loop.policy(policy).schedule_round

    def counting(*args: Any) -> Any:
        asked["rounds"] += 1
        return real(*args)

    loop.policy(policy).schedule_round = counting  # type: ignore[method-assign]
    for _ in range(3):
        clock[0] += 1
        stats = loop.round()
    assert stats.skipped == [policy] and asked["rounds"] == 0, "every task runs, nothing changed: skipped"

    # A kubelet's status heartbeat (a new Node object, the same node by value) changes nothing it reads.
    api.nodes["n1"]["status"]["conditions"][0]["lastHeartbeatTime"] = rfc3339(clock[0])
    api.stamp(api.nodes["n1"])
    assert loop.round().skipped == [policy] and asked["rounds"] == 0

    # A node changes (a new label: a new reading of it): the policy is asked again, once.
    api.nodes["n2"]["metadata"]["labels"]["extra"] = "x"
    api.stamp(api.nodes["n2"])
    assert loop.round().skipped == [] and asked["rounds"] == 1
    assert loop.round().skipped == [policy]

    # A map succeeds: its job is read, the outcome learnt, and the policy asked (its reduce may now start).
    a_map = next(n for n, p in api.pods.items() if p["metadata"]["labels"][JOB_UID_LABEL] == "uid-a")
    api.run_pod(a_map, "Succeeded", at=clock[0])
    assert loop.round().skipped == [] and asked["rounds"] == 2

    # A new job: asked, and its maps placed.
    settle(api, loop)
    assert loop.round().skipped == [policy]
    api.jobs["c"] = api.stamp(job("c", maps=1))
    stats = loop.round()
    assert stats.skipped == [] and stats.created >= 1, stats


def test_a_policy_that_adapts_on_every_heartbeat_is_asked_every_round() -> None:
    clock = [T0 + 10]
    api, loop = policy_setup(clock, "adaptive-slots")
    settle(api, loop)
    for _ in range(3):
        clock[0] += 1
        assert loop.round().skipped == []


def test_dara_learns_the_same_from_a_map_whether_or_not_the_quiet_rounds_before_its_end_were_asked() -> None:
    """The skipped rounds only postpone the per-node ∫ containers dt to the next round's advance
    (dara/scheduling.py ``skips_quiet_rounds``): the observation a finished map yields, its mix, is the same."""
    learnt = []
    for skipping in (True, False):
        clock = [T0 + 10]
        api, loop = policy_setup(clock, "dara")
        if not skipping:
            loop._quiet.skip = lambda *args: False  # type: ignore[method-assign]
        settle(api, loop)
        skipped = 0
        for _ in range(5):
            clock[0] += 7
            skipped += len(loop.round().skipped)
        assert skipped == (5 if skipping else 0)
        a_map = next(n for n, p in api.pods.items() if p["metadata"]["labels"][JOB_UID_LABEL] == "uid-a")
        api.run_pod(a_map, "Succeeded", at=clock[0] + 3)  # learnt at the next round, as the loop hears of it
        clock[0] += 7
        loop.round()
        dara = loop.policy("dara")
        assert dara.observations, "the map's outcome was learnt"  # type: ignore[attr-defined]
        learnt.append(dara.observations[-1])  # type: ignore[attr-defined]
    assert learnt[0].duration_s == learnt[1].duration_s
    assert learnt[0].mix == pytest.approx(learnt[1].mix)


def test_the_operator_builds_the_policy_the_simulator_builds_unless_its_options_say_otherwise() -> None:
    """Eq 4.16's exhaustive search is exponential in the jobs at once: DARA and diagnosis enumerate at most
    200,000 mixes by default, the same default in the operator as in the simulator (make_policy), so that the
    simulator's numbers are the operator's policy's; ``policyOptions`` can still ask for the thesis's search."""
    clock = [T0]
    api, _ = setup(clock)
    for name in ("dara", "diagnosis"):
        simulated = make_policy(name)
        config = OperatorConfig(policy="fair", probe_nodes="never", namespaces=("ns",), health_monitor=False)
        loop = SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: clock[0])
        assert loop.policy(name).config == simulated.config  # type: ignore[attr-defined]
        assert simulated.config.exhaustive_limit == 200_000  # type: ignore[attr-defined]
        configured = OperatorConfig(
            policy=name,
            policy_options={"exhaustiveLimit": None},
            probe_nodes="never",
            namespaces=("ns",),
            health_monitor=False,
        )
        loop = SchedulingLoop(cast(ClusterApi, api), configured, clock=lambda: clock[0])
        assert loop.policy(name).config.exhaustive_limit is None  # type: ignore[attr-defined]
