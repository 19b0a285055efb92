"""YARN's FairScheduler (Hadoop 3.3.5), as the simulator's YARN mode runs it: queues of a fair-scheduler.xml
with weights and ``maxAMShare``, the fair policy (memory), no preemption, no delay scheduling.

Read from the 3.3.5 source (``org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair``), the rules are:

* **Per node heartbeat** (``FairScheduler.attemptScheduling``): containers are handed out one at a time from
  the root queue while what the heartbeat has given fits in half the node's unallocated memory and vcores
  (``assignmultiple`` with ``dynamic.max.assign``, the default): on a node with f free 1-vcore containers,
  ``min(f, f // 2 + 1)``.
* **Queue order** (``FSParentQueue.assignContainer`` over ``FairShareComparator``): queues with demand first,
  then by memory used over weight, then by name. **App order** in a leaf (``FSLeafQueue.assignContainer``):
  apps whose pending demand is not zero, by memory used, then start time, then id. Demand is what the update
  thread last computed (every ``update_interval_s``, 0.5 s: ``FairScheduler.update``), so a request made since
  is not seen until then; usage is live.
* **Fair shares** (``ComputeFairShares``): active queues (with an application) split the cluster's memory by
  weight; the update thread recomputes them.
* **maxAMShare** (``FSLeafQueue.canRunAppAM``, ``computeMaxAMResource``): an app without its AM may start one
  only while the queue's AM resources plus this one fit in ``maxAMShare`` times the queue's fair share, rounded
  up, memory and vcores; the fair policy gives vcores no share, so their limit is ``maxAMShare`` times the
  cluster's free vcores. ``-1`` turns the check off.
* **Inside an app** (``FSAppAttempt.assignContainer``): its most urgent priority with containers wanted;
  node-local if the node and its rack are asked for, else rack-local, else off-switch, with no wait (the
  locality thresholds default to -1).

* **minResources and maxResources** (per queue): a queue below its min share (memory, capped by its demand)
  is served first, by usage over min share; fair shares are weight times R clamped between the two
  (``ComputeFairShares``); a queue never takes a container that would bring it over its max
  (``FSQueue.fitsInMaxShare``), and its demand is capped there.

Not modelled: DRF (``schedulingPolicy`` drf), preemption (off by default, ``yarn.scheduler.fair.preemption``),
reservations (no container of our scenarios is too big for a node that has room for one), ``maxRunningApps``,
queue hierarchies deeper than one level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mrsched.core.yarn import Assignment, Res, YarnApp, YarnNode, allocate, best_locality

UNBOUNDED = Res(2**62, 2**62)  # Resources.unbounded(): a queue's maxResources when none is set
NONE = Res()  # Resources.none(): its minResources when none is set
FAIR_SHARE_ITERATIONS = 25  # ComputeFairShares.COMPUTE_FAIR_SHARES_ITERATIONS


@dataclass(frozen=True)
class FairQueue:
    name: str
    weight: float = 1.0
    max_am_share: float = 0.5  # FairScheduler's queueMaxAMShareDefault
    min_resources: Res = NONE  # <minResources>
    max_resources: Res = UNBOUNDED  # <maxResources>


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, not {value!r}")
    return float(value)


def _resources(value: object, what: str) -> Res:
    """``{memoryMB, vcores}`` of a queue's minResources or maxResources."""
    if not isinstance(value, dict) or set(value) - {"memoryMB", "vcores"}:
        raise ValueError(f"{what} must be a mapping of memoryMB and vcores, not {value!r}")
    return Res(int(value.get("memoryMB", UNBOUNDED.memory_mb)), int(value.get("vcores", UNBOUNDED.vcores)))


def _fair_shares(queues: list[FairQueue], total_mb: int) -> dict[str, int]:
    """``ComputeFairShares.computeSharesInternal`` for memory: the ratio R, found by bisection, at which every
    queue's share, weight * R clamped to [min share, max share], sums to the cluster (or to the sum of the
    max shares, when smaller)."""

    def share(queue: FairQueue, ratio: float) -> int:
        return int(
            min(max(queue.weight * ratio, queue.min_resources.memory_mb), queue.max_resources.memory_mb)
        )

    total = min(total_mb, sum(min(q.max_resources.memory_mb, 2**62) for q in queues))
    high = 1.0
    while sum(share(q, high) for q in queues) < total:
        high *= 2.0
    low = 0.0
    for _ in range(FAIR_SHARE_ITERATIONS):
        middle = (low + high) / 2.0
        used = sum(share(q, middle) for q in queues)
        if used == total:
            high = middle
            break
        if used < total:
            low = middle
        else:
            high = middle
    return {q.name: share(q, high) for q in queues}


@dataclass
class YarnFairScheduler:
    queues: dict[str, FairQueue]
    update_interval_s: float | None = 0.5  # yarn.scheduler.fair.update-interval-ms
    name: str = "fair"
    _demand: dict[str, Res] = field(default_factory=dict)  # per app, as of the last update
    _fair_share_mb: dict[str, int] = field(default_factory=dict)  # per queue, as of the last update
    _root_available: Res = field(default_factory=Res)

    @classmethod
    def from_options(cls, options: dict[str, object], queues: list[str]) -> YarnFairScheduler:
        """``weights``, ``maxAMShare``, ``minResources`` and ``maxResources`` (``{memoryMB, vcores}``) by queue, as
        a fair-scheduler.xml gives them, for the queues the workload uses and those the options name."""
        by_queue: dict[str, dict[str, object]] = {}
        for key in ("weights", "maxAMShare", "minResources", "maxResources"):
            value = options.get(key) or {}
            if not isinstance(value, dict):
                raise ValueError(f"{key} must map queue names to values, not {value!r}")
            by_queue[key] = {str(q): v for q, v in value.items()}
        weights, shares, least, most = by_queue.values()
        names = sorted(set(queues).union(*(set(v) for v in by_queue.values())))
        return cls(
            {
                q: FairQueue(
                    q,
                    _number(weights.get(q, 1.0), f"weights of {q}"),
                    _number(shares.get(q, 0.5), f"maxAMShare of {q}"),
                    _resources(least[q], f"minResources of {q}") if q in least else Res(),
                    _resources(most[q], f"maxResources of {q}") if q in most else UNBOUNDED,
                )
                for q in names
            }
        )

    def app_added(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        if app.queue not in self.queues:
            raise ValueError(f"application {app.id}: queue {app.queue!r} is not one of {sorted(self.queues)}")

    def app_removed(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        self._demand.pop(app.id, None)

    def update(self, apps: list[YarnApp], cluster: Res, now: float) -> None:
        """The update thread: every app's demand, every queue's fair share (active queues, those with an
        application, split memory by weight within their min and max shares; others get none)."""
        self._demand = {app.id: app.demand() for app in apps}
        active = [queue for name, queue in self.queues.items() if any(app.queue == name for app in apps)]
        self._fair_share_mb = dict.fromkeys(self.queues, 0) | _fair_shares(active, cluster.memory_mb)

    def node_update(self, node: YarnNode, apps: list[YarnApp], cluster: Res, nodes: int) -> list[Assignment]:
        used = Res()
        for app in apps:
            used = used + app.used
        self._root_available = cluster - used
        budget = Res(node.available.memory_mb // 2, node.available.vcores // 2)
        given: list[Assignment] = []
        total = Res()
        while True:
            assignment = self._assign(node, apps)
            if assignment is None:
                break
            given.append(assignment)
            total = total + assignment.resource
            if not total.fits_in(budget):
                break
        return given

    def _assign(self, node: YarnNode, apps: list[YarnApp]) -> Assignment | None:
        by_queue: dict[str, list[YarnApp]] = {}
        for app in apps:
            by_queue.setdefault(app.queue, []).append(app)

        def queue_key(q: str) -> tuple[bool, bool, float, float, str]:
            """FairSharePolicy's comparator: demand first, then queues below their min share (by usage over it),
            then usage over weight, then name (queues all start at 0)."""
            spec = self.queues[q]
            demand = min(
                sum(self._demand.get(a.id, Res()).memory_mb for a in by_queue[q]),
                spec.max_resources.memory_mb,
            )
            usage = sum(a.used.memory_mb for a in by_queue[q])
            min_share = min(spec.min_resources.memory_mb, demand)
            needy = usage < min_share
            ratio = usage / min_share if needy and min_share > 1 else float(usage) if needy else 0.0
            by_weight = usage / spec.weight if spec.weight > 0 else float("inf")
            return (demand == 0, not needy, ratio, by_weight, f"root.{q}")

        for q in sorted(by_queue, key=queue_key):
            usage = Res()
            for app in by_queue[q]:
                usage = usage + app.used
            if not usage.fits_in(self.queues[q].max_resources):  # FSQueue.assignContainerPreCheck
                continue
            candidates = [a for a in by_queue[q] if self._demand.get(a.id, Res()) != a.used]
            candidates.sort(
                key=lambda a: (self._demand.get(a.id, Res()) == Res(), a.used.memory_mb, a.submit_s, a.order)
            )
            for app in candidates:
                if not app.am_allocated and not self._can_run_am(q, by_queue[q], app.am_resource):
                    continue
                request = app.next_request_on(node)
                if request is None or not (usage + request.resource).fits_in(self.queues[q].max_resources):
                    continue  # FSAppAttempt.hasContainerForNode: fitsInMaxShare
                return allocate(app, request, node, best_locality(request, node))
        return None

    def _can_run_am(self, queue: str, apps: list[YarnApp], am: Res) -> bool:
        share = self.queues[queue].max_am_share
        if abs(share + 1.0) < 1e-4:
            return True
        most = self.queues[queue].max_resources
        fair_mb = self._fair_share_mb.get(queue, 0) or min(self._root_available.memory_mb, most.memory_mb)
        vcores = min(self._root_available.vcores, most.vcores)  # the fair policy gives vcores no fair share
        limit = Res(math.ceil(fair_mb * share), math.ceil(vcores * share))
        am_used = am
        for app in apps:
            am_used = am_used + app.am_used
        return am_used.fits_in(limit)
