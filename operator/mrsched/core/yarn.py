"""YARN's resource model, shared by the simulator's YARN mode and YARN's queue schedulers (mrsched.policies.yarn).

In YARN (Hadoop 2 and later) a node offers memory and vcores, not map and reduce slots; an application asks
the ResourceManager for containers of a size, at a priority, on a host, its rack or ANY node; its first
container is its ApplicationMaster's, which must be running before the application asks for anything else.
The ResourceManager's scheduler places containers when a node heartbeats (``NODE_UPDATE``). This module holds
that state, as the schedulers see it; what runs in a container and when is the simulator's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Locality = Literal["node", "rack", "off-switch"]
#: YARN's priorities: a lower number is served first. The AM's request is priority 0; SLS's MRAMSimulator asks
#: maps at 20 and reduces at 10 (``PRIORITY_MAP``, ``PRIORITY_REDUCE``).
AM_PRIORITY, REDUCE_PRIORITY, MAP_PRIORITY = 0, 10, 20


@dataclass(frozen=True, slots=True, order=True)
class Res:
    """A YARN ``Resource``: memory in MB and vcores."""

    memory_mb: int = 0
    vcores: int = 0

    def __add__(self, other: Res) -> Res:
        return Res(self.memory_mb + other.memory_mb, self.vcores + other.vcores)

    def __sub__(self, other: Res) -> Res:
        return Res(self.memory_mb - other.memory_mb, self.vcores - other.vcores)

    def times(self, factor: float) -> Res:
        return Res(int(self.memory_mb * factor), int(self.vcores * factor))

    def fits_in(self, other: Res) -> bool:
        """Every component at most ``other``'s (``Resources.fitsIn``)."""
        return self.memory_mb <= other.memory_mb and self.vcores <= other.vcores

    def share_of(self, total: Res, *, drf: bool = False) -> float:
        """This over ``total``: memory alone (``DefaultResourceCalculator``), or the dominant of the two (DRF)."""
        memory = self.memory_mb / total.memory_mb if total.memory_mb else 0.0
        if not drf:
            return memory
        return max(memory, self.vcores / total.vcores if total.vcores else 0.0)


@dataclass(slots=True)
class Request:
    """An application's ``ResourceRequest`` table at one priority: containers of one size wanted on each host,
    on each rack and ANYwhere (``AppSchedulingInfo`` with ``LocalityAppPlacementAllocator``). An allocation takes
    one from ANY and, by its locality, from its node's and rack's entries; an off-switch one leaves them as they
    were (``decrementOutstanding``), so host and rack counts may outlive the tasks that asked for them."""

    priority: int
    resource: Res
    any: int = 0
    hosts: dict[str, int] = field(default_factory=dict)
    racks: dict[str, int] = field(default_factory=dict)

    def unique_locations(self) -> int:
        """Entries with a count above zero, ANY included (``getUniqueLocationAsks``)."""
        return 1 + sum(1 for c in self.hosts.values() if c > 0) + sum(1 for c in self.racks.values() if c > 0)

    def take(self, node: YarnNode, locality: Locality) -> None:
        self.any -= 1
        if locality in ("node", "rack") and self.racks.get(node.rack, 0) > 0:
            self.racks[node.rack] -= 1
        if locality == "node" and self.hosts.get(node.name, 0) > 0:
            self.hosts[node.name] -= 1


@dataclass(slots=True)
class YarnNode:
    name: str
    rack: str
    capacity: Res
    allocated: Res = field(default_factory=Res)

    @property
    def available(self) -> Res:
        return self.capacity - self.allocated


@dataclass(slots=True)
class YarnApp:
    """An application in the scheduler: its queue and user, what it holds and what it asks for."""

    id: str
    queue: str
    user: str
    submit_s: float
    order: int  # submission order (YARN's application id): ties and FIFO go by it
    am_resource: Res
    requests: dict[int, Request] = field(default_factory=dict)  # by priority
    used: Res = field(default_factory=Res)
    am_used: Res = field(
        default_factory=Res
    )  # its AM container's resource once allocated, then until released
    #: Missed scheduling opportunities per priority since its last container there (delay scheduling).
    missed: dict[int, int] = field(default_factory=dict)

    @property
    def am_allocated(self) -> bool:
        return self.am_used != Res()

    def demand(self) -> Res:
        """What it holds and still asks for (FairScheduler's ``demand``)."""
        total = self.used
        for request in self.requests.values():
            total = total + Res(
                request.resource.memory_mb * request.any, request.resource.vcores * request.any
            )
        return total

    def pending(self) -> list[Request]:
        """Its requests with containers still wanted, most urgent priority first."""
        return [self.requests[p] for p in sorted(self.requests) if self.requests[p].any > 0]

    def next_request_on(self, node: YarnNode) -> Request | None:
        """Its most urgent request, if a container of it fits in what ``node`` has free: the schedulers try an
        app's priorities in order and give up on the app when the first does not fit (no reservations)."""
        pending = self.pending()
        if not pending or not pending[0].resource.fits_in(node.available):
            return None
        return pending[0]


@dataclass(frozen=True, slots=True)
class Assignment:
    """One container the scheduler gives ``app`` on ``node``, from its request at ``priority``."""

    app: str
    priority: int
    resource: Res
    node: str
    locality: Locality


def best_locality(request: Request, node: YarnNode) -> Locality:
    """The locality an allocation on ``node`` would have: node-local when the node and its rack are asked for,
    rack-local when its rack is, else off-switch (``FSAppAttempt.assignContainer``,
    ``RegularContainerAllocator.assignContainersOnNode``)."""
    if request.hosts.get(node.name, 0) > 0 and request.racks.get(node.rack, 0) > 0:
        return "node"
    if request.racks.get(node.rack, 0) > 0:
        return "rack"
    return "off-switch"


class YarnScheduler(Protocol):
    """What the simulator's YARN mode asks of a queue scheduler (FairScheduler, CapacityScheduler)."""

    name: str
    #: Seconds between runs of :meth:`update` (FairScheduler's update thread); None: it has none.
    update_interval_s: float | None

    def node_update(self, node: YarnNode, apps: list[YarnApp], cluster: Res, nodes: int) -> list[Assignment]:
        """Containers to allocate on ``node`` now (its ``NODE_UPDATE``), each booked as it is made: the node's
        and the app's allocation grown, the app's request taken (:func:`allocate`)."""
        ...

    def update(self, apps: list[YarnApp], cluster: Res, now: float) -> None:
        """The scheduler's periodic recomputation (FairScheduler's update thread), when it has one."""
        ...

    def app_added(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None: ...

    def app_removed(self, app: YarnApp, apps: list[YarnApp], cluster: Res) -> None: ...


def allocate(app: YarnApp, request: Request, node: YarnNode, locality: Locality) -> Assignment:
    """Book one container of ``request`` on ``node`` for ``app`` and say so."""
    if not request.resource.fits_in(node.available):
        raise ValueError(f"{request.resource} does not fit in {node.name}'s free {node.available}")
    request.take(node, locality)
    node.allocated = node.allocated + request.resource
    app.used = app.used + request.resource
    if request.priority == AM_PRIORITY:
        app.am_used = request.resource
    return Assignment(app.id, request.priority, request.resource, node.name, locality)
