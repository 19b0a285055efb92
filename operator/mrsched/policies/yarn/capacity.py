"""YARN's CapacityScheduler (Hadoop 3.3.5), as the simulator's YARN mode runs it: leaf queues under root with
capacity, maximum-capacity, user-limit-factor and minimum-user-limit-percent; the cluster's
maximum-am-resource-percent; the default (memory-only) resource calculator; delay scheduling by
node-locality-delay.

Read from the 3.3.5 source (``org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity``), the rules are:

* **Per node heartbeat** (``CapacityScheduler.allocateContainersToNode``): one container at a time from root,
  up to 100, stopping after the first off-switch one (``maximum-offswitch-assignments`` 1) or when the node has
  less than the minimum allocation free.
* **Queue order** (``PriorityUtilizationQueueOrderingPolicy``): by used over guaranteed memory, ties to the
  larger capacity, then configuration order; queues with nothing pending are passed over. A queue may grow to
  ``min(max-capacity, what the others leave free)`` (``ParentQueue.getResourceLimitsOfChild``).
* **Apps in a leaf**: FIFO by submission, active apps only. A user is held back while its usage is above its
  limit (``UsersManager.computeUserLimit``): with minimum-user-limit-percent 100 that is the queue's
  guaranteed capacity (or its current consumption plus a container when above it), capped at
  ``user-limit-factor`` times the guarantee.
* **Activation** (``LeafQueue.activateApplications``): an application becomes active, and may ask for its AM
  container, while the queue's AM resources stay within ``maximum-am-resource-percent`` of what the queue may
  use and the user's within that percent of the queue's guarantee times its user-limit-factor; the first
  application of a queue is always let in. It is checked when an application arrives or leaves.
* **Delay scheduling** (``RegularContainerAllocator.canAssign``): each offer of a node to an app at a priority
  counts a missed opportunity; node-local at once; rack-local after more than ``min(nodes, 40)``; off-switch
  when ``min(nodes, wanted * min((locations - 1) / nodes, 1))`` is below the count, or at once for a request
  that names no host (an AM). A delayed app lets the next app have the node.

Not modelled: preemption (SLS turns ProportionalCapacityPreemptionPolicy on; it preempted no container in any
of our SLS runs, whose ApplicationSummary lines say ``preemptedNonAMContainers=0``), reservations, priorities
between applications, node labels, hierarchies deeper than one level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mrsched.core.yarn import Assignment, Res, YarnApp, YarnNode, allocate, best_locality

MINIMUM_ALLOCATION_MB = 1024  # yarn.scheduler.minimum-allocation-mb


def _round_up(mb: float) -> int:
    return math.ceil(mb / MINIMUM_ALLOCATION_MB) * MINIMUM_ALLOCATION_MB


def _round_down(mb: float) -> int:
    return math.floor(mb / MINIMUM_ALLOCATION_MB) * MINIMUM_ALLOCATION_MB


@dataclass(frozen=True)
class CapacityQueue:
    name: str
    capacity: float  # percent of the cluster
    maximum_capacity: float = 100.0
    user_limit_factor: float = 1.0
    minimum_user_limit_percent: float = 100.0


@dataclass
class YarnCapacityScheduler:
    queues: dict[str, CapacityQueue]  # in configuration order
    maximum_am_resource_percent: float = 0.1
    node_locality_delay: int = 40
    maximum_assignments: int = 100
    name: str = "capacity"
    update_interval_s: float | None = None
    _active: dict[str, list[YarnApp]] = field(default_factory=dict)
    _pending: dict[str, list[YarnApp]] = field(default_factory=dict)
    _limit_mb: dict[str, int] = field(default_factory=dict)  # each queue's limit when last visited

    @classmethod
    def from_options(cls, options: dict[str, object], queues: list[str]) -> YarnCapacityScheduler:
        """``capacities``, ``maximumCapacity``, ``userLimitFactor``, ``minimumUserLimitPercent`` by queue (percent),
        ``maximumAmResourcePercent``, ``nodeLocalityDelay``; queues the options leave out share what is left."""

        def number(value: object, what: str) -> float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{what} must be a number, not {value!r}")
            return float(value)

        def per_queue(key: str) -> dict[str, float]:
            value = options.get(key) or {}
            if not isinstance(value, dict):
                raise ValueError(f"{key} must map queue names to numbers, not {value!r}")
            return {str(k): number(v, f"{key} of {k}") for k, v in value.items()}

        capacities = per_queue("capacities")
        names = list(capacities) + sorted(set(queues) - set(capacities))
        rest = [q for q in names if q not in capacities]
        left = 100.0 - sum(capacities.values())
        if rest:
            capacities |= {q: left / len(rest) for q in rest}
        if abs(sum(capacities.values()) - 100.0) > 1e-6:
            raise ValueError(f"queue capacities must add up to 100, not {sum(capacities.values()):g}")
        maximum, factor, minimum = (
            per_queue("maximumCapacity"),
            per_queue("userLimitFactor"),
            per_queue("minimumUserLimitPercent"),
        )
        am_percent = number(options.get("maximumAmResourcePercent", 0.1), "maximumAmResourcePercent")
        delay = int(number(options.get("nodeLocalityDelay", 40), "nodeLocalityDelay"))
        return cls(
            {
                q: CapacityQueue(
                    q, capacities[q], maximum.get(q, 100.0), factor.get(q, 1.0), minimum.get(q, 100.0)
                )
                for q in names
            },
            maximum_am_resource_percent=am_percent,
            node_locality_delay=delay,
        )

    # --- applications ---------------------------------------------------------------------------------------------

    def app_added(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        if app.queue not in self.queues:
            raise ValueError(f"application {app.id}: queue {app.queue!r} is not one of {list(self.queues)}")
        self._pending.setdefault(app.queue, []).append(app)
        self._activate(app.queue, cluster)

    def app_removed(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None:
        for group in (self._active, self._pending):
            if app in group.get(app.queue, []):
                group[app.queue].remove(app)
        self._activate(app.queue, cluster)

    def update(self, apps: list[YarnApp], cluster: Res, now: float) -> None:
        return None

    def _guaranteed_mb(self, queue: str, cluster: Res) -> int:
        return int(cluster.memory_mb * self.queues[queue].capacity / 100.0)

    def _activate(self, queue: str, cluster: Res) -> None:
        """``LeafQueue.activateApplications``: pending apps, in order, while the AM limits allow."""
        spec = self.queues[queue]
        guaranteed = self._guaranteed_mb(queue, cluster)
        limit = self._limit_mb.get(queue, int(cluster.memory_mb * spec.maximum_capacity / 100.0))
        usable = limit if guaranteed <= limit else guaranteed
        am_limit = _round_up(int(usable * self.maximum_am_resource_percent + 0.5))
        user_am_limit = min(
            _round_up(int(guaranteed * self.maximum_am_resource_percent * spec.user_limit_factor + 0.5)),
            am_limit,
        )
        active = self._active.setdefault(queue, [])
        for app in list(self._pending.get(queue, [])):
            am_used = sum(a.am_resource.memory_mb for a in active)
            user_am_used = sum(a.am_resource.memory_mb for a in active if a.user == app.user)
            exempt = not active or am_used <= 0
            if not exempt and (
                am_used + app.am_resource.memory_mb > am_limit
                or user_am_used + app.am_resource.memory_mb > user_am_limit
            ):
                continue
            self._pending[queue].remove(app)
            active.append(app)

    # --- allocation -----------------------------------------------------------------------------------------------

    def node_update(self, node: YarnNode, apps: list[YarnApp], cluster: Res, nodes: int) -> list[Assignment]:
        given: list[Assignment] = []
        while len(given) < self.maximum_assignments and node.available.memory_mb >= MINIMUM_ALLOCATION_MB:
            assignment = self._assign(node, cluster, nodes)
            if assignment is None:
                break
            given.append(assignment)
            if assignment.locality == "off-switch":
                break
        return given

    def _queue_used_mb(self, queue: str) -> int:
        return sum(a.used.memory_mb for a in self._active.get(queue, []) + self._pending.get(queue, []))

    def _assign(self, node: YarnNode, cluster: Res, nodes: int) -> Assignment | None:
        root_used = sum(self._queue_used_mb(q) for q in self.queues)
        order = list(self.queues)

        def utilisation(q: str) -> tuple[float, float, int]:
            guaranteed = max(self._guaranteed_mb(q, cluster), MINIMUM_ALLOCATION_MB)
            return (self._queue_used_mb(q) / guaranteed, -self.queues[q].capacity, order.index(q))

        for queue in sorted(self.queues, key=utilisation):
            active = self._active.get(queue, [])
            if not any(app.pending() for app in active):
                continue
            used = self._queue_used_mb(queue)
            maximum = int(cluster.memory_mb * self.queues[queue].maximum_capacity / 100.0)
            limit = min(maximum, _round_down(min(cluster.memory_mb - root_used + used, _round_down(maximum))))
            self._limit_mb[queue] = limit
            if used + MINIMUM_ALLOCATION_MB > limit:
                continue
            assignment = self._assign_in_queue(queue, active, node, cluster, nodes)
            if assignment is not None:
                return assignment
        return None

    def _user_limit_mb(self, queue: str, active: list[YarnApp], cluster: Res) -> int:
        """``UsersManager.computeUserLimit`` for the default partition."""
        spec = self.queues[queue]
        queue_cap = max(self._guaranteed_mb(queue, cluster), MINIMUM_ALLOCATION_MB)
        consumed = _round_up(self._queue_used_mb(queue))
        current_cap = queue_cap if consumed < queue_cap else consumed + MINIMUM_ALLOCATION_MB
        users = {a.user for a in active if a.pending()}
        used_by_active = sum(a.used.memory_mb for a in active if a.user in users)
        limit = max(
            math.ceil((used_by_active + MINIMUM_ALLOCATION_MB) / max(len(users), 1)),
            current_cap * spec.minimum_user_limit_percent / 100.0,
        )
        return _round_up(min(limit, math.floor(queue_cap * spec.user_limit_factor)))

    def _assign_in_queue(
        self, queue: str, active: list[YarnApp], node: YarnNode, cluster: Res, nodes: int
    ) -> Assignment | None:
        user_limit = self._user_limit_mb(queue, active, cluster)
        for app in active:
            user_used = sum(a.used.memory_mb for a in active if a.user == app.user)
            if user_used > user_limit:
                continue
            request = app.next_request_on(node)
            if request is None:
                continue
            missed = app.missed.get(request.priority, 0) + 1
            app.missed[request.priority] = missed
            locality = best_locality(request, node)
            if locality == "node":
                app.missed[request.priority] = 0
                return allocate(app, request, node, "node")
            if locality == "rack" and missed > min(nodes, self.node_locality_delay):
                app.missed[request.priority] = 0
                return allocate(app, request, node, "rack")
            locations = request.unique_locations()
            if locations == 1 or min(nodes, request.any * min((locations - 1) / nodes, 1.0)) < missed:
                return allocate(app, request, node, "off-switch")
        return None
