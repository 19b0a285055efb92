"""The simulator's YARN mode: YARN's protocol between ApplicationMasters, NodeManagers and the ResourceManager,
with a queue scheduler of :mod:`mrsched.policies.yarn.fair` or :mod:`mrsched.policies.yarn.capacity`.

Where Hadoop 1 mode (:mod:`mrsched.simulator.engine`) models a JobTracker handing tasks to TaskTrackers' map
and reduce slots, YARN mode models what Apache Hadoop's Scheduler Load Simulator (SLS 3.3.5) runs, step by
step (its ``NMSimulator``, ``AMSimulator`` and ``MRAMSimulator``):

* **NodeManager heartbeat**, every ``heartbeatS`` from a random phase in ``[0, heartbeatS)`` (SLS's
  ``random.nextInt(heartbeatInterval)``): the node reports the containers whose lifetime has ended (and AM
  containers released since its last heartbeat); the scheduler frees them, then places containers on the node
  (``NODE_UPDATE``). An AM container placed is launched at once (SLS's ``MockAMLauncher``).
* **ApplicationMaster heartbeat**, every ``amHeartbeatS`` from the job's submission (``AMSimulator``'s task;
  its first step submits the application, which asks for the AM container). Once its AM runs, each step
  processes the response of its previous ``allocate`` call (counts completed containers; launches the
  containers allocated to it, each running for its time from now), then asks (all maps the first time; the
  reduces once the finished maps reach the job's slow-start, which is 1, after the last map, for SLS's traces:
  ``MRAMSimulator`` has no slow-start), then calls ``allocate``: the response (containers allocated and
  completed since the previous call) is processed at the next step. The job finishes at the step that sees
  its last container complete; its AM container is released and reported at its node's next heartbeat.

A container runs for the isolated time of its task on its node (:func:`mrsched.core.physics.isolated_duration`,
without noise: a trace replayed with ``replayMeasuredTime`` runs each container for exactly its trace time on
a node of the reference speed); containers on a node do not slow each other, as in SLS. Not modelled:
reservations (every container of a run is one size in our scenarios, so a node that has room for none has
room for no other either), preemption, failed containers, node labels.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from mrsched.core.catalog import expand_layout
from mrsched.core.model import Job, Resources, Task
from mrsched.core.physics import isolated_duration
from mrsched.core.yarn import (
    AM_PRIORITY,
    MAP_PRIORITY,
    REDUCE_PRIORITY,
    Request,
    Res,
    YarnApp,
    YarnNode,
    YarnScheduler,
)
from mrsched.policies.yarn.capacity import YarnCapacityScheduler
from mrsched.policies.yarn.fair import YarnFairScheduler
from mrsched.simulator.dataflow import DataFlow, build_nodes
from mrsched.simulator.result import JobRecord, SimulationResult
from mrsched.simulator.scenario import ClusterSpec

_NM, _AM, _UPDATE = 0, 1, 2
ContainerKind = Literal["am", "map", "reduce"]
_KIND_OF: dict[int, ContainerKind] = {
    AM_PRIORITY: "am",
    MAP_PRIORITY: "map",
    REDUCE_PRIORITY: "reduce",
}
SLS_AM_RESOURCE = Res(1024, 1)  # yarn.sls.am.container.memory and .vcores (SLSConfiguration)


def container_resource(request: Resources) -> Res:
    """A pod's requests as a YARN container: whole vcores (at least one), memory in MB as asked."""
    return Res(math.ceil(request.memory_mb), max(1, math.ceil(request.cpu - 1e-9)))


@dataclass
class _Container:
    kind: ContainerKind  # an AM's, or a task's of that kind (its priority says which)
    job: str
    node: str
    resource: Res
    ends_s: float = math.inf  # once launched


@dataclass
class _AppMaster:
    """SLS's MRAMSimulator for one job: what its AM has asked, been given and heard of."""

    job: Job
    app: YarnApp
    am_container: _Container | None = None
    to_ask_maps: deque[Task] = field(default_factory=deque)
    to_ask_reduces: deque[Task] = field(default_factory=deque)
    asked_maps: deque[Task] = field(default_factory=deque)  # asked, not yet given a container
    asked_reduces: deque[Task] = field(default_factory=deque)
    maps_done: int = 0  # as the AM has heard
    reduces_done: int = 0
    # Since its last allocate call (the RM's side), and the response of that call (the AM's side).
    new_containers: list[_Container] = field(default_factory=list)
    new_completed: list[_Container] = field(default_factory=list)
    response: tuple[list[_Container], list[_Container]] | None = None


class YarnSimulation:
    """One run of a workload on a cluster in YARN mode, with one queue scheduler."""

    def __init__(
        self,
        cluster: ClusterSpec,
        jobs: list[Job],
        scheduler: YarnScheduler,
        *,
        seed: int = 0,
        am_resource: Res = SLS_AM_RESOURCE,
        am_heartbeat_s: float | None = None,
        utilisation_every_s: float = 30.0,
    ) -> None:
        self.scheduler = scheduler
        self.seed = seed
        rng = random.Random(seed)
        nodes, self.capabilities, cross_rack_cost = build_nodes(cluster)
        self.dataflow = DataFlow(nodes, cross_rack_cost, cluster.physics)
        self.nodes = {
            n.name: YarnNode(n.name, n.rack, Res(n.node_class.memory_mib, n.node_class.cores))
            for n in expand_layout(cluster.nodes)
        }
        self.cluster_total = Res(
            sum(n.capacity.memory_mb for n in self.nodes.values()),
            sum(n.capacity.vcores for n in self.nodes.values()),
        )
        self.nm_heartbeat_s = cluster.heartbeat_s
        self.am_heartbeat_s = am_heartbeat_s or cluster.heartbeat_s
        self.am_resource = am_resource
        self.jobs = sorted(jobs, key=lambda j: j.submit_s)
        self._app_of = {j.id: j.app for j in self.jobs}
        self._queue: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()
        for name in self.nodes:  # SLS: each NM's first heartbeat at a random ms of the first interval
            self._push(rng.randrange(max(1, int(self.nm_heartbeat_s * 1000))) / 1000.0, _NM, name)
        for job in self.jobs:
            self._push(job.submit_s, _AM, job.id)
        self._jobs_by_id = {j.id: j for j in self.jobs}
        interval = scheduler.update_interval_s
        if interval:  # the scheduler's update thread runs from the ResourceManager's start: any phase
            self._push(rng.uniform(0.0, interval), _UPDATE, interval)
        self._running: dict[str, list[_Container]] = {n: [] for n in self.nodes}
        self._released_am: dict[str, list[_Container]] = {n: [] for n in self.nodes}
        self._masters: dict[str, _AppMaster] = {}
        self._apps: list[YarnApp] = []  # in the scheduler, in submission order
        self._records = {
            j.id: JobRecord(j.id, j.user, j.app, j.submit_s, maps=len(j.maps), reduces=len(j.reduces))
            for j in self.jobs
        }
        self._unfinished = len(self.jobs)
        self.locality = {"node": 0, "rack": 0, "off-switch": 0}
        self.utilisation: dict[str, list[tuple[float, float]]] = {n: [] for n in self.nodes}
        self._utilisation_every_s = utilisation_every_s
        self._next_sample_s = 0.0
        self.events = 0
        self.tasks_started = 0
        self.work_done_s = 0.0

    def _push(self, at: float, kind: int, payload: Any) -> None:
        heapq.heappush(self._queue, (at, next(self._seq), kind, payload))

    def run(self, policy_name: str | None = None, max_time_s: float = 30 * 86400.0) -> SimulationResult:
        now = 0.0
        while self._queue and self._unfinished:
            now, _, kind, payload = heapq.heappop(self._queue)
            if now > max_time_s:
                break
            self.events += 1
            self._sample(now)
            if kind == _NM:
                self._node_heartbeat(payload, now)
                self._push(now + self.nm_heartbeat_s, _NM, payload)
            elif kind == _UPDATE:
                self.scheduler.update(self._apps, self.cluster_total, now)
                self._push(now + payload, _UPDATE, payload)
            elif self._am_step(payload, now):
                self._push(now + self.am_heartbeat_s, _AM, payload)
        finished = [r.finish_s for r in self._records.values() if r.finish_s is not None]
        makespan = max(finished, default=0.0)  # from time 0, as the engine's (and the lower bound's)
        return SimulationResult(
            policy=policy_name or self.scheduler.name,
            seed=self.seed,
            jobs=list(self._records.values()),
            makespan_s=makespan,
            locality=dict(self.locality),
            utilisation=self.utilisation,
            throughput=self.work_done_s / makespan if makespan > 0 else 0.0,
            events=self.events,
            tasks_started=self.tasks_started,
            tasks_failed=0,
            extra={"mode": "yarn"},
        )

    # --- the NodeManager and the scheduler ----------------------------------------------------------------------

    def _node_heartbeat(self, name: str, now: float) -> None:
        node = self.nodes[name]
        running = self._running[name]
        done = [c for c in running if c.ends_s <= now]
        if done:
            self._running[name] = [c for c in running if c.ends_s > now]
        for container in done:
            self._release(node, container)
            self._masters[container.job].new_completed.append(container)
        for container in self._released_am.pop(name, []):
            self._release(node, container)
            master = self._masters[container.job]
            master.app.am_used = Res()
            self._apps.remove(master.app)
            self.scheduler.app_removed(master.app, self._apps, self.cluster_total)
        self._released_am[name] = []
        for assignment in self.scheduler.node_update(node, self._apps, self.cluster_total, len(self.nodes)):
            master = self._masters[assignment.app]
            kind = _KIND_OF[assignment.priority]
            container = _Container(kind, master.job.id, name, assignment.resource)
            if kind == "am":  # SLS's MockAMLauncher launches it at once
                master.am_container = container
                self._records[master.job.id].start_s = now
            else:
                self.locality[assignment.locality] += 1
                master.new_containers.append(container)

    def _release(self, node: YarnNode, container: _Container) -> None:
        node.allocated = node.allocated - container.resource
        app = self._masters[container.job].app
        app.used = app.used - container.resource

    # --- the ApplicationMaster ------------------------------------------------------------------------------------

    def _am_step(self, job_id: str, now: float) -> bool:
        """One step of the job's AM; False once it has nothing more to do."""
        master = self._masters.get(job_id)
        if master is None:  # first step: submit the application, which asks for its AM container
            job = self._jobs_by_id[job_id]
            app = YarnApp(job.id, job.queue, job.user, now, len(self._masters), self.am_resource)
            self._must_fit(job.id, self.am_resource)
            app.requests[AM_PRIORITY] = Request(AM_PRIORITY, self.am_resource, any=1)
            master = _AppMaster(job, app, to_ask_maps=deque(job.maps), to_ask_reduces=deque(job.reduces))
            self._masters[job_id] = master
            self._apps.append(app)
            self.scheduler.app_added(app, self._apps, self.cluster_total)
            return True
        if master.am_container is None:
            return True
        if master.response is not None:
            containers, completed = master.response
            master.response = None
            master.maps_done += sum(1 for c in completed if c.kind == "map")
            master.reduces_done += sum(1 for c in completed if c.kind == "reduce")
            job = master.job
            if master.maps_done >= len(job.maps) and master.reduces_done >= len(job.reduces):
                self._finish(master, now)
                return False
            for container in containers:
                self._launch(master, container, now)
        self._ask(master)
        master.response = (master.new_containers, master.new_completed)
        master.new_containers, master.new_completed = [], []
        return True

    def _ask(self, master: _AppMaster) -> None:
        """MRAMSimulator.sendContainerRequest: all maps at once; the reduces once the maps the AM has heard of
        reach the job's slow-start (SLS's own AM: all of them)."""
        job = master.job
        if master.to_ask_maps:
            self._request(master, MAP_PRIORITY, container_resource(job.map_request), master.to_ask_maps)
            master.asked_maps.extend(master.to_ask_maps)
            master.to_ask_maps.clear()
        # Hadoop's completedMapsForReduceSlowstart: ceil(slow-start x maps); 0 asks for them with the maps.
        if master.to_ask_reduces and master.maps_done >= math.ceil(job.reduce_slowstart * len(job.maps)):
            self._request(
                master, REDUCE_PRIORITY, container_resource(job.reduce_request), master.to_ask_reduces
            )
            master.asked_reduces.extend(master.to_ask_reduces)
            master.to_ask_reduces.clear()

    def _request(self, master: _AppMaster, priority: int, resource: Res, tasks: deque[Task]) -> None:
        """AMSimulator.packageRequests: per host and per rack the tasks that prefer it, and all of them ANY.
        A task prefers the node of its first input replica (a trace's container host), when it is one of ours."""
        self._must_fit(master.job.id, resource)
        request = Request(priority, resource, any=len(tasks))
        for task in tasks:
            host = task.replicas[0] if task.replicas and task.replicas[0] in self.nodes else None
            if host is not None:
                request.hosts[host] = request.hosts.get(host, 0) + 1
                rack = self.nodes[host].rack
                request.racks[rack] = request.racks.get(rack, 0) + 1
        master.app.requests[priority] = request

    def _must_fit(self, job_id: str, resource: Res) -> None:
        """A container no node can hold would wait for ever (YARN rejects such a request as over the maximum
        allocation): say so instead of simulating a month of heartbeats."""
        if not any(resource.fits_in(node.capacity) for node in self.nodes.values()):
            largest = max(self.nodes.values(), key=lambda n: (n.capacity.memory_mb, n.capacity.vcores))
            raise ValueError(
                f"job {job_id}: a container of {resource.memory_mb} MB and {resource.vcores} vcores fits no node "
                f"(the largest, {largest.name}, has {largest.capacity.memory_mb} MB and {largest.capacity.vcores})"
            )

    def _launch(self, master: _AppMaster, container: _Container, now: float) -> None:
        """As MRAMSimulator: a container runs the first task asked of its kind, whichever node it is on."""
        queue = master.asked_maps if container.kind == "map" else master.asked_reduces
        if not queue:  # SLS ignores a container it has no task for
            return
        task = queue.popleft()
        held = master.job.map_output_mb if task.kind == "reduce" else {}
        demand = self.dataflow.demand(self._app_of[task.job_id], task, container.node, held)
        seconds = isolated_duration(self.capabilities[container.node], demand)
        container.ends_s = now + seconds
        self.tasks_started += 1
        self.work_done_s += seconds
        self._records[task.job_id].task_s += seconds
        self._running[container.node].append(container)

    def _finish(self, master: _AppMaster, now: float) -> None:
        record = self._records[master.job.id]
        record.finish_s = now
        self._unfinished -= 1
        am = master.am_container
        assert am is not None
        self._released_am[am.node].append(am)

    def _sample(self, now: float) -> None:
        while now >= self._next_sample_s:
            for name, node in self.nodes.items():
                used = node.allocated.vcores / node.capacity.vcores if node.capacity.vcores else 0.0
                self.utilisation[name].append((self._next_sample_s, used))
            self._next_sample_s += self._utilisation_every_s


YARN_SCHEDULERS = ("fair", "capacity")


def yarn_scheduler(policy: str, options: dict[str, Any] | None, jobs: list[Job]) -> YarnScheduler:
    """YARN's scheduler of that name, configured by the scenario's options for it, over the jobs' queues."""
    queues = sorted({job.queue for job in jobs})
    if policy == "fair":
        return YarnFairScheduler.from_options(options or {}, queues)
    if policy == "capacity":
        return YarnCapacityScheduler.from_options(options or {}, queues)
    raise ValueError(f"yarn mode runs YARN's own schedulers, {' and '.join(YARN_SCHEDULERS)}, not {policy!r}")
