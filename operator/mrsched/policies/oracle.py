"""The oracle: greedy earliest finish time with the true physics, the yardstick no real policy can have.

Handed the hidden node capabilities and task demands (simulator only), it places each pending task, in job
submission order, on the node where it would finish first (``physics.predicted_duration``: seed 002 Eq 3.2 with
the true κ, Ω and network, stretched by the sharing at the node's load once it joins), among the nodes where
one more task still raises the node's throughput (tasks finished per second: the knee of seed 002 Fig 2.5,
past which adding tasks only slows everyone) and memory fits.
"""

from __future__ import annotations

import itertools

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement
from mrsched.core.physics import predicted_duration
from mrsched.core.policy import Policy, PolicyConfigError, register
from mrsched.policies.pending import PendingTasks


@register
class OraclePolicy(Policy):
    name = "oracle"

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        if self.oracle is None:
            raise PolicyConfigError("the oracle policy needs the true physics: it runs only in the simulator")
        caps = self.oracle.capabilities
        load = {name: snapshot.running_on(name) for name in snapshot.nodes}
        memory = {
            name: sum(self.oracle.demand_of(a.task, name).memory_mb for a in snapshot.running.get(name, ()))
            for name in snapshot.nodes
        }
        placements: list[Placement] = []
        for job in sorted(snapshot.jobs, key=lambda j: j.submit_s):
            tasks = itertools.chain(
                self._pending.of(job, "map"), self._pending.of(job, "reduce") if job.reduces_allowed() else ()
            )
            for task in tasks:
                best, best_t, second = None, float("inf"), None
                for name in snapshot.nodes:
                    cap = caps[name]
                    demand = self.oracle.demand_of(task, name)
                    if memory[name] + demand.memory_mb > cap.memory_mb:
                        continue
                    k = load[name]
                    t = predicted_duration(cap, demand, k)
                    if k and (k + 1) / t <= k / predicted_duration(cap, demand, k - 1):
                        continue  # past the knee: one more task would lower the node's throughput
                    if t < best_t:
                        best, best_t, second = name, t, best
                if best is None:
                    return placements  # every node is at its knee
                placement = Placement(
                    task,
                    best,
                    Explanation(
                        self.name, -best_t, f"earliest finish ({best_t:.1f} s) with the true physics", second
                    ),
                )
                snapshot.commit(placement)
                load[best] += 1
                memory[best] += self.oracle.demand_of(task, best).memory_mb
                placements.append(placement)
        return placements

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pending = PendingTasks()

    def on_job_finished(self, job: Job, now: float) -> None:
        self._pending.forget(job.id)

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])
