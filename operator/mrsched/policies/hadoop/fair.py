"""The Hadoop Fair Scheduler (Hadoop 1 ``FairScheduler``, src/contrib/fairscheduler at Hadoop 1.2.1; see
:mod:`mrsched.policies.hadoop.slots` for the tag), with delay scheduling.

* Pools, one per user (``mapred.fairscheduler.poolnameproperty`` = user.name, PoolManager.java:127-128) or per
  queue: a pool has a weight (``weights``, default 1.0: PoolManager.getPoolWeight, PoolManager.java:516-522) and a
  minimum share (slots). A pool's weight is only what is configured: Hadoop 1 does not sum its jobs' weights
  into it (PoolSchedulable.getWeight, PoolSchedulable.java:124-126).
* A job's weight is its priority factor (FairScheduler.getJobWeight and getPriorityFactor,
  FairScheduler.java:783-814: VERY_HIGH 4, HIGH 2, NORMAL 1, LOW 0.5, VERY_LOW 0.25; our int priority +2..-2,
  clamped, see :func:`~mrsched.policies.hadoop.slots.priority_factor`) times ``Job.weight`` (our extension, 1 by
  default, in the place of Hadoop's optional WeightAdjuster). It orders jobs within a pool (``jobOrder: fair``).
* Fair shares (what Hadoop displays and preempts by) are its ``computeFairShares``: find the ratio R such
  that Σ_p clamp(R·weight_p, minShare_p, demand_p) equals min(total slots, total demand), by doubling then
  binary search.
* On a heartbeat, pools are ordered by Hadoop's ``FairShareComparator`` (SchedulingAlgorithms.java:68-99): pools
  below their minimum share ("needy") first, by running/minShare; then the rest by running/weight; ties by
  start time (0 for every pool, PoolSchedulable.java:143-145) and then name. Within a pool, jobs are ordered
  the same way with their weights (``fair``), or by priority then submission (``fifo``: FifoComparator,
  SchedulingAlgorithms.java:38-53).
* The heartbeat (FairScheduler.assignTasks, FairScheduler.java:400-557): with ``assignMultiple`` (Hadoop 1.x's
  default, ``mapred.fairscheduler.assignmultiple`` = true, FairScheduler.java:190-191) it hands out tasks one at
  a time until no map and no reduce can go: at most the node's free slots of each kind, or
  ``assignMultipleMaps``/``assignMultipleReduces`` (``mapred.fairscheduler.assignmultiple.maps/.reduces``, -1 =
  no cap, FairScheduler.java:192-195, maxTasksToAssign 564-574), and never beyond the load manager's cap
  (CapBasedLoadManager, the default ``mapred.fairscheduler.loadmanager``, FairScheduler.java:167-169): a node
  runs at most ceil(its slots × min(1, demand / cluster slots)) tasks of a kind
  (CapBasedLoadManager.java:45-63). Each step takes the kind the node runs fewer of, maps on a tie
  (FairScheduler.java:488-504). Without ``assignMultiple``, one task per heartbeat (java:480-486).
* Delay scheduling (Zaharia et al., as in Hadoop 1's getAllowedLocalityLevel, FairScheduler.java:620-660): a
  job whose last map was node-local may launch only node-local maps until it has waited
  ``nodeLocalityDelayS``, rack-local ones until it has waited ``nodeLocalityDelayS + rackLocalityDelayS``,
  then any; after a rack-local launch it waits ``rackLocalityDelayS`` for any. The wait counts as Hadoop
  counts it (updateLocalityWaitTimes, java:579-589, and the end of assignTasks, java:547-553): a job that was
  looked at on a heartbeat and launched no map there is "skipped", and the time to the next heartbeat (of any
  node) is added to its wait; a launch resets it (updateLastMapLocalityLevel, java:595-605). Jobs whose maps
  have no location information may launch anywhere (java:628-630). Unset delays are Hadoop's default,
  computed from the heartbeat: min(15 s, 1.5 × ``snapshot.heartbeat_s``) for both (FairScheduler.update,
  java:672-678, MAX_AUTOCOMPUTED_LOCALITY_DELAY java:69-70, ``getNextHeartbeatInterval`` being the
  heartbeat). (Hadoop auto-computes both as soon as either is unset, java:202-212; here a delay that is set
  is kept.)

**On Kubernetes** [ours]: by requests a tracker's slots become the node's request capacity
(``ClusterSnapshot.capacity``, for the load manager's cap) and a kind is rejected once what the running pods
leave of the allocatable holds no more of it; a job whose pod does not fit is passed over. Fair decides no
concurrency of its own: a baseline.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from mrsched.core.locality import LEVEL_RANK, Level
from mrsched.core.model import ClusterSnapshot, Job, Placement, Task, TaskOutcome, TaskType
from mrsched.core.policy import Configured, Policy, PolicyConfig, register
from mrsched.policies.hadoop.slots import SlotPolicy, hadoop_priority, load_capacity, priority_factor

_LEVELS: tuple[Level, ...] = ("node", "rack", "off")
_KINDS: tuple[TaskType, TaskType] = ("map", "reduce")


def compute_fair_shares(
    weights: Sequence[float], min_shares: Sequence[float], demands: Sequence[float], total: float
) -> list[float]:
    """Hadoop's ``SchedulingAlgorithms.computeFairShares``: max-min fair shares with weights and minimums."""

    def share(i: int, ratio: float) -> float:
        return min(demands[i], max(min_shares[i], ratio * weights[i]))

    def used(ratio: float) -> float:
        return sum(share(i, ratio) for i in range(len(weights)))

    target = min(total, sum(demands))
    high = 1.0
    while used(high) < target and high < 1e12:
        high *= 2.0
    low = 0.0
    for _ in range(50):  # Hadoop does 25 steps; 50 make the result exact to double precision here
        mid = (low + high) / 2.0
        if used(mid) < target:
            low = mid
        else:
            high = mid
    return [share(i, high) for i in range(len(weights))]


def _pool_key(pool: _Pool) -> tuple[int, float, str]:
    """Hadoop's FairShareComparator for pools (SchedulingAlgorithms.java:68-99) as a sort key: needy pools
    (running < min(minShare, demand)) first by running/minShare, then the rest by running/weight; ties by start
    time (0 for every pool, PoolSchedulable.java:143-145), then by name."""
    floor = min(pool.min_share, pool.demand)
    if pool.running < floor:
        return (0, pool.running / max(floor, 1.0), pool.name)
    return (1, pool.running / pool.weight, pool.name)


def job_weight(job: Job) -> float:
    """A job's Fair weight: Hadoop's priority factor (FairScheduler.getJobWeight, FairScheduler.java:783-803,
    without sizebasedweight) times ``Job.weight``."""
    return priority_factor(job) * job.weight


class _Order:
    """Pools sorted by the FairShareComparator key, each with its jobs sorted, updated in place on a placement."""

    def __init__(
        self, fair: Fair, snapshot: ClusterSnapshot, kind: TaskType, fingerprint: tuple[object, ...]
    ):
        self.fair, self.kind, self.fingerprint = fair, kind, fingerprint
        self.pools = [p for p in fair.pools(snapshot, kind) if p.demand > p.running]
        self.pool_keys = {p.name: _pool_key(p) for p in self.pools}
        self.pools.sort(key=lambda p: self.pool_keys[p.name])
        for pool in self.pools:
            pool.jobs.sort(key=self._job_key)

    def _job_key(self, job: Job) -> tuple[float, ...]:
        if self.fair.cfg.job_order == "fifo":  # FifoComparator: priority, then start time
            return (-hadoop_priority(job), job.submit_s)
        # FairShareComparator with a job's minShare of 0 (JobSchedulable.getMinShare): running / weight.
        return (job.running(self.kind) / job_weight(job), job.submit_s)

    def jobs(self) -> Iterator[Job]:
        for pool in self.pools:
            yield from pool.jobs

    def placed(self, job: Job) -> None:
        """One more task of ``job`` runs: move its pool, and the job within it, to their new places."""
        fair = self.fair
        name = job.user if fair.cfg.pool_by == "user" else job.queue
        index = next(i for i, p in enumerate(self.pools) if p.name == name)
        pool = self.pools.pop(index)
        pool.running += 1
        key = self.pool_keys[pool.name] = _pool_key(pool)
        # Binary searches over the sorted lists, computing the keys they visit only: a placement costs log(jobs)
        # keys, not one per job of its pool.
        self.pools.insert(bisect.bisect_right(self.pools, key, key=lambda p: self.pool_keys[p.name]), pool)
        del pool.jobs[next(i for i, j in enumerate(pool.jobs) if j is job)]  # identity: Job's == is costly
        pool.jobs.insert(bisect.bisect_right(pool.jobs, self._job_key(job), key=self._job_key), job)


class FairConfig(PolicyConfig):
    pool_by: Literal["user", "queue"] = Field("user", alias="poolBy")
    weights: dict[str, float] = Field(default_factory=dict)  # pool -> weight (default 1)
    min_shares: dict[str, int] = Field(default_factory=dict, alias="minShares")  # pool -> slots
    job_order: Literal["fair", "fifo"] = Field("fair", alias="jobOrder")
    # mapred.fairscheduler.locality.delay.node / .rack; None: Hadoop's min(15 s, 1.5 × heartbeat).
    node_locality_delay_s: float | None = Field(None, alias="nodeLocalityDelayS", ge=0)
    rack_locality_delay_s: float | None = Field(None, alias="rackLocalityDelayS", ge=0)
    # mapred.fairscheduler.assignmultiple: true in Hadoop 1.x (FairScheduler.java:190-191).
    assign_multiple: bool = Field(True, alias="assignMultiple")
    # mapred.fairscheduler.assignmultiple.maps / .reduces: tasks of a kind per heartbeat, -1 = the free slots.
    assign_multiple_maps: int = Field(-1, alias="assignMultipleMaps", ge=-1)
    assign_multiple_reduces: int = Field(-1, alias="assignMultipleReduces", ge=-1)


#: FairScheduler.MAX_AUTOCOMPUTED_LOCALITY_DELAY (FairScheduler.java:69-70): 15 s.
MAX_AUTOCOMPUTED_LOCALITY_DELAY_S = 15.0


def default_locality_delay(heartbeat_s: float) -> float:
    """Hadoop 1's locality delay when none is configured: 1.5 × the JobTracker's next heartbeat interval, at most
    15 s (FairScheduler.update, FairScheduler.java:672-678)."""
    return min(MAX_AUTOCOMPUTED_LOCALITY_DELAY_S, 1.5 * heartbeat_s)


@dataclass
class _Wait:
    """Hadoop's per-job delay-scheduling variables (FairScheduler.JobInfo, FairScheduler.java:116-131)."""

    level: int = 0  # lastMapLocalityLevel as an index into _LEVELS (NODE at first)
    waited: float = 0.0  # timeWaitedForLocalMap, seconds
    skipped: bool = False  # skippedAtLastHeartbeat


@dataclass
class _Pool:
    name: str
    jobs: list[Job]
    weight: float
    min_share: float
    running: int
    demand: int

    def needy(self) -> bool:
        return self.running < min(self.min_share, self.demand)


@register
class Fair(Configured[FairConfig], SlotPolicy):
    name = "fair"
    Config = FairConfig
    #: A skipped round only lengthens the next ``since`` of updateLocalityWaitTimes (:meth:`_begin_heartbeat`),
    #: as a late heartbeat would; with no task to start, no job waits on locality meanwhile.
    skips_quiet_rounds = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._waits: dict[str, _Wait] = defaultdict(_Wait)
        self._skipped: set[str] = set()  # the jobs whose wait says skipped: each heartbeat visits these only
        self._orders: dict[str, _Order] = {}
        # Hadoop's lastHeartbeatTime (FairScheduler.java:100), the heartbeat being served (time, node), and the
        # jobs that launched a map on it (assignTasks' launchedMap, java:452).
        self._last_heartbeat_s: float | None = None
        self._heartbeat: tuple[float, str] | None = None
        self._launched: set[str] = set()

    def idle(self, snapshot: ClusterSnapshot) -> bool:
        """With no task to start and no job skipped on a heartbeat (:meth:`heartbeat_unobserved`), a heartbeat
        places nothing and changes nothing a later one reads: the simulator may skip it."""
        return snapshot.nothing_pending() and self.heartbeat_unobserved()

    def heartbeat_unobserved(self) -> bool:
        """No job waits on a skipped heartbeat (the jobs :meth:`_begin_heartbeat` adds the time to): a heartbeat
        that starts nothing then changes nothing a later one reads. It only moves the time of the last
        heartbeat, and the next heartbeat's ``since`` from it goes to the jobs skipped meanwhile: none, since
        only a heartbeat skips a job, and that heartbeat moves the time first."""
        return not self._skipped

    def pools(self, snapshot: ClusterSnapshot, kind: TaskType) -> list[_Pool]:
        grouped: dict[str, list[Job]] = defaultdict(list)
        for job in snapshot.jobs:
            grouped[job.user if self.cfg.pool_by == "user" else job.queue].append(job)
        pools = []
        for name, jobs in grouped.items():
            running = sum(j.running(kind) for j in jobs)
            pending = sum(self._pending(j, kind) for j in jobs)
            pools.append(
                _Pool(
                    name,
                    jobs,
                    self.cfg.weights.get(name, 1.0),
                    float(self.cfg.min_shares.get(name, 0)),
                    running,
                    running + pending,
                )
            )
        return pools

    @staticmethod
    def _pending(job: Job, kind: TaskType) -> int:
        if kind == "reduce" and not job.reduces_allowed():
            return 0
        tasks = job.tasks(kind)
        done = job.finished_maps if kind == "map" else job.finished_reduces
        return max(0, len(tasks) - done - job.running(kind))

    def _order(self, snapshot: ClusterSnapshot, kind: TaskType) -> _Order:
        """The round's pool and job order, built once per round and kept current as this policy places tasks
        (rebuilt when anything but this policy's own placements changed the snapshot)."""
        fingerprint = (id(snapshot), snapshot.version)
        cached = self._orders.get(kind)
        if cached is None or cached.fingerprint != fingerprint:
            cached = self._orders[kind] = _Order(self, snapshot, kind, fingerprint)
        return cached

    def _own_change(self, snapshot: ClusterSnapshot) -> None:
        """Our placement bumped the snapshot's version; the orders already account for it."""
        for order in self._orders.values():
            if order.fingerprint == (id(snapshot), snapshot.version - 1):
                order.fingerprint = (id(snapshot), snapshot.version)

    def locality_delays(self, heartbeat_s: float) -> tuple[float, float]:
        """(node, rack) locality delays in seconds: the configured ones, else Hadoop's default from the heartbeat."""
        auto = default_locality_delay(heartbeat_s)
        node, rack = self.cfg.node_locality_delay_s, self.cfg.rack_locality_delay_s
        return (auto if node is None else node, auto if rack is None else rack)

    def _begin_heartbeat(self, now: float, node: str) -> None:
        """A new heartbeat (of ``node`` at ``now``): Hadoop's updateLocalityWaitTimes (FairScheduler.java:579-589)
        adds the time since the last heartbeat of any node to the wait of every job skipped on it. Calls for the
        same node at the same time (a composing policy asking for one map at a time) are one heartbeat."""
        if self._heartbeat == (now, node):
            return
        self._heartbeat = (now, node)
        since = 0.0 if self._last_heartbeat_s is None else max(0.0, now - self._last_heartbeat_s)
        self._last_heartbeat_s = now
        self._launched = set()
        for job_id in self._skipped:
            wait = self._waits[job_id]
            wait.waited += since
            wait.skipped = False
        self._skipped.clear()

    def _allowed(self, job: Job, heartbeat_s: float) -> Level:
        """Hadoop 1's getAllowedLocalityLevel (FairScheduler.java:620-660) from the job's last launch level and
        the time it has waited since."""
        wait = self._waits[job.id]
        node_delay, rack_delay = self.locality_delays(heartbeat_s)
        if wait.level == 0:
            if wait.waited >= node_delay + rack_delay:
                return "off"
            return "rack" if wait.waited >= node_delay else "node"
        if wait.level == 1:
            return "off" if wait.waited >= rack_delay else "rack"
        return "off"

    def holding(self, snapshot: ClusterSnapshot, node: str) -> str | None:
        if self._skipped:
            return "delay scheduling: jobs wait for a node-local or rack-local slot"
        if snapshot.free_slots(node, "map") <= 0 and snapshot.free_slots(node, "reduce") <= 0:
            return "no free slot of the kind a task needs"
        return None

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        """Hadoop 1's FairScheduler.assignTasks (FairScheduler.java:400-557) for one heartbeat of ``node``."""
        self._begin_heartbeat(snapshot.now, node)
        # The tracker's running tasks as its heartbeat reports them (tts.countMapTasks/countReduceTasks).
        attempts = snapshot.running.get(node, ())
        maps = sum(1 for a in attempts if a.task.kind == "map")  # running_on of both kinds in one pass
        counts = {"map": maps, "reduce": len(attempts) - maps}
        if all(counts[kind] >= snapshot.capacity(node, kind) for kind in _KINDS):
            return []  # full: the load manager's cap is at most the tracker's slots, so both kinds are rejected
        # Σ over jobs of running tasks, and of pool demand: running + pending (runnableMaps/Reduces); this
        # heartbeat counts its own placements in.
        running = {kind: snapshot.running_tasks(kind) for kind in _KINDS}
        demand = {kind: running[kind] + snapshot.pending_tasks(kind) for kind in _KINDS}
        if running == demand:
            return []  # nothing pending anywhere: the loop below would reject both kinds at once
        total = {kind: snapshot.slot_total(kind) for kind in _KINDS}
        caps = {"map": self.cfg.assign_multiple_maps, "reduce": self.cfg.assign_multiple_reduces}
        capacity = {kind: self._max_to_assign(snapshot.free_slots(node, kind), caps[kind]) for kind in _KINDS}
        assigned = {kind: 0 for kind in _KINDS}
        rejected = {kind: False for kind in _KINDS}
        placements: list[Placement] = []
        while True:
            for kind in _KINDS:  # java:456-478: the per-heartbeat cap, nothing pending, the load manager
                if not rejected[kind] and (
                    assigned[kind] == capacity[kind]
                    or running[kind] == demand[kind]
                    or counts[kind] + assigned[kind]
                    >= load_capacity(snapshot.capacity(node, kind), demand[kind], total[kind])
                    or snapshot.free_slots(node, kind) <= 0  # by requests: maps and reduces share the node
                ):
                    rejected[kind] = True
            if (rejected["map"] and rejected["reduce"]) or (not self.cfg.assign_multiple and placements):
                break
            if rejected["map"]:
                kind = "reduce"
            elif rejected["reduce"]:
                kind = "map"
            else:  # the kind the node runs fewer of, maps on a tie (java:488-504)
                fewer_maps = counts["map"] + assigned["map"] <= counts["reduce"] + assigned["reduce"]
                kind = "map" if fewer_maps else "reduce"
            placed = (
                self.assign_one_map(snapshot, node)
                if kind == "map"
                else self._assign_one_reduce(snapshot, node)
            )
            if placed is None:
                rejected[kind] = True
                continue
            placements.append(placed)
            assigned[kind] += 1
            running[kind] += 1
        return placements

    def _max_to_assign(self, free: int, cap: int) -> int:
        """FairScheduler.maxTasksToAssign (FairScheduler.java:564-574): 1 without assignMultiple, else the node's
        free slots, at most the assignmultiple.maps/.reduces cap."""
        if not self.cfg.assign_multiple:
            return 1
        free = max(0, free)
        return free if cap == -1 else min(cap, free)

    def _assign_one_reduce(self, snapshot: ClusterSnapshot, node: str) -> Placement | None:
        order = self._order(snapshot, "reduce")
        got = self.one_reduce(snapshot, node, list(order.jobs()), "pool furthest below its fair share")
        if not got:
            return None
        order.placed(snapshot.job(got[0].task.job_id))
        self._own_change(snapshot)
        return got[0]

    def assign_one_map(self, snapshot: ClusterSnapshot, node: str) -> Placement | None:
        """One map for ``node`` in Fair's order (pools, then jobs, delay scheduling), or None; policies that compose
        Fair (dara) call it for the jobs they leave to it. (PoolSchedulable/JobSchedulable.assignTask.)"""
        now = snapshot.now
        self._begin_heartbeat(now, node)
        order = self._order(snapshot, "map")
        for job in order.jobs():
            wait = self._waits[job.id]
            allowed = self._allowed(job, snapshot.heartbeat_s)
            found = self.pick_map(job, snapshot, node, allowed)  # None at once when nothing is pending
            if found is None:
                if job.id not in self._launched:
                    wait.skipped = True  # visited, launched nothing: skipped on this heartbeat (java:547-553)
                    self._skipped.add(job.id)
                continue
            task, level = found
            # updateLastMapLocalityLevel (java:595-605): the level of the launched map, and no wait.
            wait.level, wait.waited, wait.skipped = LEVEL_RANK[level], 0.0, False
            self._skipped.discard(job.id)
            self._launched.add(job.id)
            reason = (
                f"pool {job.user if self.cfg.pool_by == 'user' else job.queue} furthest below its share; "
                f"{level}-local (allowed {allowed})"
            )
            placement = self.place(snapshot, task, node, reason)
            order.placed(job)
            self._own_change(snapshot)
            return placement
        return None

    def fair_order(self, snapshot: ClusterSnapshot, kind: TaskType) -> list[Job]:
        """Jobs with pending tasks of ``kind`` in Fair's order (pools, then jobs), for policies that compose
        Fair's slot allocation but place tasks their own way (coupling's map candidates, seed 003 Alg 3)."""
        return list(self._order(snapshot, kind).jobs())

    def record_placed(self, snapshot: ClusterSnapshot, job: Job, kind: TaskType) -> None:
        """A composing policy placed a task of ``job``: move it in the order as Fair's own placements do."""
        order = self._orders.get(kind)
        if order is not None and order.fingerprint == (id(snapshot), snapshot.version - 1):
            order.placed(job)
            self._own_change(snapshot)
        # Otherwise the order is stale anyway: the next call rebuilds it from the snapshot, placement included.

    def on_job_finished(self, job: Job, now: float) -> None:
        super().on_job_finished(job, now)
        self._waits.pop(job.id, None)
        self._skipped.discard(job.id)
        self._launched.discard(job.id)


class ComposesFair(Policy):
    """Mixin of a policy that composes a :class:`Fair` as ``self.fair`` (its fallback, or the slot allocation
    it builds on): each learning hook reaches the composed Fair too, after the policy's own base, so that
    Fair's map indexes, delay timers and job orders stay current. List it first among the bases."""

    fair: Fair

    def on_job_submitted(self, job: Job, now: float) -> None:
        super().on_job_submitted(job, now)
        self.fair.on_job_submitted(job, now)

    def on_job_finished(self, job: Job, now: float) -> None:
        super().on_job_finished(job, now)
        self.fair.on_job_finished(job, now)

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        super().on_task_finished(outcome)
        self.fair.on_task_finished(outcome)

    def on_task_requeued(self, task: Task) -> None:
        super().on_task_requeued(task)
        self.fair.on_task_requeued(task)
