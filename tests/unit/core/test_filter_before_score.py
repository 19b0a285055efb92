"""Kubernetes' filters come before every policy's choice: a job whose pods only some nodes admit (its node
selector, its tolerations: ``Job.nodes``) is placed on those nodes, by every registered policy, and never on
another, so that nothing is dropped after the policy chose and no task waits a round for it."""

from __future__ import annotations

import pytest

from mrsched.core.model import ClusterSnapshot, Job, Node, Placement, Resources, Task
from mrsched.core.physics import NodeCapability, TaskDemand
from mrsched.core.policy import Policy, TruePhysics
from mrsched.policies import make_policy, policy_names

NODE_NAMES = [f"n{i}" for i in range(4)]


def nodes(by_requests: bool) -> dict[str, Node]:
    """Four nodes, by requests (the operator's, kubernetes mode) or with Hadoop's fixed slots."""
    return {
        n: Node(n, 4, 8192, rack=f"r{i % 2}", node_class="fast" if i < 2 else "slow", by_requests=by_requests)
        for i, n in enumerate(NODE_NAMES)
    }


ALLOWED = frozenset({"n2", "n3"})


def jobs() -> list[Job]:
    def job(job_id: str, submit: float, nodes: frozenset[str] | None) -> Job:
        return Job(
            job_id,
            "wordcount",
            submit,
            [Task(job_id, "map", i, 64.0, (f"n{i % 4}",)) for i in range(8)],
            [Task(job_id, "reduce", i, 10.0) for i in range(2)],
            map_request=Resources(1.0, 1024.0),
            reduce_request=Resources(1.0, 1024.0),
            nodes=nodes,
        )

    # The picky job first: by submission order it is every FIFO-like policy's first choice on every node.
    return [job("picky", 0.0, ALLOWED), job("free", 1.0, None)]


def truth() -> TruePhysics:
    capabilities = {n: NodeCapability(cores=4, memory_mb=8192) for n in NODE_NAMES}
    return TruePhysics(capabilities, lambda task, node: TaskDemand(cpu_s=10.0))


def rounds(policy: Policy, count: int, by_requests: bool) -> list[Placement]:
    """``count`` rounds over every node; between rounds the running maps finish (so reduces start)."""
    js = jobs()
    running: dict[str, list] = {n: [] for n in NODE_NAMES}  # type: ignore[type-arg]
    placed: list[Placement] = []
    for job in js:
        policy.on_job_submitted(job, 0.0)
    for r in range(count):
        snapshot = ClusterSnapshot(float(r * 3), nodes(by_requests), running, js, version=r)
        placed_now = policy.schedule_round(snapshot, NODE_NAMES)
        placed += placed_now
        for p in placed_now:  # finish what was placed: the next round starts from free nodes
            p.task.running, p.task.done = False, True
            job = snapshot.job(p.task.job_id)
            if p.task.kind == "map":
                job.running_maps, job.finished_maps = job.running_maps - 1, job.finished_maps + 1
            else:
                job.running_reduces, job.finished_reduces = job.running_reduces - 1, job.finished_reduces + 1
        running = {n: [] for n in NODE_NAMES}
    return placed


@pytest.mark.parametrize("by_requests", [True, False], ids=["by-requests", "slots"])
@pytest.mark.parametrize("name", policy_names())
def test_every_policy_places_a_constrained_job_only_on_the_nodes_that_admit_it(
    name: str, by_requests: bool
) -> None:
    policy = make_policy(name, truth=truth() if name == "greedy-informed" else None)
    placed = rounds(policy, 12, by_requests)
    picky = [p.node for p in placed if p.task.job_id == "picky"]
    assert picky, f"{name} placed nothing of the constrained job"
    assert set(picky) <= ALLOWED, f"{name} placed the constrained job on {sorted(set(picky) - ALLOWED)}"
    assert any(p.task.job_id == "free" and p.node not in ALLOWED for p in placed)


def test_a_job_that_admits_no_node_is_never_placed_and_does_not_stop_the_others() -> None:
    policy = make_policy("fair")
    js = jobs()
    js[0].nodes = frozenset()
    snapshot = ClusterSnapshot(0.0, nodes(True), {n: [] for n in NODE_NAMES}, js)
    placed = policy.schedule_round(snapshot, NODE_NAMES)
    assert placed and all(p.task.job_id == "free" for p in placed)


@pytest.mark.parametrize("name", policy_names())
def test_no_policy_places_where_other_tenants_pods_hold_the_allocatable(name: str) -> None:
    """NodeResourcesFit before Score: what other pods request (ClusterSnapshot.reserved) is not free, whatever
    path a policy takes (DARA's Fair fallback once built its own snapshot without it). No check after the
    policy would catch it: the operator creates what the policy placed."""
    policy = make_policy(name, truth=truth() if name == "greedy-informed" else None)
    js = jobs()
    js[0].nodes = None
    for job in js:
        policy.on_job_submitted(job, 0.0)
    placed: list[Placement] = []
    running: dict[str, list] = {n: [] for n in NODE_NAMES}  # type: ignore[type-arg]
    for r in range(6):
        snapshot = ClusterSnapshot(float(r * 3), nodes(True), running, js, version=r)
        for full in ("n0", "n1"):
            snapshot.reserve(full, Resources(4.0, 8192.0))
        placed += policy.schedule_round(snapshot, NODE_NAMES)
        running = snapshot.running
    assert placed, f"{name} placed nothing"
    assert {p.node for p in placed} <= {"n2", "n3"}, f"{name} placed on a full node"
