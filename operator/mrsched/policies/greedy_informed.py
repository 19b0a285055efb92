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
"""

from __future__ import annotations

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, TaskType
from mrsched.core.physics import predicted_duration
from mrsched.core.policy import Policy, PolicyConfigError, register
from mrsched.policies.pending import PendingTasks


@register
class GreedyInformed(Policy):
    name = "greedy-informed"
    idle_when_nothing_pending = True  # stateless: it scores pending tasks against the offered nodes

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pending = PendingTasks()

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        if self.truth is None:
            raise PolicyConfigError(
                "the greedy-informed policy needs the true physics: it runs only in the simulator"
            )
        caps = self.truth.capabilities
        offered = [name for name in nodes if name in snapshot.nodes]
        placements: list[Placement] = []
        # The kinds some offered node has a slot for: a task of another kind fits nowhere (Snapshot.fits), so
        # its jobs' pending tasks need no scan (most heartbeats of a busy day find the node full).
        open_kinds = _open_kinds(snapshot, offered)
        if not open_kinds:
            return placements
        load = {name: snapshot.running_on(name) for name in offered}
        memory = {
            name: sum(self.truth.demand_of(a.task, name).memory_mb for a in snapshot.running.get(name, ()))
            for name in offered
        }
        # Whether any offered node can take another task: changed only by this round's placements.
        room = _any_room(snapshot, offered)
        ordered = snapshot.memo_jobs(
            "greedy-informed.order", lambda: sorted(snapshot.jobs, key=lambda j: j.submit_s)
        )
        for job in ordered:
            kinds: tuple[TaskType, ...] = ("map", "reduce") if job.reduces_allowed() else ("map",)
            for kind in kinds:
                if kind not in open_kinds:
                    continue
                for task in self._pending.of(job, kind):
                    best, best_t, second = None, float("inf"), None
                    for name in offered:
                        if not snapshot.fits(name, job, kind):  # a slot, or by requests room for its pod
                            continue
                        cap = caps[name]
                        demand = self.truth.demand_of(task, name)
                        if memory[name] + demand.memory_mb > cap.memory_mb:
                            continue
                        k = load[name]
                        t = predicted_duration(cap, demand, k)
                        if k and (k + 1) / t <= k / predicted_duration(cap, demand, k - 1):
                            continue  # past the knee: one more task would lower the node's throughput
                        if t < best_t:
                            best, best_t, second = name, t, best
                    if best is None:
                        break  # a job's tasks of a kind are alike: if this one fits nowhere, neither do the rest
                    placement = Placement(
                        task,
                        best,
                        Explanation(
                            self.name,
                            -best_t,
                            f"earliest finish ({best_t:.1f} s) with the true physics",
                            second,
                        ),
                    )
                    snapshot.commit(placement)
                    load[best] += 1
                    memory[best] += self.truth.demand_of(task, best).memory_mb
                    placements.append(placement)
                    open_kinds = _open_kinds(snapshot, offered)
                    room = _any_room(snapshot, offered)
            if not room:
                break
        return placements

    def on_job_finished(self, job: Job, now: float) -> None:
        self._pending.forget(job.id)

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])


def _open_kinds(snapshot: ClusterSnapshot, offered: list[str]) -> set[TaskType]:
    """The task kinds for which some offered node has a slot left (the first test of ``ClusterSnapshot.fits``)."""
    kinds: tuple[TaskType, ...] = ("map", "reduce")
    return {
        kind
        for kind in kinds
        if any(snapshot.nodes[name].slots(kind) - snapshot.running_on(name, kind) > 0 for name in offered)
    }


def _any_room(snapshot: ClusterSnapshot, offered: list[str]) -> bool:
    """Some offered node has a free slot of either kind (by requests: room for the smallest pod)."""
    return any(snapshot.free_slots(name, kind) > 0 for name in offered for kind in ("map", "reduce"))
