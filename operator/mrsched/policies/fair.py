"""The Hadoop Fair Scheduler (Hadoop 1 ``FairScheduler``), with delay scheduling.

* Pools, one per user (or per queue): a pool has a weight and a minimum share (slots).
* Fair shares (what Hadoop displays and preempts by) are its ``computeFairShares``: find the ratio R such
  that Σ_p clamp(R·weight_p, minShare_p, demand_p) equals min(total slots, total demand), by doubling then
  binary search.
* On a heartbeat, pools are ordered by Hadoop's ``FairShareComparator``: pools below their minimum share
  ("needy") first, by running/minShare; then the rest by running/weight; ties by the earliest job. Within a
  pool, jobs are ordered the same way (``fair``) or by submission (``fifo``).
* Delay scheduling (Zaharia et al., as in Hadoop 1): a job that cannot launch a node-local map is skipped;
  once it has waited ``nodeLocalityDelayS`` it may launch rack-local, after ``rackLocalityDelayS`` more any map.
  Launching resets its wait and records the level it launched at.
* As Hadoop 1 by default (``mapred.fairscheduler.assignmultiple=false``), at most one map and one reduce per
  heartbeat; ``assignMultiple`` fills every free slot instead.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from mrsched.core.locality import LEVEL_RANK, Level
from mrsched.core.model import ClusterSnapshot, Job, Placement, TaskType
from mrsched.core.policy import PolicyConfig, register
from mrsched.policies.slots import SlotPolicy

_LEVELS: tuple[Level, ...] = ("node", "rack", "off")


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


class _Order:
    """Pools sorted by the FairShareComparator key, each with its jobs sorted, updated in place on a placement."""

    def __init__(
        self, fair: Fair, snapshot: ClusterSnapshot, kind: TaskType, fingerprint: tuple[object, ...]
    ):
        self.fair, self.kind, self.fingerprint = fair, kind, fingerprint
        self.pools = [p for p in fair.pools(snapshot, kind) if p.demand > p.running]
        self.pool_keys = {p.name: self._pool_key(p) for p in self.pools}
        self.pools.sort(key=lambda p: self.pool_keys[p.name])
        for pool in self.pools:
            pool.jobs.sort(key=self._job_key)

    def _pool_key(self, pool: _Pool) -> tuple[float, ...]:
        return _key(
            pool.running, pool.weight, pool.min_share, pool.demand, min(j.submit_s for j in pool.jobs)
        )

    def _job_key(self, job: Job) -> tuple[float, ...]:
        if self.fair.cfg.job_order == "fifo":
            return (-job.priority, job.submit_s)
        return _key(job.running(self.kind), job.weight, 0, 1, job.submit_s)

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
        key = self.pool_keys[pool.name] = self._pool_key(pool)
        keys = [self.pool_keys[p.name] for p in self.pools]
        self.pools.insert(bisect.bisect_right(keys, key), pool)
        del pool.jobs[next(i for i, j in enumerate(pool.jobs) if j is job)]  # identity: Job's == is costly
        job_keys = [self._job_key(j) for j in pool.jobs]
        pool.jobs.insert(bisect.bisect_right(job_keys, self._job_key(job)), job)


class FairConfig(PolicyConfig):
    pool_by: Literal["user", "queue"] = Field("user", alias="poolBy")
    weights: dict[str, float] = Field(default_factory=dict)  # pool -> weight (default 1)
    min_shares: dict[str, int] = Field(default_factory=dict, alias="minShares")  # pool -> slots
    job_order: Literal["fair", "fifo"] = Field("fair", alias="jobOrder")
    node_locality_delay_s: float = Field(4.5, alias="nodeLocalityDelayS", ge=0)  # 1.5 × a 3 s heartbeat
    rack_locality_delay_s: float = Field(4.5, alias="rackLocalityDelayS", ge=0)
    assign_multiple: bool = Field(False, alias="assignMultiple")


@dataclass
class _Wait:
    level: int = 0  # index into _LEVELS of the last level the job launched at (or was allowed)
    since: float | None = None  # when it started waiting at that level


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


def _key(running: float, weight: float, min_share: float, demand: float, start: float) -> tuple[float, ...]:
    """Hadoop's FairShareComparator as a sort key: needy first by running/minShare, then running/weight."""
    floor = min(min_share, demand)
    if running < floor:
        return (0, running / max(floor, 1.0), start)
    return (1, running / weight, start)


@register
class Fair(SlotPolicy):
    name = "fair"
    Config = FairConfig

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.cfg: FairConfig = self.config  # type: ignore[assignment]
        self._waits: dict[str, _Wait] = defaultdict(_Wait)
        self._orders: dict[str, _Order] = {}

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

    def _allowed(self, job: Job, now: float) -> Level:
        """Hadoop 1's getAllowedLocalityLevel: step one level down per delay waited."""
        wait = self._waits[job.id]
        if wait.since is not None:
            delays = (self.cfg.node_locality_delay_s, self.cfg.rack_locality_delay_s)
            while wait.level < 2 and now - wait.since >= delays[wait.level]:
                wait.since += delays[wait.level]
                wait.level += 1
        return _LEVELS[wait.level]

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        placements: list[Placement] = []
        free = snapshot.free_slots(node, "map")
        while free > 0:
            placed = self.assign_one_map(snapshot, node)
            if placed is None:
                break
            placements.append(placed)
            free -= 1
            if not self.cfg.assign_multiple:
                break
        free = snapshot.free_slots(node, "reduce")
        while free > 0:
            order = self._order(snapshot, "reduce")
            got = self.one_reduce(snapshot, node, list(order.jobs()), "pool furthest below its fair share")
            if not got:
                break
            order.placed(snapshot.job(got[0].task.job_id))
            self._own_change(snapshot)
            placements += got
            free -= 1
            if not self.cfg.assign_multiple:
                break
        return placements

    def assign_one_map(self, snapshot: ClusterSnapshot, node: str) -> Placement | None:
        """One map for ``node`` in Fair's order (pools, then jobs, delay scheduling), or None; policies that compose
        Fair (dara) call it for the jobs they leave to it."""
        now = snapshot.now
        order = self._order(snapshot, "map")
        for job in order.jobs():
            allowed = self._allowed(job, now)
            found = self.pick_map(job, snapshot, node, allowed)
            wait = self._waits[job.id]
            if found is None:
                if job.finished_maps + job.running_maps < len(job.maps) and wait.since is None:
                    wait.since = now  # skipped for locality: start waiting
                continue
            task, level = found
            wait.level, wait.since = LEVEL_RANK[level], None
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
