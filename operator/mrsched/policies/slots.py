"""What Hadoop's slot schedulers share: fixed map and reduce slots per node, finding a job's next map by
locality, at most one reduce per heartbeat, and the explanation a placement carries."""

from __future__ import annotations

from mrsched.core.locality import Level, MapIndex
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, Task, TaskOutcome
from mrsched.core.policy import Policy


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
        if job.finished_maps + job.running_maps >= len(job.maps):
            return None  # nothing pending: skip the index
        return self.map_index(job, snapshot).best(snapshot.nodes[node], max_level)

    @staticmethod
    def pick_reduce(job: Job) -> Task | None:
        if not job.reduces_allowed() or job.finished_reduces + job.running_reduces >= len(job.reduces):
            return None
        return next((t for t in job.reduces if t.pending), None)

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

    def one_reduce(
        self, snapshot: ClusterSnapshot, node: str, ordered: list[Job], why: str
    ) -> list[Placement]:
        """Hadoop 1 hands out at most one reduce per heartbeat."""
        if snapshot.free_slots(node, "reduce") <= 0:
            return []
        for job in ordered:
            task = self.pick_reduce(job)
            if task is not None:
                return [self.place(snapshot, task, node, why)]
        return []
