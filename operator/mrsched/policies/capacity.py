"""The Hadoop Capacity Scheduler (Hadoop 1 ``CapacityTaskScheduler``).

Queues own a share of the cluster's slots (``capacities``, percent; unlisted queues share what is left).
On a heartbeat the queue using least of its capacity (running / capacity slots) that has pending work goes
first; queues may use idle capacity beyond their own. Within a queue, jobs run in priority then submission
order, and one user may hold at most max(capacity / active users, minimumUserLimitPercent % of capacity)
slots while others in the queue wait (``minimum-user-limit-percent``, 100 by default: no limit).
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field

from mrsched.core.model import ClusterSnapshot, Job, Placement, TaskType
from mrsched.core.policy import PolicyConfig, register
from mrsched.policies.fifo import fifo_order
from mrsched.policies.slots import SlotPolicy


class CapacityConfig(PolicyConfig):
    capacities: dict[str, float] = Field(default_factory=dict)  # queue -> percent of the cluster
    minimum_user_limit_percent: float = Field(100.0, alias="minimumUserLimitPercent", gt=0, le=100)


@register
class Capacity(SlotPolicy):
    name = "capacity"
    Config = CapacityConfig

    def _capacity(self, queue: str, queues: set[str], total: int) -> float:
        cfg: CapacityConfig = self.config  # type: ignore[assignment]
        if queue in cfg.capacities:
            return total * cfg.capacities[queue] / 100.0
        unlisted = [q for q in queues if q not in cfg.capacities]
        left = max(0.0, 100.0 - sum(cfg.capacities.values()))
        return total * left / 100.0 / max(1, len(unlisted))

    def ordered(self, snapshot: ClusterSnapshot, kind: TaskType) -> list[Job]:
        cfg: CapacityConfig = self.config  # type: ignore[assignment]
        by_queue: dict[str, list[Job]] = defaultdict(list)
        for job in snapshot.jobs:
            by_queue[job.queue].append(job)
        total = sum(n.slots(kind) for n in snapshot.nodes.values())
        queues = set(by_queue)
        ranked = []
        for queue, jobs in by_queue.items():
            capacity = max(self._capacity(queue, queues, total), 1e-9)
            running = sum(j.running(kind) for j in jobs)
            ranked.append((running / capacity, queue, capacity, jobs))
        ranked.sort(key=lambda r: (r[0], r[1]))
        ordered: list[Job] = []
        for _, _, capacity, jobs in ranked:
            users = {j.user for j in jobs}
            limit = max(capacity / len(users), capacity * cfg.minimum_user_limit_percent / 100.0)
            held: dict[str, int] = defaultdict(int)
            for job in jobs:
                held[job.user] += job.running(kind)
            # Users over their limit wait while others in the queue have work (Hadoop's user limit).
            under = [j for j in fifo_order(jobs) if held[j.user] < limit]
            ordered += under or fifo_order(jobs)
        return ordered

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        placements = []
        for _ in range(max(0, snapshot.free_slots(node, "map"))):
            got = self.fill_maps_once(snapshot, node)
            if not got:
                break
            placements += got
        placements += self.one_reduce(
            snapshot, node, self.ordered(snapshot, "reduce"), "queue furthest below its capacity"
        )
        return placements

    def fill_maps_once(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        for job in self.ordered(snapshot, "map"):
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                task, level = found
                return [
                    self.place(
                        snapshot, task, node, f"queue {job.queue} furthest below its capacity; {level}-local"
                    )
                ]
        return []
