"""FIFO: Hadoop 1's default JobQueueTaskScheduler.

Jobs in priority order, then submission order; each free map slot goes to the first job with a pending map
(node-local, else rack-local, else any of its maps), and at most one reduce per heartbeat goes to the first job
whose reduces may start (slow-start). Slots per node are fixed (``mapred.tasktracker.{map,reduce}.tasks.maximum``).
"""

from __future__ import annotations

from mrsched.core.model import ClusterSnapshot, Job, Placement
from mrsched.core.policy import register
from mrsched.policies.slots import SlotPolicy


def fifo_order(jobs: list[Job]) -> list[Job]:
    return sorted(jobs, key=lambda j: (-j.priority, j.submit_s))


@register
class Fifo(SlotPolicy):
    name = "fifo"

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        ordered = fifo_order(snapshot.jobs)
        placements = self.fill_maps(snapshot, node, ordered, "first job in submission order")
        placements += self.one_reduce(snapshot, node, ordered, "first job in submission order")
        return placements
