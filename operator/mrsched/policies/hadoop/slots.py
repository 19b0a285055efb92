"""What Hadoop's slot schedulers share: fixed map and reduce slots per node, finding a job's next map by
locality, at most one reduce per heartbeat, Hadoop's job priorities, and the explanation a placement carries.

Hadoop sources cited in the baselines (fifo.py, fair.py, capacity.py) are Apache Hadoop 1.2.1, git tag
``release-1.2.1`` of apache/hadoop-common (commit 3e08c57483b8); line numbers are that tag's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mrsched.core.locality import Level, MapIndex
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, Task, TaskOutcome, TaskType
from mrsched.core.policy import Policy

#: Hadoop's five JobPriority levels (src/mapred/org/apache/hadoop/mapred/JobPriority.java: VERY_HIGH, HIGH,
#: NORMAL, LOW, VERY_LOW). Our Job.priority is an int: 0 is NORMAL, +1 HIGH, +2 VERY_HIGH, -1 LOW, -2 VERY_LOW;
#: values beyond ±2 are clamped to the nearest level (Hadoop has no sixth level).
PRIORITY_NAMES = {2: "VERY_HIGH", 1: "HIGH", 0: "NORMAL", -1: "LOW", -2: "VERY_LOW"}


def hadoop_priority(job: Job) -> int:
    """``job.priority`` clamped to Hadoop's five levels (+2 VERY_HIGH ... -2 VERY_LOW)."""
    return max(-2, min(2, job.priority))


def priority_factor(job: Job) -> float:
    """The Fair Scheduler's job weight for a priority (FairScheduler.getPriorityFactor, FairScheduler.java:806-814):
    VERY_HIGH 4, HIGH 2, NORMAL 1, LOW 0.5, VERY_LOW 0.25, i.e. 2 ** level."""
    return 2.0 ** hadoop_priority(job)


def load_capacity(tracker_slots: int, remaining: int, cluster_slots: int) -> int:
    """How many tasks of a kind Hadoop 1 lets one TaskTracker run while the cluster is below capacity, so that
    tasks spread over the nodes instead of piling on the first to heartbeat: ceil(tracker slots × min(1,
    remaining / cluster slots)). JobQueueTaskScheduler.assignTasks (JobQueueTaskScheduler.java:126-134,
    153-155, 218-220: the "load factor") and the Fair Scheduler's CapBasedLoadManager.getCap
    (CapBasedLoadManager.java:45-48, with mapred.fairscheduler.load.max.diff = 0) compute the same number."""
    load = remaining / cluster_slots if cluster_slots > 0 else 0.0
    return math.ceil(tracker_slots * min(1.0, load))


def has_pending(job: Job, kind: TaskType) -> bool:
    """The job has a task of ``kind`` to schedule: a map not yet running or done, or a reduce once slow-start
    allows reduces (CapacitySchedulerQueue.update, java:582-604; the first test of every pick below)."""
    if kind == "map":
        return job.finished_maps + job.running_maps < len(job.maps)
    return job.reduces_allowed() and job.finished_reduces + job.running_reduces < len(job.reduces)


def reduces_first(snapshot: ClusterSnapshot, node: str) -> bool:
    """Whether a heartbeat of ``node`` offers first the reduces of jobs whose maps are all placed
    (:func:`maps_placed`) [ours]: on a by-requests node, where maps and reduces share one allocatable and maps
    placed first take all of it, a released reduce would otherwise wait until no map of any job is left to start
    (LsPS's grep reduce waited 352 s after its last map on gupta-ch3-comb1, kubernetes mode). Only those
    reduces: one released earlier (Hadoop's slow-start) would hold a place its own job's maps could use. A slot
    node keeps Hadoop's order: maps, then reduces, each kind in slots of its own."""
    return snapshot.nodes[node].by_requests


def maps_placed(job: Job) -> bool:
    """No map of the job is left to start: its reduces are all that can still be placed."""
    return job.unstarted("map") == 0


def request_fits(snapshot: ClusterSnapshot, node: str, job: Job, kind: TaskType) -> bool:
    """The node admits the job's pods, and on a by-requests node the job's pod request fits what is left (the
    free-slot count is in the smallest request's units, and a job may ask for more); on a slot node the caller
    has counted free slots already."""
    if not snapshot.nodes[node].by_requests:
        return snapshot.admits(node, job)
    return snapshot.fits(node, job, kind)


class SlotPolicy(Policy):
    """Base of slot-based policies (Hadoop 1's TaskTracker slots)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._indexes: dict[str, MapIndex] = {}

    def map_index(self, job: Job, snapshot: ClusterSnapshot) -> MapIndex:
        index = self._indexes.get(job.id)
        if index is None:
            index = self._indexes[job.id] = MapIndex(job, snapshot.nodes)
        return index

    def on_job_finished(self, job: Job, now: float) -> None:
        self._indexes.pop(job.id, None)

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        """A failed attempt makes its task pending again: back to the front of the job's index."""
        task = outcome.task
        if not outcome.succeeded and task.kind == "map" and task.job_id in self._indexes:
            self._indexes[task.job_id].requeue(task)

    def on_task_requeued(self, task: Task) -> None:
        if task.kind == "map" and task.job_id in self._indexes:
            self._indexes[task.job_id].requeue(task)

    def pick_map(
        self, job: Job, snapshot: ClusterSnapshot, node: str, max_level: Level = "off"
    ) -> tuple[Task, Level] | None:
        if not has_pending(job, "map") or not request_fits(snapshot, node, job, "map"):
            return None  # nothing pending: skip the index
        return self.map_index(job, snapshot).best(snapshot.nodes[node], max_level)

    def pick_node_or_rack_local(
        self, job: Job, snapshot: ClusterSnapshot, node: str
    ) -> tuple[Task, Level] | None:
        """A pending map with a replica on ``node``, else in its rack: JobInProgress.obtainNewNodeOrRackLocalMapTask
        (JobInProgress.java:1425-1429). Maps without location information are not found here: findNewMapTask
        returns them only to off-switch requests (JobInProgress.java:2386-2388 end the local search with -1;
        the ``nonLocalMaps`` list comes after, at 2428-2436), so Hadoop counts them as off-switch maps."""
        if not has_pending(job, "map") or not request_fits(snapshot, node, job, "map"):
            return None
        index = self.map_index(job, snapshot)
        if index.has_local(node):
            return index.by_node[node][0], "node"
        rack = snapshot.nodes[node].rack
        if index.has_rack_local(rack):
            return index.by_rack[rack][0], "rack"
        return None

    @staticmethod
    def pick_reduce(job: Job) -> Task | None:
        """The job's next reduce to start, wherever it may go."""
        if not has_pending(job, "reduce"):
            return None
        return next((t for t in job.reduces if t.pending), None)

    def reduce_for(self, job: Job, snapshot: ClusterSnapshot, node: str) -> Task | None:
        """:meth:`pick_reduce`, when the node admits the job's pods and its reduce request fits there."""
        return self.pick_reduce(job) if request_fits(snapshot, node, job, "reduce") else None

    def place(
        self, snapshot: ClusterSnapshot, task: Task, node: str, reason: str, score: float = 0.0
    ) -> Placement:
        placement = Placement(task, node, Explanation(self.name, score, reason))
        snapshot.commit(placement)
        return placement

    def fill_maps(
        self, snapshot: ClusterSnapshot, node: str, ordered: list[Job], why: str
    ) -> list[Placement]:
        """Fill the node's free map slots from jobs in the given order, best locality first within a job."""
        placements = []
        for _ in range(max(0, snapshot.free_slots(node, "map"))):
            for job in ordered:
                found = self.pick_map(job, snapshot, node)
                if found is not None:
                    task, level = found
                    placements.append(self.place(snapshot, task, node, f"{why}; {level}-local"))
                    break
            else:
                break
        return placements

    def work_conserving(
        self,
        snapshot: ClusterSnapshot,
        node: str,
        order: Callable[[TaskType], list[Job]],
        why: str,
        place_map: Callable[[Task, str], Placement] | None = None,
        max_maps: float = math.inf,
        reduces: bool = True,
    ) -> list[Placement]:
        """On a by-requests node, the room the policy's own rules left while a task could start there [ours,
        issue 51]: the papers' Hadoop-era mechanics (DARA's mix x*, one container per heartbeat, Random
        Peeking's skipped slot) assume slots that no other task could use, but on Kubernetes a place they leave
        empty is a pod that could run. Until nothing fits: the reduces of jobs whose maps are all placed
        (:func:`reduces_first`), then maps (best locality first within a job), each kind in ``order``'s jobs
        (the composed Fair's), read only when the node has room. Not the other reduces past slow-start: one
        of them would hold the place for as long as its job maps, and the policy's own rules already decide when
        they start (in dara-wl13's and three-generations' contest runs, seed 1, filling with them too cost
        diagnosis 5-8 % of mean job time).
        ``place_map`` lets a policy record the maps it learns from; ``max_maps`` is a concurrency its model
        chose for the node's maps (DARA's x*: more lowers the node's throughput, Eq 4.16), which the maps
        placed here do not pass; ``reduces`` False leaves every reduce to the policy. A slot node gets nothing
        here."""
        if not snapshot.nodes[node].by_requests:
            return []
        if snapshot.free_slots(node, "map") <= 0 and snapshot.free_slots(node, "reduce") <= 0:
            return []  # full, the usual case on a busy cluster: no job order built for nothing
        maps = order("map")
        released = order("reduce") if reduces else []

        def reduce_of() -> Placement | None:
            for job in released:
                if not maps_placed(job):
                    continue
                task = self.reduce_for(job, snapshot, node)
                if task is not None:
                    return self.place(snapshot, task, node, f"{why}: a reduce of {job.id}")
            return None

        def map_of() -> Placement | None:
            if snapshot.running_on(node, "map") >= max_maps:
                return None
            for job in maps:
                found = self.pick_map(job, snapshot, node)
                if found is not None:
                    task, level = found
                    reason = f"{why}: a map of {job.id}; {level}-local"
                    return place_map(task, reason) if place_map else self.place(snapshot, task, node, reason)
            return None

        placements: list[Placement] = []
        while snapshot.free_slots(node, "map") > 0 or snapshot.free_slots(node, "reduce") > 0:
            placed = reduce_of() or map_of()
            if placed is None:
                break
            placements.append(placed)
        return placements

    def one_reduce(
        self, snapshot: ClusterSnapshot, node: str, ordered: list[Job], why: str
    ) -> list[Placement]:
        """Hadoop 1 hands out at most one reduce per heartbeat."""
        if snapshot.free_slots(node, "reduce") <= 0:
            return []
        for job in ordered:
            task = self.reduce_for(job, snapshot, node)
            if task is not None:
                return [self.place(snapshot, task, node, why)]
        return []
