"""The plugin-set runner (core/framework/profile.py): queue order, the policy's filters after Kubernetes',
weighted scores with the earliest offered node among equals and the true runner-up, reserve seen by the next
task, a permit's refusal given back, and the policy's hooks and state forwarded to its plugins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mrsched.core.framework.profile import PluginPolicy, Profile
from mrsched.core.model import ClusterSnapshot, Job, Node, Placement, Resources, Task, TaskOutcome


def cluster(jobs: list[Job], slots: int = 1) -> ClusterSnapshot:
    nodes = {n: Node(n, 4, 8192, map_slots=slots, reduce_slots=1) for n in ("a", "b", "c")}
    return ClusterSnapshot(0.0, nodes, {n: [] for n in nodes}, jobs)


def job(job_id: str, submit: float, maps: int = 2, nodes: frozenset[str] | None = None) -> Job:
    return Job(
        job_id,
        "wordcount",
        submit,
        [Task(job_id, "map", i, 64.0) for i in range(maps)],
        [],
        map_request=Resources(1.0, 1024.0),
        nodes=nodes,
    )


class LatestFirst:
    name = "LatestFirst"
    depends_on_jobs_only = True

    def order(self, snapshot: ClusterSnapshot, jobs: Sequence[Job]) -> list[Job]:
        return sorted(jobs, key=lambda j: -j.submit_s)


class Fixed:
    """Score: a fixed number per node."""

    def __init__(self, name: str, by_node: dict[str, float]) -> None:
        self.name, self.by_node = name, by_node

    def score(self, snapshot: ClusterSnapshot, task: Task, node: str) -> float:
        return self.by_node[node]


class Refuse:
    name = "Refuse"

    def __init__(self, node: str) -> None:
        self.node = node
        self.reserved: list[Placement] = []
        self.finished: list[TaskOutcome] = []

    def filter(self, snapshot: ClusterSnapshot, task: Task, node: str) -> str | None:
        return "refused" if node == self.node else None

    def reserve(self, snapshot: ClusterSnapshot, placement: Placement) -> None:
        self.reserved.append(placement)

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        self.finished.append(outcome)

    def state(self) -> dict[str, Any]:
        return {"apps": {"wordcount": {"refused": self.node}}}


class NotOn:
    name = "NotOn"

    def __init__(self, node: str) -> None:
        self.node = node

    def permit(self, snapshot: ClusterSnapshot, placement: Placement) -> bool:
        return placement.node != self.node


class Sample(PluginPolicy):
    name = "sample"

    def __init__(self, profile: Profile) -> None:
        self._profile = profile
        super().__init__()

    def profile(self) -> Profile:
        return self._profile


def test_jobs_go_in_queue_order_each_task_to_the_highest_weighted_score() -> None:
    early, late = job("early", 0.0), job("late", 1.0)
    spread = Fixed("Spread", {"a": 3.0, "b": 1.0, "c": 2.0})
    against = Fixed("Against", {"a": 0.0, "b": 3.0, "c": 0.0})  # weight 1: b's 4 beats a's 3
    policy = Sample(Profile(queue_sort=LatestFirst(), scores=((spread, 1.0), (against, 1.0))))
    placed = policy.schedule_round(cluster([early, late]), ["a", "b", "c"])
    assert [(p.task.job_id, p.node) for p in placed] == [("late", "b"), ("late", "a"), ("early", "c")]
    assert placed[0].explanation.score == 4.0 and placed[0].explanation.runner_up == "a"
    assert (
        "LatestFirst" in placed[0].explanation.reason and "Spread + Against" in placed[0].explanation.reason
    )


def test_equal_scores_go_to_the_earliest_offered_node_and_the_offer_is_kept_to() -> None:
    policy = Sample(
        Profile(queue_sort=LatestFirst(), scores=((Fixed("Flat", dict.fromkeys("abc", 1.0)), 1.0),))
    )
    placed = policy.schedule_round(cluster([job("j", 0.0, maps=3)]), ["c", "b"])
    assert [p.node for p in placed] == ["c", "b"]  # node a was not offered


def test_the_policy_filters_come_after_kubernetes_and_reserve_is_seen_by_the_next_task() -> None:
    refuse = Refuse("a")
    policy = Sample(
        Profile(
            queue_sort=LatestFirst(),
            filters=(refuse,),
            scores=((Fixed("F", dict.fromkeys("abc", 0.0)), 1.0),),
        )
    )
    only_ab = job(
        "j", 0.0, maps=3, nodes=frozenset({"a", "b"})
    )  # Kubernetes admits a and b; the policy refuses a
    placed = policy.schedule_round(cluster([only_ab]), ["a", "b", "c"])
    assert [p.node for p in placed] == ["b"]  # b's one slot taken by the first map: the others fit nowhere
    assert refuse.reserved == placed


def test_a_refused_permit_gives_the_placement_back_and_the_task_waits() -> None:
    policy = Sample(
        Profile(
            queue_sort=LatestFirst(),
            scores=((Fixed("PreferA", {"a": 2.0, "b": 1.0, "c": 0.0}), 1.0),),
            permits=(NotOn("a"),),
        )
    )
    j = job("j", 0.0, maps=2)
    snapshot = cluster([j])
    placed = policy.schedule_round(snapshot, ["a", "b", "c"])
    assert (
        placed == []
    )  # each map's best node is a, whose permit refuses: both wait (no second-best fallback)
    assert snapshot.running["a"] == [] and all(t.pending for t in j.maps) and j.running_maps == 0


def test_hooks_and_state_reach_the_plugins() -> None:
    refuse = Refuse("c")
    policy = Sample(
        Profile(
            queue_sort=LatestFirst(),
            filters=(refuse,),
            scores=((refuse_score := Fixed("F", dict.fromkeys("abc", 0.0)), 1.0),),
        )
    )
    assert refuse_score is policy.plugins.scores[0][0]
    j = job("j", 0.0)
    outcome = TaskOutcome(j.maps[0], "a", 0.0, 5.0, True)
    policy.on_task_finished(outcome)
    assert refuse.finished == [outcome]
    assert policy.state() == {"apps": {"wordcount": {"refused": "c"}}}
