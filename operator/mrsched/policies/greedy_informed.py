"""greedy-informed: greedy earliest finish time told the true physics; a yardstick, not an optimum.

Handed the hidden node capabilities and task demands (simulator only: ``TruePhysics``), it takes pending tasks
in job submission order and puts each on the offered node where it would finish first
(``physics.predicted_duration``: seed 002 Eq 3.2 with the true κ, Ω and network, stretched by the sharing at the
node's load once it joins), among the nodes with a free slot of the task's kind (by requests: where its pod's
request fits), where memory fits, and where one more task still raises the node's throughput (tasks finished per
second: the knee of seed 002 Fig 2.5).

It is a greedy heuristic, one task at a time and blind to what arrives later, so it is no bound: Fair and DARA
have beaten it (dara-wl6). It gets the same decision opportunities as every policy of a run (in hadoop mode only
the heartbeating node, in kubernetes mode every node each round) and the same per-node slots, so that what it
shows is the value of knowing the physics, not of more freedom.

A plugin set (:mod:`mrsched.core.framework.profile`): queue sort :class:`SubmissionOrder`, and
:class:`EarliestFinish` as filter, score and reserve.
"""

from __future__ import annotations

from collections.abc import Sequence

from mrsched.core.framework.profile import PluginPolicy, Profile
from mrsched.core.model import ClusterSnapshot, Job, Placement, Task
from mrsched.core.physics import predicted_duration
from mrsched.core.policy import PolicyConfigError, TruePhysics, register


class SubmissionOrder:
    """QueueSort: jobs by submission time (a stable sort: equal times keep the jobs' order)."""

    name = "SubmissionOrder"
    depends_on_jobs_only = True

    def order(self, snapshot: ClusterSnapshot, jobs: Sequence[Job]) -> list[Job]:
        return sorted(jobs, key=lambda j: j.submit_s)


class EarliestFinish:
    """Filter: the task's true memory fits beside the node's running tasks', and one more task still raises
    the node's throughput ((k+1)/t(k+1) > k/t(k), the knee of seed 002 Fig 2.5). Score: minus the task's true
    duration there at the node's load (Eq 3.2). Reserve: the node's load and memory grow by the task's."""

    name = "EarliestFinish"

    def __init__(self, truth: TruePhysics | None) -> None:
        self.truth = truth
        self._load: dict[str, int] = {}
        self._memory: dict[str, float] = {}
        self._duration: dict[tuple[str, str], float] = {}

    def begin_round(self, snapshot: ClusterSnapshot, offered: list[str]) -> None:
        truth = self._truth()
        self._load = {name: snapshot.running_on(name) for name in offered}
        self._memory = {
            name: sum(truth.demand_of(a.task, name).memory_mb for a in snapshot.running.get(name, ()))
            for name in offered
        }
        self._duration = {}

    def filter(self, snapshot: ClusterSnapshot, task: Task, node: str) -> str | None:
        truth = self._truth()
        cap, demand = truth.capabilities[node], truth.demand_of(task, node)
        if self._memory[node] + demand.memory_mb > cap.memory_mb:
            return "its memory does not fit"
        k = self._load[node]
        t = predicted_duration(cap, demand, k)
        if k and (k + 1) / t <= k / predicted_duration(cap, demand, k - 1):
            return "past the knee: one more task would lower the node's throughput"
        self._duration[task.key, node] = t
        return None

    def score(self, snapshot: ClusterSnapshot, task: Task, node: str) -> float:
        return -self._duration[task.key, node]

    def reserve(self, snapshot: ClusterSnapshot, placement: Placement) -> None:
        node = placement.node
        self._load[node] += 1
        self._memory[node] += self._truth().demand_of(placement.task, node).memory_mb
        self._duration = {}

    def _truth(self) -> TruePhysics:
        if self.truth is None:
            raise PolicyConfigError(
                "the greedy-informed policy needs the true physics: it runs only in the simulator"
            )
        return self.truth


@register
class GreedyInformed(PluginPolicy):
    name = "greedy-informed"

    def profile(self) -> Profile:
        return Profile(
            queue_sort=SubmissionOrder(),
            filters=(earliest := EarliestFinish(self.truth),),
            scores=((earliest, 1.0),),
            explain=lambda score: f"earliest finish ({-score:.1f} s) with the true physics",
        )
