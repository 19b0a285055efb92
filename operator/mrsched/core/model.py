"""The scheduling core's model of a cluster, shared by the operator and the simulator.

Both build the same :class:`ClusterSnapshot` (nodes, running attempts, jobs with pending tasks, each node's
latest metrics and their age) and hand it to a policy, which answers with :class:`Placement` s, each carrying
an :class:`Explanation` (policy, score, reason, runner-up) that the operator writes on the pod.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from mrsched.core.counts import UNCAPPED as UNCAPPED  # re-exported: the model's names, as before
from mrsched.core.counts import pending_of as pending_of
from mrsched.core.counts import pods_that_fit as pods_that_fit
from mrsched.core.cycle import CycleState
from mrsched.core.probes import Capability

TaskType = Literal["map", "reduce"]
_T = TypeVar("_T")

#: ClusterSnapshot.jobs_version's values.
_JOBS_VERSIONS = itertools.count()


@dataclass(frozen=True, slots=True)
class Node:
    """What a scheduler may know of a node: identity, topology, size and slot limits, never its physics."""

    name: str
    cores: int
    memory_mb: float
    rack: str = "rack-1"
    zone: str = "zone-a"
    labels: tuple[tuple[str, str], ...] = ()
    node_class: str = ""
    map_slots: int = 2  # Hadoop's mapred.tasktracker.map.tasks.maximum
    reduce_slots: int = 2  # ... and reduce.tasks.maximum
    #: Kubernetes' concurrency rule: the node takes tasks while their pods' requests fit its allocatable (``cores``,
    #: ``memory_mb``) beside what other pods request there (:attr:`ClusterSnapshot.reserved`); maps and reduces
    #: share it. The slot counts are then only a cap, :data:`UNCAPPED` unless a label or a policy sets one (the
    #: self-adaptive slots of seed 001 do). False: Hadoop 1's fixed slots, as the papers ran.
    by_requests: bool = False
    #: κ, Ω, σ measured by probe tasks (seed 002 P3-A), when a probing policy asked for them; else None.
    probe: Capability | None = None
    #: The soft-fault monitor's slowdown of the node over its probed nominal, (CPU, disk), while it judges the
    #: node degraded (seed 002 ch.5; 1.0 for a resource not degraded); None when healthy or not monitored.
    slowdown: tuple[float, float] | None = None

    def slots(self, kind: TaskType) -> int:
        return self.map_slots if kind == "map" else self.reduce_slots


@dataclass(frozen=True, slots=True)
class Hints:
    """Seed 000's job features: CPU, memory, disk and network use on a 1-10 scale, per task type."""

    cpu: int = 5
    memory: int = 5
    disk: int = 5
    network: int = 5


@dataclass(slots=True)
class Task:
    """One map or reduce task of a job. ``replicas`` are the nodes holding a map's input split."""

    job_id: str
    kind: TaskType
    index: int
    input_mb: float = 0.0
    replicas: tuple[str, ...] = ()
    work_s: float | None = None  # a trace's measured task time, used as its CPU work when it gives no bytes
    attempts: int = 0  # attempts started so far
    running: bool = False
    done: bool = False
    failed: bool = False
    backing_off: bool = False  # its last attempt failed and its retry delay has not passed (operator only)

    @property
    def pending(self) -> bool:
        return not (self.running or self.done or self.failed or self.backing_off)

    @property
    def key(self) -> str:
        return f"{self.job_id}/{self.kind}/{self.index}"


@dataclass(frozen=True, slots=True)
class Resources:
    """A task pod's requests (kube-scheduler packs by these)."""

    cpu: float = 1.0
    memory_mb: float = 1024.0


@dataclass(slots=True)
class Job:
    id: str
    app: str
    submit_s: float
    maps: list[Task]
    reduces: list[Task]
    user: str = "default"
    queue: str = "default"
    priority: int = 0
    weight: float = 1.0
    map_hints: Hints = field(default_factory=Hints)
    reduce_hints: Hints = field(default_factory=Hints)
    reduce_slowstart: float = 0.05  # Hadoop's mapred.reduce.slowstart.completed.maps
    map_request: Resources = field(default_factory=Resources)
    reduce_request: Resources = field(default_factory=Resources)
    max_attempts: int = 4  # Hadoop's mapred.map.max.attempts
    # Bookkeeping the scheduler reads; the owner (simulator or operator) keeps it current.
    running_maps: int = 0
    running_reduces: int = 0
    finished_maps: int = 0
    finished_reduces: int = 0
    start_s: float | None = None
    finish_s: float | None = None
    #: MB of intermediate data (map output) of the job's finished maps, by the node that holds it: seed 003's
    #: w_i(u) (Eq 1). Each reduce fetches its partition of every node's share.
    map_output_mb: dict[str, float] = field(default_factory=dict)
    #: The nodes Kubernetes' filters pass for the job's pods (its tolerations against their taints, its node
    #: selector against their labels: :mod:`mrsched.core.kuberules`), set by the owner before each round; None:
    #: every node. :meth:`ClusterSnapshot.fits` refuses the others, so a policy scores only what passed.
    nodes: frozenset[str] | None = None

    def tasks(self, kind: TaskType) -> list[Task]:
        return self.maps if kind == "map" else self.reduces

    def request(self, kind: TaskType) -> Resources:
        """The requests of one task pod of ``kind``."""
        return self.map_request if kind == "map" else self.reduce_request

    def running(self, kind: TaskType) -> int:
        return self.running_maps if kind == "map" else self.running_reduces

    def unstarted(self, kind: TaskType) -> int:
        """Tasks of ``kind`` neither finished nor running: what the job still has to start."""
        finished = self.finished_maps if kind == "map" else self.finished_reduces
        return len(self.tasks(kind)) - finished - self.running(kind)

    @property
    def running_tasks(self) -> int:
        return self.running_maps + self.running_reduces

    @property
    def map_progress(self) -> float:
        return self.finished_maps / len(self.maps) if self.maps else 1.0

    @property
    def reduce_progress(self) -> float:
        return self.finished_reduces / len(self.reduces) if self.reduces else 1.0

    @property
    def finished(self) -> bool:
        return self.finished_maps == len(self.maps) and self.finished_reduces == len(self.reduces)

    def reduces_allowed(self) -> bool:
        """Reduces may start once the slow-start fraction of maps has completed (Hadoop's rule)."""
        return not self.maps or self.finished_maps >= self.reduce_slowstart * len(self.maps)


@dataclass(frozen=True, slots=True)
class Attempt:
    task: Task
    attempt: int
    node: str
    start_s: float


@dataclass(frozen=True, slots=True)
class NodeMetrics:
    """A node's latest live metrics; ``age_s`` is how old they are, None values were missing or stale.

    ``status`` says why values may be None: ``fresh`` (values are current; a None value is a series the
    node lacks), ``stale`` (the node's series stopped longer ago than the configured bound), ``missing``
    (never seen), ``unavailable`` (the metrics source did not answer). Policies treat None as unknown,
    never as zero.
    """

    load1: float | None = None
    cpu_utilisation: float | None = None  # 0..1 over the last interval
    memory_available_mb: float | None = None
    disk_bytes_per_s: float | None = None
    network_bytes_per_s: float | None = None
    age_s: float | None = None
    status: str = "fresh"


@dataclass(slots=True)
class ClusterSnapshot:
    """Everything a policy sees in one scheduling round."""

    now: float
    nodes: dict[str, Node]
    running: dict[str, list[Attempt]]  # node name -> attempts running there
    jobs: list[Job]  # active jobs in submission order
    metrics: dict[str, NodeMetrics] = field(default_factory=dict)
    #: Bumped on every change of jobs or running attempts, so that policies can cache per-round work.
    version: int = 0
    #: Bumped with :attr:`version` by :meth:`touch` (the owner changed jobs or attempts), not by :meth:`commit`:
    #: what only a placement changes (a task now running) leaves :meth:`memo_jobs`' values as they were.
    #: Unique across snapshots (one counter for all), so that a value kept by it is never taken for another's.
    jobs_version: int = field(default_factory=lambda: next(_JOBS_VERSIONS))
    #: Seconds between a node's heartbeats (Hadoop mode) or between the operator's scheduling rounds: Hadoop 1
    #: derives its delay-scheduling waits from it (FairScheduler: 1.5 heartbeat intervals).
    heartbeat_s: float = 3.0
    #: CPU and memory that pods this snapshot does not list (other tenants', other policies' jobs, job commits)
    #: request on each node: a by-requests node has that much less to give.
    reserved: dict[str, Resources] = field(default_factory=dict)
    #: What the round computes once and reuses (caches, memos, counts): see :mod:`mrsched.core.cycle`.
    cycle: CycleState = field(default_factory=CycleState, repr=False)

    def slot_total(self, kind: TaskType) -> int:
        """The cluster's slots of ``kind``, summed over every node: Hadoop 1's ClusterStatus.getMaxMapTasks /
        getMaxReduceTasks, which both Hadoop schedulers read on every heartbeat. Kept until a node is replaced
        (:meth:`replace_node`): a heartbeat would otherwise cost a pass over every node. With by-requests nodes
        it is each node's :meth:`capacity`, the tasks of ``kind`` its allocatable holds, kept per version."""
        totals = self.cycle.slot_totals
        if totals is None or totals[0] != len(self.nodes):
            self.cycle.capacity_totals.clear()
            nodes = self.nodes.values()
            totals = (len(self.nodes), sum(n.map_slots for n in nodes), sum(n.reduce_slots for n in nodes))
            self.cycle.slot_totals = totals
            self.cycle.any_by_requests = any(n.by_requests for n in nodes)
        if self.cycle.any_by_requests:
            # Not per version: a node's capacity depends on its allocatable, what other pods reserve there and
            # the smallest request among active jobs, none of which a placement changes; per version it was a
            # pass over every node per placement (quadratic in nodes at a round's scale).
            request = self.smallest_request(kind)
            key = (kind, request.cpu, request.memory_mb)
            total = self.cycle.capacity_totals.get(key)
            if total is None:
                total = self.cycle.capacity_totals[key] = sum(self.capacity(n, kind) for n in self.nodes)
            return total
        return totals[1] if kind == "map" else totals[2]

    def reserve(self, node: str, resources: Resources) -> None:
        """Set what pods this snapshot does not list request on ``node`` (:attr:`reserved`)."""
        self.reserved[node] = resources
        self.cycle.capacity_totals.clear()

    def replace_node(self, name: str, node: Node) -> None:
        """Change what the scheduler knows of a node (its slots, its health verdict); jobs and running attempts
        are unchanged, so :attr:`version` is too."""
        old, totals = self.nodes.get(name), self.cycle.slot_totals
        self.nodes[name] = node
        self.cycle.capacity_totals.clear()
        self.cycle.memo_version = -1  # a node's slots or allocatable may be in what :meth:`memo` keeps
        if old is None or totals is None or old.by_requests != node.by_requests:
            self.cycle.slot_totals = None
        else:  # kept exact by the difference: self-adaptive slots replaces a node on each of its heartbeats
            self.cycle.slot_totals = (
                totals[0],
                totals[1] + node.map_slots - old.map_slots,
                totals[2] + node.reduce_slots - old.reduce_slots,
            )

    def memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per :attr:`version`: for values that depend on which tasks run (what is left of a
        node's allocatable, DARA's window, the nodes with a free slot), which change only when a job or a running
        attempt does (or a node is replaced), while a cluster's heartbeats come far more often; what a placement
        cannot change goes in :meth:`memo_jobs`. Callers must not mutate what it returns."""
        return self.cycle.memo_at(self.version, key, compute)

    def memo_jobs(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per :attr:`jobs_version`, for values that depend on the jobs but not on which of
        their tasks run (the FIFO order, the smallest request, the tasks still to finish): a round's placements
        (:meth:`commit`) leave them as they were, where :meth:`memo` would compute them again after each one."""
        return self.cycle.memo_jobs_at(self.jobs_version, key, compute)

    def running_tasks(self, kind: TaskType) -> int:
        """Tasks of ``kind`` running, over every job (a task once, however many attempts run)."""
        return self._counts()[0 if kind == "map" else 1]

    def pending_tasks(self, kind: TaskType) -> int:
        """Tasks of ``kind`` to start, over every job: maps neither running nor finished, and the same of
        reduces in jobs past slow-start (:func:`pending_of`)."""
        return self._counts()[2 if kind == "map" else 3]

    def nothing_pending(self) -> bool:
        """No job has a map or a startable reduce to start (:meth:`pending_tasks` of both kinds is 0)."""
        counts = self._counts()
        return counts[2] == 0 and counts[3] == 0

    def _counts(self) -> list[int]:
        if self.cycle.task_counts is None or self.cycle.task_counts_version != self.jobs_version:
            counts = [0, 0, 0, 0]
            for job in self.jobs:
                counts[0] += job.running_maps
                counts[1] += job.running_reduces
                counts[2] += pending_of(job, "map")
                counts[3] += pending_of(job, "reduce")
            self.cycle.task_counts, self.cycle.task_counts_version = counts, self.jobs_version
        return self.cycle.task_counts

    def running_on(self, node: str, kind: TaskType | None = None) -> int:
        attempts = self.running.get(node, ())
        return len(attempts) if kind is None else sum(1 for a in attempts if a.task.kind == kind)

    def free_slots(self, node: str, kind: TaskType) -> int:
        """How many more tasks of ``kind`` the node takes: its free slots; on a by-requests node also no more
        than the smallest request of ``kind`` among active jobs fits in what is left (:meth:`fits` decides for
        one job's request)."""
        n = self.nodes[node]
        free = n.slots(kind) - self.running_on(node, kind)
        if not n.by_requests or free <= 0:
            return free
        cpu, memory = self.unrequested(node)
        request = self.smallest_request(kind)
        return min(free, pods_that_fit(cpu, memory, request))

    def capacity(self, node: str, kind: TaskType) -> int:
        """The tasks of ``kind`` the node runs when nothing else of ours runs there: its slots, or on a
        by-requests node as many of the smallest request as its allocatable (less :attr:`reserved`) holds."""
        n = self.nodes[node]
        if not n.by_requests:
            return n.slots(kind)
        other = self.reserved.get(node)
        cpu = n.cores - (other.cpu if other else 0.0)
        memory = n.memory_mb - (other.memory_mb if other else 0.0)
        return min(n.slots(kind), pods_that_fit(cpu, memory, self.smallest_request(kind)))

    def admits(self, node: str, job: Job) -> bool:
        """The job's pods may run on the node at all: Kubernetes' filters passed it (:attr:`Job.nodes`)."""
        return job.nodes is None or node in job.nodes

    def fits(self, node: str, job: Job, kind: TaskType) -> bool:
        """One more task of ``job`` and ``kind`` may start on the node: the node :meth:`admits` the job, has a
        free slot, and on a by-requests node its pod's request fits what is left of the node's allocatable
        (kube-scheduler's TaintToleration, NodeAffinity and NodeResourcesFit filters)."""
        if job.nodes is not None and node not in job.nodes:
            return False
        n = self.nodes[node]
        if n.slots(kind) - self.running_on(node, kind) <= 0:
            return False
        if not n.by_requests:
            return True
        cpu, memory = self.unrequested(node)
        return pods_that_fit(cpu, memory, job.request(kind)) >= 1

    def unrequested(self, node: str) -> tuple[float, float]:
        """The node's allocatable CPU and memory that no pod requests: less :attr:`reserved` and the requests
        of the attempts running there. Kept per :attr:`version`."""
        return self.memo(("unrequested", node), lambda: self._unrequested(node))

    def _unrequested(self, node: str) -> tuple[float, float]:
        n, other = self.nodes[node], self.reserved.get(node)
        cpu = n.cores - (other.cpu if other else 0.0)
        memory = n.memory_mb - (other.memory_mb if other else 0.0)
        for attempt in self.running.get(node, ()):
            request = self.job(attempt.task.job_id).request(attempt.task.kind)
            cpu -= request.cpu
            memory -= request.memory_mb
        return cpu, memory

    def smallest_request(self, kind: TaskType) -> Resources:
        """The smallest pod request of ``kind`` among the active jobs (by CPU, then memory), the unit a
        by-requests node's free slots are counted in; the default request when no job is active."""
        return self.memo_jobs(
            ("smallest-request", kind),
            lambda: min(
                (job.request(kind) for job in self.jobs),
                key=lambda r: (r.cpu, r.memory_mb),
                default=Resources(),
            ),
        )

    def commit(self, placement: Placement) -> None:
        """Record a placement as made, so that the rest of the round sees the task running on its node. A job
        counts a running task once, however many attempts of it run (a speculative copy adds an attempt only)."""
        task = placement.task
        newly_running = not task.running
        task.running = True
        self.version += 1
        if newly_running:
            job = self.job(task.job_id)
            counts = self.cycle.task_counts if self.cycle.task_counts_version == self.jobs_version else None
            before = pending_of(job, task.kind) if counts is not None else 0
            if task.kind == "map":
                job.running_maps += 1
            else:
                job.running_reduces += 1
            if counts is not None:  # kept exact: one more running, and what that leaves to start
                kind = 0 if task.kind == "map" else 1
                counts[kind] += 1
                counts[2 + kind] += pending_of(job, task.kind) - before
        self.running.setdefault(placement.node, []).append(
            Attempt(task, task.attempts, placement.node, self.now)
        )

    def touch(self, *, jobs_changed: bool = False) -> None:
        """The owner changed something (a task ended, a job arrived or left): invalidate policies' caches."""
        self.version += 1
        self.jobs_version = next(_JOBS_VERSIONS)
        if jobs_changed:
            self.cycle.jobs_by_id = None

    def job(self, job_id: str) -> Job:
        if self.cycle.jobs_by_id is None or job_id not in self.cycle.jobs_by_id:
            self.cycle.jobs_by_id = {j.id: j for j in self.jobs}
        return self.cycle.jobs_by_id[job_id]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a task went where it went, in words a user reads on the pod."""

    policy: str
    score: float
    reason: str
    runner_up: str | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    task: Task
    node: str
    explanation: Explanation


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What the policies learn from when a task attempt ends (seed 002 ch.4 measures CPU time and bytes)."""

    task: Task
    node: str
    start_s: float
    finish_s: float
    succeeded: bool
    cpu_s: float = 0.0
    read_bytes: int = 0
    written_bytes: int = 0
    network_bytes: int = 0
    locality: Literal["node", "rack", "off", "none"] = "none"

    @property
    def duration_s(self) -> float:
        return self.finish_s - self.start_s
