"""mrsched's plugins (:mod:`mrsched.core.framework.profile`): which job first, which node, and when a task waits.

* :class:`ShortestWorkFirst` (QueueSort): the job with the least predicted remaining work first (SRPT, the
  order that minimises mean job time on one machine), its key lowered by its age so that a large job is not
  starved by a stream of small ones: ``remaining_s − ageing × (now − submitted)``.
* :class:`SoonestFinish` (Score): minus the task's predicted duration on the node at its load
  (:class:`~mrsched.policies.mrsched.demand.DemandModel`): the fastest node for this task's kind of work.
* :class:`PhaseEnd` (Filter): a job's task is kept off a node where it would end well after the job's other
  tasks of its kind would all be done on the other nodes; the node is then offered to the next job in order.
* :class:`WaitForFaster` (Permit): at the end of a phase, when the cluster has more free places than startable
  tasks (so holding one back idles nothing another task would use), a task waits rather than start on a node
  where it would finish ``waitGain`` times later than on a busy node predicted to free soon.
* :class:`ReleaseByShuffle`: the ``reduceRelease: shuffle`` rule (an option, off by default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mrsched.core.counts import pods_that_fit
from mrsched.core.model import ClusterSnapshot, Job, Node, Placement, Task, TaskOutcome, TaskType
from mrsched.policies.mrsched.demand import DemandModel

#: PhaseEnd's view of one node for one job's kind: (node, seconds until it can start one, seconds one takes
#: there, how many it holds).
_Lane = tuple[str, float, float, float]


class ShortestWorkFirst:
    name = "ShortestWorkFirst"
    depends_on_jobs_only = False  # the key changes as tasks finish and as the jobs age

    def __init__(self, model: DemandModel, ageing: float, by_time: bool = False) -> None:
        self.model = model
        self.ageing = ageing
        self.by_time = by_time

    def order(self, snapshot: ClusterSnapshot, jobs: Sequence[Job]) -> list[Job]:
        for job in jobs:
            self.model.remember(job)
        now = snapshot.now

        def key(job: Job) -> tuple[float, float]:
            if self.by_time:
                left = self.model.remaining_time_s(job, places_of(snapshot, job))
            else:
                left = self.model.remaining_s(job)
            return left - self.ageing * (now - job.submit_s), job.submit_s

        return sorted(jobs, key=key)


def holds(node: Node, job: Job, kind: TaskType) -> int:
    """How many of the job's pods of ``kind`` the node runs with nothing else there: its slots, or on a
    by-requests node no more than its allocatable over the pod's request."""
    count = node.slots(kind)
    if node.by_requests:
        count = min(count, pods_that_fit(float(node.cores), node.memory_mb, job.request(kind)))
    return max(count, 0)


def frees_in(
    model: DemandModel, snapshot: ClusterSnapshot, node: str, load: tuple[int, float] | None = None
) -> float | None:
    """Seconds until the first task running on ``node`` is predicted to end (None: nothing runs there);
    ``load`` is the node's :meth:`DemandModel.load_of`, where the caller has it."""
    running = snapshot.running.get(node, ())
    if not running:
        return None
    n = snapshot.nodes[node]
    count, streams = load or model.load_of(snapshot, node)  # the same for every attempt there: computed once
    soonest = min(
        a.start_s + model.duration(n, model.apps.get(a.task.job_id, ""), a.task, count - 1, streams)
        for a in running
    )
    return max(soonest - snapshot.now, 0.0)


def places_of(snapshot: ClusterSnapshot, job: Job) -> dict[str, int]:
    """How many of the job's pods of each kind the cluster holds with nothing else running (its nodes' slots,
    or their allocatable over the pod's request): kept while the jobs are unchanged."""

    def count() -> dict[str, int]:
        kinds: tuple[TaskType, ...] = ("map", "reduce")
        admitted = [n for name, n in snapshot.nodes.items() if snapshot.admits(name, job)]
        return {kind: sum(holds(n, job, kind) for n in admitted) for kind in kinds}

    return snapshot.memo_jobs(("mrsched.places", job.id), count)


class SubmissionOrder:
    """QueueSort for the ablation without job order: first submitted, first served (Hadoop's FIFO)."""

    name = "SubmissionOrder"
    depends_on_jobs_only = True

    def __init__(self, model: DemandModel) -> None:
        self.model = model

    def order(self, snapshot: ClusterSnapshot, jobs: Sequence[Job]) -> list[Job]:
        for job in jobs:
            self.model.remember(job)
        return sorted(jobs, key=lambda j: j.submit_s)


class SoonestFinish:
    """Score: minus the predicted duration (s). Keeps each offered node's load for the round, grown by each
    placement it reserves, so that the tasks of one round spread as their predicted times say. With
    ``speed_aware`` off (the ablation) every node is taken for the reference machine: only the load counts."""

    name = "SoonestFinish"

    def __init__(self, model: DemandModel, speed_aware: bool = True) -> None:
        self.model = model
        self.speed_aware = speed_aware
        self.nodes: dict[str, Node] = {}
        # Per node, for the round, dropped when a placement there is reserved or given back: its load, and when
        # its first running task is predicted to end. ``changes`` counts those placements, so that a plugin can
        # keep what it derived from a node until the node changes (a placement changes no other node).
        self._load: dict[str, tuple[int, float]] = {}
        self._frees: dict[str, float | None] = {}
        self.changes: dict[str, int] = {}

    def begin_round(self, snapshot: ClusterSnapshot, offered: list[str]) -> None:
        self.nodes = snapshot.nodes
        self._load = {}
        self._frees = {}
        self.changes = {}

    def load(self, snapshot: ClusterSnapshot, node: str) -> tuple[int, float]:
        load = self._load.get(node)
        if load is None:
            load = self._load[node] = self.model.load_of(snapshot, node)
        return load

    def frees(self, snapshot: ClusterSnapshot, node: str) -> float | None:
        """:func:`frees_in`, kept for the round until the node changes."""
        if node not in self._frees:
            self._frees[node] = frees_in(self.model, snapshot, node, self.load(snapshot, node))
        return self._frees[node]

    def predicted(self, snapshot: ClusterSnapshot, task: Task, node: str) -> float:
        load = self.load(snapshot, node)
        n = snapshot.nodes[node]
        if not self.speed_aware:
            n = Node(n.name, n.cores, n.memory_mb)
        app = self.model.apps.get(task.job_id, "")
        return self.model.duration(n, app, task, *load)

    def score(self, snapshot: ClusterSnapshot, task: Task, node: str) -> float:
        return -self.predicted(snapshot, task, node)

    def reserve(self, snapshot: ClusterSnapshot, placement: Placement) -> None:
        self._changed(placement.node)

    def unreserve(self, snapshot: ClusterSnapshot, placement: Placement) -> None:
        self._changed(placement.node)

    def _changed(self, node: str) -> None:
        self._load.pop(node, None)
        self._frees.pop(node, None)
        self.changes[node] = self.changes.get(node, 0) + 1

    def on_job_finished(self, job: Job, now: float) -> None:
        self.model.forget(job)

    def on_task_finished(self, outcome: object) -> None:
        if isinstance(outcome, TaskOutcome):
            self.model.learn(outcome, self.nodes.get(outcome.node))

    def state(self) -> dict[str, Any]:
        """Each application's θ (``apps``, to its AppProfile) and what has been learned in all (``policy``, to
        ``PolicyProfile/mrsched``)."""
        apps = self.model.state()
        tasks = sum(int(k["tasks"]) for kinds in apps.values() for k in kinds.values())
        return {"apps": apps, "policy": {"appsLearned": len(apps), "tasksLearned": tasks}}

    def load_state(self, state: dict[str, Any]) -> None:
        self.model.load_state(state.get("apps", {}))


class WaitForFaster:
    """Permit (module docstring). ``gain`` ≤ 1 turns waiting off."""

    name = "WaitForFaster"

    def __init__(self, finish: SoonestFinish, gain: float, released: Callable[[Job], bool]) -> None:
        self.finish = finish
        self.gain = gain
        self.released = released
        self._tail = False

    def begin_round(self, snapshot: ClusterSnapshot, offered: list[str]) -> None:
        # Placements and waits change startable work and free places alike, so their comparison holds for the
        # round: only a round whose free places outnumber what could start may hold a task back.
        if self.gain <= 1.0:
            self._tail = False
            return
        free = sum(snapshot.free_slots(n, "map") for n in snapshot.nodes)
        startable = sum(
            job.unstarted("map") + (job.unstarted("reduce") if self.released(job) else 0)
            for job in snapshot.jobs
        )
        self._tail = startable <= free

    def permit(self, snapshot: ClusterSnapshot, placement: Placement) -> bool:
        if not self._tail:
            return True
        task, here = placement.task, placement.node
        job = snapshot.job(task.job_id)
        finish_here = self.finish.predicted(snapshot, task, here)
        for name in snapshot.nodes:
            if name == here or snapshot.fits(name, job, task.kind):
                continue  # a node with room was scored already and finished later
            free_at = self.finish.frees(snapshot, name)
            if free_at is None:
                continue
            if (free_at + self.finish.predicted(snapshot, task, name)) * self.gain <= finish_here:
                return False
        return True


class PhaseEnd:
    """Filter: keeps a job's task off a slow node where it would end after the job's other tasks of its kind
    would all be done on the faster ones, so that the node goes to the next job in order instead (the framework
    moves on when no node passes) and the job's last tasks are not its slowest. A node is refused when the task
    would take ``gain`` times longer there than the job's tasks left of that kind take elsewhere, that time
    estimated as a fluid: each other node m that admits the job runs ``c_m`` of its pods at once (its allocatable
    over the pod's request) at ``c_m / d_m`` tasks a second (``d_m`` the task's predicted time there), from
    now if it has room or from when its first running task is predicted to end (never, if nothing runs there
    and it has no room). ``gain`` ≤ 1 turns it off."""

    name = "PhaseEnd"

    def __init__(self, finish: SoonestFinish, gain: float) -> None:
        self.finish = finish
        self.gain = gain
        # Per (job, kind): each node's lane (None: it could not take one), with the node's change count.
        self._lanes: dict[tuple[str, str], dict[str, tuple[int, _Lane | None]]] = {}

    def begin_round(self, snapshot: ClusterSnapshot, offered: list[str]) -> None:
        self._lanes = {}

    def filter(self, snapshot: ClusterSnapshot, task: Task, node: str) -> str | None:
        if self.gain <= 1.0:
            return None
        job = snapshot.job(task.job_id)
        here = self.finish.predicted(snapshot, task, node)
        lanes = [lane for lane in self._lanes_of(snapshot, job, task) if lane[0] != node]
        if not lanes or here <= min(start + each for _, start, each, _ in lanes):
            return None  # no other node could start it sooner
        left = job.unstarted(task.kind)
        elsewhere = _fluid_finish(lanes, left)
        if here < self.gain * elsewhere:
            return None
        return f"ends in {here:.0f} s here; its job's {left} {task.kind}s left end in {elsewhere:.0f} s elsewhere"

    def _lanes_of(self, snapshot: ClusterSnapshot, job: Job, task: Task) -> list[_Lane]:
        """(node, seconds until it can start one, predicted seconds of one there, pods of the job it holds),
        in the snapshot's order of nodes; a node's lane is recomputed only once a placement there changed it."""
        kept = self._lanes.setdefault((job.id, task.kind), {})
        changes = self.finish.changes
        lanes = []
        for name, n in snapshot.nodes.items():
            stamp = changes.get(name, 0)
            entry = kept.get(name)
            if entry is None or entry[0] != stamp:
                entry = kept[name] = (stamp, self._lane(snapshot, job, task, name, n))
            if entry[1] is not None:
                lanes.append(entry[1])
        return lanes

    def _lane(self, snapshot: ClusterSnapshot, job: Job, task: Task, name: str, n: Node) -> _Lane | None:
        if not snapshot.admits(name, job):
            return None
        start = 0.0 if snapshot.fits(name, job, task.kind) else self.finish.frees(snapshot, name)
        pods = holds(n, job, task.kind)
        if start is None or pods <= 0:
            return None
        return (name, start, self.finish.predicted(snapshot, task, name), float(pods))


def _fluid_finish(lanes: list[_Lane], tasks: int) -> float:
    """Seconds until ``tasks`` tasks are done by the lanes run as a fluid (:class:`PhaseEnd`), and never before
    the soonest one task could end."""
    soonest = min(start + each for _, start, each, _ in lanes)
    rate, done_at_start, t = 0.0, 0.0, 0.0
    ordered = sorted(lanes, key=lambda lane: lane[1])
    for i, (_, start, each, holds) in enumerate(ordered):
        done_at_start += rate * (start - t)
        t = start
        rate += holds / max(each, 1e-9)
        upcoming = ordered[i + 1][1] if i + 1 < len(ordered) else float("inf")
        if done_at_start + rate * (upcoming - t) >= tasks:
            return max(t + (tasks - done_at_start) / rate, soonest)
    return soonest


class ReleaseByShuffle:
    """When a job's reduces may start: once none of its maps waits for a place, or earlier, once the time its
    maps' work left takes on its map places (as :meth:`DemandModel.remaining_time_s` counts it) is no more
    than one of its reduces' predicted time, so that a long reduce's shuffle runs beside the last maps (the
    reason for Hadoop's slow-start) while a short reduce is not started to wait for map output it cannot yet
    fetch."""

    name = "ReleaseByShuffle"

    def __init__(self, model: DemandModel) -> None:
        self.model = model
        self._snapshot: ClusterSnapshot | None = None

    def begin_round(self, snapshot: ClusterSnapshot, offered: list[str]) -> None:
        self._snapshot = snapshot

    def __call__(self, job: Job) -> bool:
        if job.unstarted("map") == 0:
            return True
        snapshot, maps, reduces = self._snapshot, job.tasks("map"), job.tasks("reduce")
        if snapshot is None or not reduces or not maps:
            return False
        places = places_of(snapshot, job)
        map_left = self.model.reference_s(job.app, maps[0]) * (job.unstarted("map") + job.running("map") / 2)
        return map_left / max(places["map"], 1) <= self.model.reference_s(job.app, reduces[0])
