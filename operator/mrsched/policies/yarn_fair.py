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

Not modelled: DRF (``schedulingPolicy`` drf), min and max shares, preemption, reservations (no container of our
scenarios is too big for a node that has room for one), ``maxRunningApps``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mrsched.core.yarn import Assignment, Res, YarnApp, YarnNode, allocate, best_locality


@dataclass(frozen=True)
class FairQueue:
    name: str
    weight: float = 1.0
    max_am_share: float = 0.5  # FairScheduler's queueMaxAMShareDefault


@dataclass
class YarnFairScheduler:
    queues: dict[str, FairQueue]
    update_interval_s: float = 0.5  # yarn.scheduler.fair.update-interval-ms
    name: str = "fair"
    _demand: dict[str, Res] = field(default_factory=dict)  # per app, as of the last update
    _fair_share_mb: dict[str, int] = field(default_factory=dict)  # per queue, as of the last update
    _root_available: Res = field(default_factory=Res)

    @classmethod
    def from_options(cls, options: dict[str, object], queues: list[str]) -> YarnFairScheduler:
        """``weights`` and ``maxAMShare`` by queue, for the queues the workload uses (the policy options our
        ``fair`` policy takes in the other modes, plus ``maxAMShare``)."""
        weights = options.get("weights") or {}
        shares = options.get("maxAMShare") or {}
        assert isinstance(weights, dict) and isinstance(shares, dict)
        return cls(
            {
                q: FairQueue(q, float(weights.get(q, 1.0)), float(shares.get(q, 0.5)))
                for q in sorted(set(queues) | set(weights) | set(shares))
            }
        )

    def app_added(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        if app.queue not in self.queues:
            raise ValueError(f"application {app.id}: queue {app.queue!r} is not one of {sorted(self.queues)}")

    def app_removed(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        self._demand.pop(app.id, None)

    def update(self, apps: list[YarnApp], cluster: Res, now: float) -> None:
        """The update thread: every app's demand, every queue's fair share (active queues split memory by weight)."""
        self._demand = {app.id: app.demand() for app in apps}
        active = {app.queue for app in apps}
        total_weight = sum(self.queues[q].weight for q in active)
        self._fair_share_mb = {
            q: math.floor(cluster.memory_mb * self.queues[q].weight / total_weight) if q in active else 0
            for q in self.queues
        }

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

        def queue_key(q: str) -> tuple[bool, float, str]:
            demand = sum(self._demand.get(a.id, Res()).memory_mb for a in by_queue[q])
            usage = sum(a.used.memory_mb for a in by_queue[q])
            return (demand == 0, usage / self.queues[q].weight, f"root.{q}")

        for q in sorted(by_queue, key=queue_key):
            candidates = [a for a in by_queue[q] if self._demand.get(a.id, Res()) != a.used]
            candidates.sort(
                key=lambda a: (self._demand.get(a.id, Res()) == Res(), a.used.memory_mb, a.submit_s, a.order)
            )
            for app in candidates:
                if not app.am_allocated and not self._can_run_am(q, by_queue[q], app.am_resource):
                    continue
                request = app.next_request_on(node)
                if request is None:
                    continue
                return allocate(app, request, node, best_locality(request, node))
        return None

    def _can_run_am(self, queue: str, apps: list[YarnApp], am: Res) -> bool:
        share = self.queues[queue].max_am_share
        if abs(share + 1.0) < 1e-4:
            return True
        fair_mb = self._fair_share_mb.get(queue, 0) or self._root_available.memory_mb
        limit = Res(math.ceil(fair_mb * share), math.ceil(self._root_available.vcores * share))
        am_used = am
        for app in apps:
            am_used = am_used + app.am_used
        return am_used.fits_in(limit)
