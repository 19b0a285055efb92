"""The Hadoop Capacity Scheduler (Hadoop 1 ``CapacityTaskScheduler``, src/contrib/capacity-scheduler at Hadoop
1.2.1; see :mod:`mrsched.policies.hadoop.slots` for the tag).

* Queues own a share of the cluster's slots (``capacities``, percent, ``mapred.capacity-scheduler.queue.<q>.
  capacity``). Hadoop requires every queue to be configured and the percents to sum to 100; here a queue not
  listed shares what the listed ones leave, equally with the other unlisted queues that have jobs. A queue's
  capacity in slots is recomputed on every heartbeat from the cluster's current slots, rounded down:
  (int)(percent × slots / 100) (CapacitySchedulerQueue.SlotsUsage.updateCapacities, CapacitySchedulerQueue.java:
  189-198, called from CapacityTaskScheduler.assignTasks → updateAllQueues, CapacityTaskScheduler.java:
  1029-1051).
* ``maximumCapacity`` (percent, ``mapred.capacity-scheduler.queue.<q>.maximum-capacity``, -1 by default: no
  limit; CapacitySchedulerConf.getMaxCapacity, CapacitySchedulerConf.java:224-243, which rejects more than 100
  or less than the queue's capacity): the queue never runs more than (int)(percent × slots / 100) tasks of a
  kind; a queue at its maximum is passed over (assignSlotsToQueue, CapacitySchedulerQueue.java:1109-1125). As
  in the source, a maximum that rounds to 0 slots is no limit (the check is ``getMaxCapacity > 0``).
* Queues are served in order of used / capacity slots, lowest first, a queue of capacity 0 counting as full
  (TaskSchedulingMgr.QueueComparator, CapacityTaskScheduler.java:207-223), re-sorted before every map
  (addMapTasks, java:1094-1096); ties here by queue name.
* Within a queue, jobs in submission order, or priority then submission with ``supportsPriority``
  (``mapred.capacity-scheduler.queue.<q>.supports-priority``, false by default: CapacitySchedulerConf.java:
  150-151, 264-268; the job comparators at CapacitySchedulerQueue.java:289-318).
* User limit (assignSlotsToJob, CapacitySchedulerQueue.java:1139-1196): a job whose user would then hold more
  than ``limit`` slots of the queue is skipped and the next job of the queue is tried; when no job of the queue
  can take the slot, the next queue is tried (getTaskFromQueue, CapacityTaskScheduler.java:294-372, and
  assignTasks, java:423-449). limit = min(max(ceil(C / active users), ceil(``minimumUserLimitPercent`` × C /
  100)), (int)(capacity × ``userLimitFactor``)), where C is the queue's capacity (at least 1 slot), or its used
  slots + 1 once it runs over capacity, and the active users are those with a pending task of that kind in
  the queue (SlotsUsage.users, filled by update(), CapacitySchedulerQueue.java:582-604). So a user over the
  limit still gets a slot nobody else in its queue can use, up to ``userLimitFactor`` × the queue's capacity:
  Hadoop's default factor 1 keeps a lone user within its queue's capacity "irrespective of how idle the cluster
  is" (capacity_scheduler.xml; ``mapred.capacity-scheduler.default-user-limit-factor``, CapacitySchedulerConf.
  java:147-149); a larger factor lets it take idle slots of other queues.
* Maps (MapSchedulingMgr.obtainNewTask, CapacityTaskScheduler.java:511-544): the job's node- or rack-local map,
  else an off-switch one once the job has let enough heartbeats pass: its scheduling opportunities (one per time
  it is asked for a map, reset by a local launch, JobInProgress.java:1371-1375, 1439-1445) must exceed
  min(its unfinished maps, nodes) × its locality wait factor (JobInProgress.scheduleOffSwitch,
  JobInProgress.java:1465-1471), the factor being min(1, hosts holding its input / cluster hosts)
  (JobInProgress.createCache, java:568-578; ``mapreduce.job.locality.wait.factor`` = 1 unset). Maps without
  location information are off-switch (:meth:`~mrsched.policies.hadoop.slots.SlotPolicy.pick_node_or_rack_local`). The
  node's free map slots are filled, but an off-switch map ends the heartbeat's maps
  (``maximum-tasks-after-offswitch`` = 0, addMapTasks, CapacityTaskScheduler.java:1088-1143,
  CapacitySchedulerConf.java:112).
* Reduces: one per heartbeat, same queue order and limits (addReduceTask, CapacityTaskScheduler.java:1072-1084).
* ``queueBy: user`` (our reading for multi-user papers that name users, not queues): every user is its own
  queue, with the capacities of ``capacities`` keyed by user, equal shares otherwise.

**On Kubernetes** [ours]: by requests the cluster's slots are every node's request capacity
(``ClusterSnapshot.slot_total``), so a queue's capacity is its share of the tasks the cluster's allocatable
holds, as YARN's CapacityScheduler shares resources (with one request size the two are the same share). A
baseline: it decides no concurrency of its own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal, Self

from pydantic import Field, model_validator

from mrsched.core.locality import Level
from mrsched.core.model import ClusterSnapshot, Job, Placement, Task, TaskType
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.policies.hadoop.fifo import fifo_order
from mrsched.policies.hadoop.slots import SlotPolicy, has_pending


class CapacityConfig(PolicyConfig):
    capacities: dict[str, float] = Field(default_factory=dict)  # queue -> percent of the cluster
    # queue -> percent the queue may use at most; absent, 0 or -1: no limit (Hadoop's default -1).
    maximum_capacity: dict[str, float] = Field(default_factory=dict, alias="maximumCapacity")
    minimum_user_limit_percent: float = Field(100.0, alias="minimumUserLimitPercent", gt=0, le=100)
    user_limit_factor: float = Field(1.0, alias="userLimitFactor", gt=0)
    supports_priority: bool = Field(False, alias="supportsPriority")
    queue_by: Literal["queue", "user"] = Field("queue", alias="queueBy")

    @model_validator(mode="after")
    def _check_maximum(self) -> Self:
        for queue, percent in self.maximum_capacity.items():
            if percent > 100:
                raise ValueError(f"maximumCapacity of queue {queue!r} is {percent}: at most 100 (percent)")
            if percent > 0 and percent < self.capacities.get(queue, 0.0):
                raise ValueError(
                    f"maximumCapacity of queue {queue!r} is {percent}, below its capacity "
                    f"{self.capacities[queue]}: it must be at least the capacity"
                )
        return self


@dataclass
class _Queue:
    """One queue's state on a heartbeat, for one task kind (CapacitySchedulerQueue.SlotsUsage): counted from the
    snapshot when the heartbeat starts (updateAllQueues) and kept current as tasks are placed (queue.update,
    CapacityTaskScheduler.java:1137-1141)."""

    name: str
    jobs: list[Job]
    capacity: int  # slots
    maximum: int  # slots; -1 or 0: no limit
    active_users: set[str]  # users with a pending task of the kind
    used: int = 0  # slots the queue's running tasks hold
    held: dict[str, int] = field(default_factory=dict)  # ... per user

    def ratio(self) -> float:
        return 1.0 if self.capacity == 0 else self.used / self.capacity

    def below_maximum(self) -> bool:
        """assignSlotsToQueue (CapacitySchedulerQueue.java:1109-1125) for one slot."""
        return not (self.maximum > 0 and self.used + 1 > self.maximum)

    def placed(self, job: Job) -> None:
        self.used += 1
        self.held[job.user] = self.held.get(job.user, 0) + 1


@register
class Capacity(Configured[CapacityConfig], SlotPolicy):
    name = "capacity"
    # Its scheduling opportunities count only for jobs with a pending map, and nothing else changes per heartbeat.
    idle_when_nothing_pending = True
    Config = CapacityConfig

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._opportunities: dict[str, int] = defaultdict(int)  # JobInProgress.numSchedulingOpportunities
        self._wait_factor: dict[str, float] = {}  # JobInProgress.localityWaitFactor

    def queue_of(self, job: Job) -> str:
        return job.user if self.cfg.queue_by == "user" else job.queue

    def _percent(self, queue: str, queues: set[str]) -> float:
        if queue in self.cfg.capacities:
            return self.cfg.capacities[queue]
        unlisted = [q for q in queues if q not in self.cfg.capacities]
        left = max(0.0, 100.0 - sum(self.cfg.capacities.values()))
        return left / max(1, len(unlisted))

    def queues(self, snapshot: ClusterSnapshot, kind: TaskType) -> list[_Queue]:
        """The queues with jobs, their capacities from the cluster's slots now, and their active users."""
        by_queue: dict[str, list[Job]] = defaultdict(list)
        for job in snapshot.jobs:
            by_queue[self.queue_of(job)].append(job)
        total = snapshot.slot_total(kind)
        names = set(by_queue)
        queues = []
        for name, jobs in by_queue.items():
            ordered = (
                fifo_order(jobs) if self.cfg.supports_priority else sorted(jobs, key=lambda j: j.submit_s)
            )
            maximum = self.cfg.maximum_capacity.get(name, -1.0)
            held: dict[str, int] = defaultdict(int)
            for job in jobs:
                held[job.user] += job.running(kind)
            queues.append(
                _Queue(
                    name,
                    ordered,
                    int(self._percent(name, names) * total / 100.0),
                    int(maximum * total / 100.0) if maximum > 0 else -1,
                    {j.user for j in jobs if has_pending(j, kind)},
                    sum(held.values()),
                    dict(held),
                )
            )
        return queues

    def user_limit(self, queue: _Queue) -> int:
        """The most slots one user of ``queue`` may hold after this assignment (assignSlotsToJob,
        CapacitySchedulerQueue.java:1139-1196, one slot per task)."""
        capacity = max(queue.capacity, 1)  # "allow progress for queues with miniscule capacity"
        current = capacity if queue.used + 1 <= capacity else queue.used + 1
        users = max(1, len(queue.active_users))
        floor = math.ceil(self.cfg.minimum_user_limit_percent * current / 100.0 - 1e-9)
        return min(max(math.ceil(current / users), floor), int(capacity * self.cfg.user_limit_factor))

    @staticmethod
    def _sorted(queues: list[_Queue]) -> list[_Queue]:
        return sorted(queues, key=lambda q: (q.ratio(), q.name))

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self._maps(snapshot, node) + self._reduce(snapshot, node)

    def _maps(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        free = snapshot.free_slots(node, "map")
        if free <= 0:
            return []
        queues = self.queues(snapshot, "map")
        placements: list[Placement] = []
        while free > 0:
            found = self._one_map(snapshot, node, queues)
            if found is None:
                break
            queue, job, task, level, off_switch = found
            reason = (
                f"queue {queue.name} furthest below its capacity ({queue.used}/{queue.capacity} slots); "
                f"{level}-local" + (", the heartbeat's last map (off-switch)" if off_switch else "")
            )
            placements.append(self.place(snapshot, task, node, reason))
            queue.placed(job)
            free -= 1
            if off_switch:
                break  # maximum-tasks-after-offswitch = 0 (CapacityTaskScheduler.java:1115-1132)
        return placements

    def _one_map(
        self, snapshot: ClusterSnapshot, node: str, queues: list[_Queue]
    ) -> tuple[_Queue, Job, Task, Level, bool] | None:
        for queue in self._sorted(queues):
            if not queue.below_maximum():
                continue
            limit = self.user_limit(queue)
            for job in queue.jobs:
                if not has_pending(job, "map") or queue.held.get(job.user, 0) + 1 > limit:
                    continue
                self._opportunities[job.id] += 1  # job.schedulingOpportunity()
                local = self.pick_node_or_rack_local(job, snapshot, node)
                if local is not None:
                    self._opportunities[job.id] = 0  # a local launch resets them
                    return queue, job, local[0], local[1], False
                if self._may_go_off_switch(job, snapshot):
                    other = self.pick_map(job, snapshot, node)
                    if other is not None:
                        return queue, job, other[0], other[1], True
        return None

    def _may_go_off_switch(self, job: Job, snapshot: ClusterSnapshot) -> bool:
        """JobInProgress.scheduleOffSwitch (JobInProgress.java:1465-1471)."""
        factor = self._wait_factor.get(job.id)
        if factor is None:
            hosts = {r for t in job.maps for r in t.replicas}
            factor = self._wait_factor[job.id] = min(1.0, len(hosts) / max(1, len(snapshot.nodes)))
        required = min(len(job.maps) - job.finished_maps, len(snapshot.nodes))
        return required * factor < self._opportunities[job.id]

    def _reduce(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        if snapshot.free_slots(node, "reduce") <= 0:
            return []
        queues = self.queues(snapshot, "reduce")
        for queue in self._sorted(queues):
            if not queue.below_maximum():
                continue
            limit = self.user_limit(queue)
            for job in queue.jobs:
                if queue.held.get(job.user, 0) + 1 > limit:
                    continue
                task = self.reduce_for(job, snapshot, node)
                if task is not None:
                    reason = (
                        f"queue {queue.name} furthest below its capacity "
                        f"({queue.used}/{queue.capacity} slots); one reduce per heartbeat"
                    )
                    return [self.place(snapshot, task, node, reason)]
        return []

    def on_job_finished(self, job: Job, now: float) -> None:
        super().on_job_finished(job, now)
        self._opportunities.pop(job.id, None)
        self._wait_factor.pop(job.id, None)
