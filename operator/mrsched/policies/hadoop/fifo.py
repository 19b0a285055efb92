"""FIFO: Hadoop 1's default JobQueueTaskScheduler (``JobQueueTaskScheduler.assignTasks``, JobQueueTaskScheduler.java
lines 80-266 at Hadoop 1.2.1; see :mod:`mrsched.policies.hadoop.slots` for the tag).

On a node's heartbeat, as the source does:

* Jobs in priority then submission order (JobQueueJobInProgressListener.FIFO_JOB_QUEUE_COMPARATOR,
  JobQueueJobInProgressListener.java:81-97); our int priorities map to Hadoop's five levels
  (:func:`~mrsched.policies.hadoop.slots.hadoop_priority`).
* Load factor: the node may run at most ceil(remaining map load / cluster map slots × its map slots) maps, the
  remaining load being the maps of all jobs not finished yet, running ones included (java:110-134, 153-156), so
  that a cluster below capacity spreads its maps over the nodes rather than filling the first to heartbeat.
* For each such slot, the first job (in order) that has a pending map gets it: a node-local or rack-local one
  (``obtainNewNodeOrRackLocalMapTask``, java:175-193), else an off-switch one (``obtainNewNonLocalMapTask``,
  java:195-208). One off-switch map ends the heartbeat's maps ("at most 1 off-switch or speculative task",
  java:204-207), so a node does not take other nodes' local maps. Maps without location information (generated
  input) are off-switch in Hadoop: they too come one per heartbeat.
* Padding (java:157-161, 184-189, 268-312): once the cluster's running maps plus a pad of min(node slots,
  ``capacityPad`` × the maps of the queued jobs) reach the cluster's map slots (pad 0 on clusters of at most 3
  nodes), the heartbeat gets one local map only. As in the source, jobs without reduces are left out of that sum.
* Reduces: at most one per heartbeat, capped by the reduce load factor (java:214-251, the remaining reduce load
  counting only jobs past slow-start, java:118-121); a job that cannot give one passes the turn to the next,
  unless the reduce padding is exceeded (java:243-248).

**On Kubernetes** [ours]: with concurrency by requests (the operator's default, a scenario's
``concurrency: requests``) a node's slots of a kind are the tasks of the smallest pending request its
allocatable holds (``ClusterSnapshot.capacity``), the load factor is taken over those, and what every running
pod leaves of the allocatable (maps and reduces share it) bounds each heartbeat too. Hadoop 1 decides nothing
more: a baseline.
"""

from __future__ import annotations

from pydantic import Field

from mrsched.core.model import ClusterSnapshot, Job, Placement, TaskType
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.policies.hadoop.slots import SlotPolicy, hadoop_priority, has_pending, load_capacity

#: JobQueueTaskScheduler.MIN_CLUSTER_SIZE_FOR_PADDING (JobQueueTaskScheduler.java:36): no padding on clusters of
#: at most this many TaskTrackers.
MIN_CLUSTER_SIZE_FOR_PADDING = 3


def fifo_order(jobs: list[Job]) -> list[Job]:
    """Hadoop's FIFO job order: priority (five levels), then submission time (JobQueueJobInProgressListener.java:
    81-97; a stable sort keeps submission order for equal times, as the job-id tie-break does)."""
    return sorted(jobs, key=lambda j: (-hadoop_priority(j), j.submit_s))


class FifoConfig(PolicyConfig):
    #: mapred.jobtracker.taskalloc.capacitypad (JobQueueTaskScheduler.java:74-75, default 0.01).
    capacity_pad: float = Field(0.01, alias="capacityPad", ge=0)


@register
class Fifo(Configured[FifoConfig], SlotPolicy):
    name = "fifo"
    Config = FifoConfig
    skips_quiet_rounds = True  # no state of its own but the map indexes, which only placements change
    idle_when_nothing_pending = True  # the same: with nothing to start, a heartbeat reads and returns

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        if snapshot.nothing_pending():
            return []
        ordered = snapshot.memo_jobs("fifo.order", lambda: fifo_order(snapshot.jobs))
        placements = self._maps(snapshot, node, ordered)
        placements += self._reduce(snapshot, node, ordered)
        return placements

    def _maps(self, snapshot: ClusterSnapshot, node: str, ordered: list[Job]) -> list[Placement]:
        slots = snapshot.capacity(node, "map")
        running = snapshot.running_on(node, "map")
        # Full: the load factor can only lower the cap (most heartbeats of a busy cluster).
        if running >= slots:
            return []
        remaining = snapshot.memo_jobs(  # desiredMaps - finishedMaps
            "fifo.remaining-maps", lambda: sum(len(j.maps) - j.finished_maps for j in ordered)
        )
        cluster = snapshot.slot_total("map")
        current = min(load_capacity(slots, remaining, cluster), slots)
        # By requests, reduces share the node's allocatable with maps: what is left bounds it too.
        available = min(current - running, snapshot.free_slots(node, "map"))
        if available <= 0:
            return []
        exceeded = self._exceeded_padding(snapshot, ordered, "map", slots)
        placements: list[Placement] = []
        why = f"first job in FIFO order; node may run {current} of {slots} maps (load factor)"
        # The jobs ahead of the first with a map to start have none, and until the owner changes the jobs
        # (jobs_version) placements only take maps away: every heartbeat starts its search there.
        first = snapshot.memo_jobs("fifo.first-with-maps", lambda: [0])  # one cell, advanced in place
        while first[0] < len(ordered) and not has_pending(ordered[first[0]], "map"):
            first[0] += 1
        for _ in range(available):
            for job in ordered[first[0] :]:
                local = self.pick_node_or_rack_local(job, snapshot, node)
                if local is not None:
                    task, level = local
                    placements.append(self.place(snapshot, task, node, f"{why}; {level}-local"))
                    if exceeded:  # padding: the heartbeat gets this one map only
                        return placements
                    break
                other = self.pick_map(job, snapshot, node)  # node and rack found nothing: off-switch
                if other is not None:
                    task, level = other
                    placements.append(
                        self.place(
                            snapshot, task, node, f"{why}; {level}-local, the heartbeat's one off-switch map"
                        )
                    )
                    return placements
            else:
                return placements  # no job has a map for this node
        return placements

    def _reduce(self, snapshot: ClusterSnapshot, node: str, ordered: list[Job]) -> list[Placement]:
        if snapshot.pending_tasks("reduce") == 0:  # no job has one: the pass below would find none
            return []
        slots = snapshot.capacity(node, "reduce")
        running = snapshot.running_on(node, "reduce")
        if running >= slots:
            return []
        remaining = snapshot.memo_jobs(
            "fifo.remaining-reduces",
            lambda: sum(len(j.reduces) - j.finished_reduces for j in ordered if j.reduces_allowed()),
        )
        cluster = snapshot.slot_total("reduce")
        current = min(load_capacity(slots, remaining, cluster), slots)
        if min(current - running, 1, snapshot.free_slots(node, "reduce")) <= 0:
            return []
        exceeded = self._exceeded_padding(snapshot, ordered, "reduce", slots)
        for job in ordered:
            if not job.reduces:
                continue
            task = self.reduce_for(job, snapshot, node)
            if task is not None:
                return [self.place(snapshot, task, node, "first job in FIFO order; one reduce per heartbeat")]
            if exceeded:
                break
        return []

    def _exceeded_padding(
        self, snapshot: ClusterSnapshot, ordered: list[Job], kind: TaskType, tracker_slots: int
    ) -> bool:
        """JobQueueTaskScheduler.exceededPadding (java:268-312): is the cluster so close to full that the pad
        for failures and speculative tasks would be eaten?"""
        cfg = self.cfg
        capacity = snapshot.slot_total(kind)
        pad_on = len(snapshot.nodes) > MIN_CLUSTER_SIZE_FOR_PADDING
        counted, needed = snapshot.memo_jobs(("fifo.padding", kind), lambda: _padding_needs(ordered, kind))
        return _exceeded(
            snapshot.running_tasks(kind),
            counted,
            needed,
            tracker_slots,
            capacity,
            cfg.capacity_pad if pad_on else None,
        )


def _padding_needs(ordered: list[Job], kind: TaskType) -> tuple[bool, int]:
    """What exceededPadding's loop sums: whether any job counts (as the source, jobs without reduces are skipped,
    for maps too) and the tasks of ``kind`` of those that do. A placement changes neither."""
    counted = [job for job in ordered if job.reduces]
    return bool(counted), sum(len(job.tasks(kind)) for job in counted)


def _exceeded(
    running: int, counted: bool, needed: int, tracker_slots: int, capacity: int, capacity_pad: float | None
) -> bool:
    """exceededPadding's loop (``capacity_pad`` None: the cluster is too small to pad). The loop returns True at
    the first counted job where running + pad >= capacity, the pad being min(tracker slots, needed so far ×
    capacityPad); the pad never shrinks as jobs are added, so that is the test at the last counted job."""
    if not counted:
        return False
    pad = 0 if capacity_pad is None else min(tracker_slots, int(needed * capacity_pad))
    return running + pad >= capacity
