"""The discrete-event simulator: jobs arrive, nodes heartbeat, the policy places tasks, the physics runs them.

Events, in time order (ties by insertion order, so a seed always gives the same run):

* job arrival: the job becomes active and the policy's ``on_job_submitted`` hook runs;
* a decision opportunity, by the run's placement ``mode`` (the same for every policy of a run):

  - ``hadoop``: a heartbeat of each node every ``heartbeat_s`` (staggered over the interval): the node's
    physics advances and ``framework.run_round(policy, snapshot, [node])`` answers with placements on that node
    alone, which start at once (Hadoop 1's ``assignTasks(taskTracker)``; kube-default and the greedy policy
    are offered the same single node);
  - ``kubernetes``: a cluster-wide round, ``framework.run_round(policy, snapshot, every node)``, every
    ``heartbeat_s`` and at once when a task ends or a job arrives (at most one round per instant), as the
    operator's loop runs with its watches waking it;

* physics: the next phase change on a node (``NodeModel.next_event_s``), when tasks finish;
* for policies that read node metrics (``needs_metrics``): the kernel's load-average sample every 5 s and a
  Prometheus scrape every ``metrics.scrapeS`` (:mod:`mrsched.simulator.scraped_metrics`); a heartbeat's snapshot
  carries the heartbeating node's metrics as of the latest scrape (a round's, every node's).

Each node has its class's slots (``ClusterSpec.slots``). Data moves by network distance
(:mod:`mrsched.simulator.dataflow`); an attempt's work beside its own process (an early reduce's fetches, a
replica's read or write: ``cluster.physics``) runs as side flows (:mod:`mrsched.simulator.sideflows`); what
happens to attempts and jobs when they start and end is :mod:`mrsched.simulator.attempts`; after the policy's
placements on a node, the Hadoop baselines' speculative execution may start copies of slow maps in the map
slots left free (``cluster.speculation``, :mod:`mrsched.simulator.speculation`).
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mrsched.core.framework import Framework
from mrsched.core.model import ClusterSnapshot, Job, Task
from mrsched.core.node_metrics import LOAD_SAMPLE_S
from mrsched.core.physics import Fault, NodeModel, TaskDemand
from mrsched.core.policy import Policy, TruePhysics
from mrsched.simulator.attempts import AttemptLifecycle
from mrsched.simulator.dataflow import DataFlow, build_nodes
from mrsched.simulator.detection import HealthRecorder
from mrsched.simulator.probes import probe_node
from mrsched.simulator.result import JobRecord, SimulationResult
from mrsched.simulator.scenario import ClusterSpec, MonitorSpec, PlacementMode
from mrsched.simulator.scraped_metrics import SimulatedMetrics
from mrsched.simulator.sideflows import Running, SideFlows
from mrsched.simulator.speculation import Speculator

__all__ = ["JobRecord", "Simulation", "SimulationResult"]  # the result types live in result.py

_ARRIVAL, _HEARTBEAT, _PHYSICS, _LOAD_SAMPLE, _SCRAPE, _ROUND = 0, 1, 2, 3, 4, 5
_ROUND_NODE = ""  # a heartbeat event with this payload is a cluster-wide round (kubernetes mode)


class Simulation(AttemptLifecycle):
    def __init__(
        self,
        cluster: ClusterSpec,
        jobs: list[Job],
        policy: Policy | Callable[[TruePhysics], Policy],
        *,
        seed: int = 0,
        utilisation_every_s: float = 30.0,
        monitor: MonitorSpec | None = None,
        feedback: bool = False,
        mode: PlacementMode = "hadoop",
    ) -> None:
        if mode not in ("hadoop", "kubernetes"):
            raise ValueError(f"unknown placement mode {mode!r}: hadoop or kubernetes")
        self.mode = mode
        self.seed = seed
        self.rng = random.Random(seed)
        self.nodes, self.capabilities, cross_rack_cost = build_nodes(cluster)
        self.physics = cluster.physics
        self.dataflow = DataFlow(self.nodes, cross_rack_cost, cluster.physics, cluster.variant)
        self.models = {name: NodeModel(name, cap, seed=seed) for name, cap in self.capabilities.items()}
        for fault in cluster.faults:
            if fault.node not in self.models:
                raise ValueError(f"fault on unknown node {fault.node!r}; nodes: {', '.join(self.models)}")
            self.models[fault.node].add_fault(Fault(fault.kind, fault.start_s, fault.end_s, fault.intensity))
        self.heartbeat_s = cluster.heartbeat_s
        truth = TruePhysics(self.capabilities, self.demand)
        self.policy = policy if isinstance(policy, Policy) else policy(truth)
        #: The scheduling framework the operator runs too; the scenario's nodes have no taints and its jobs no
        #: constraints, so its filters pass every node (Job.nodes stays None) and it has no permit plugin.
        self.framework = Framework()
        if self.policy.needs_probes:  # seed 002 P3-A: probe every node before the workload starts
            self.nodes = {
                name: replace(node, probe=probe_node(name, self.capabilities[name], seed=seed))
                for name, node in self.nodes.items()
            }
        self.health: HealthRecorder | None = None
        if monitor is not None and monitor.enabled:  # a soft-fault monitor beside the policy (detection.py)
            self.health = HealthRecorder(
                monitor,
                {
                    name: node.probe or probe_node(name, self.capabilities[name], seed=seed)
                    for name, node in self.nodes.items()
                },
                {name: node.node_class for name, node in self.nodes.items()},
            )
        self._faults = list(cluster.faults)
        self._feedback = feedback and self.health is not None  # the policy sees the verdicts (Node.slowdown)
        self.metrics = (
            SimulatedMetrics(cluster.metrics, self.nodes, self.models) if self.policy.needs_metrics else None
        )
        self.jobs = sorted(jobs, key=lambda j: j.submit_s)
        self._app_of = {j.id: j.app for j in self.jobs}
        self._unfinished = len(self.jobs)
        self.noise_free_capabilities = {n: replace(c, noise_sigma=0.0) for n, c in self.capabilities.items()}
        self.active: list[Job] = []
        self._active_ids: set[str] = set()
        self.snapshot = ClusterSnapshot(
            0.0, self.nodes, {n: [] for n in self.nodes}, self.active, heartbeat_s=cluster.heartbeat_s
        )
        self._queue: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()
        self._physics_at: dict[str, float] = {}
        self._running: dict[str, dict[str, Running]] = {n: {} for n in self.nodes}  # node -> task key -> run
        self._attempt_nodes: dict[str, list[str]] = defaultdict(list)  # task key -> nodes its attempts run on
        self.speculator = Speculator(
            cluster.speculation,
            self.policy.name,
            self.snapshot,
            self._progress,
        )
        self.side = SideFlows(
            self.models,
            self.dataflow,
            self._running,
            self._complete,
            self._schedule_physics,
            self._finish_held,
        )
        self._last_map_done: dict[str, float] = {}
        self.records = {
            j.id: JobRecord(j.id, j.user, j.app, j.submit_s, maps=len(j.maps), reduces=len(j.reduces))
            for j in self.jobs
        }
        self._reduce_starts: dict[str, list[float]] = defaultdict(list)
        self.locality_counts: dict[str, int] = defaultdict(int)
        self.utilisation: dict[str, list[tuple[float, float]]] = {n: [] for n in self.nodes}
        self._util_every = utilisation_every_s
        self._last_busy: dict[str, float] = dict.fromkeys(self.nodes, 0.0)
        self.work_done = 0.0
        self.events = 0
        self._dormant: list[str] = []
        self._round_due: float | None = None  # kubernetes mode: when an event-woken round is queued
        self._node_order = sorted(self.nodes)  # a kubernetes-mode round offers every node, in name order
        self.started = 0
        self.failed_attempts = 0
        self.map_times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))

    # --- physics glue -----------------------------------------------------------------------------------------

    def demand(self, task: Task, node: str) -> TaskDemand:
        """The true demand of ``task`` if it ran on ``node`` (also what greedy-informed is told)."""
        held = (
            self.snapshot.job(task.job_id).map_output_mb
            if task.kind == "reduce" and task.job_id in self._active_ids
            else {}
        )
        return self.dataflow.demand(self._app_of[task.job_id], task, node, held)

    # --- events -----------------------------------------------------------------------------------------------

    def _push(self, at: float, kind: int, payload: Any) -> None:
        heapq.heappush(self._queue, (at, next(self._seq), kind, payload))

    def _schedule_physics(self, node: str) -> None:
        model = self.models[node]
        # An advance that ended a task at its very end time (a heartbeat or sample at the instant of a phase
        # end) leaves its outcome for _complete: collect it now, not at the node's next phase end.
        at = model.now if model.has_finished else model.next_event_s()
        if at != float("inf") and self._physics_at.get(node) != at:
            self._physics_at[node] = at
            self._push(at, _PHYSICS, node)

    def run(
        self, *, until_s: float = float("inf"), progress: Callable[[float, int], None] | None = None
    ) -> SimulationResult:
        for job in self.jobs:
            self._push(job.submit_s, _ARRIVAL, job)
        offsets = self.rng.sample(range(len(self.nodes)), len(self.nodes))  # drawn in both modes: same rng
        if self.mode == "hadoop":
            for i, node in zip(offsets, self.nodes, strict=True):
                self._push(self.heartbeat_s * i / len(self.nodes), _HEARTBEAT, node)
        else:
            self._push(0.0, _HEARTBEAT, _ROUND_NODE)
        if self.metrics is not None:
            self._push(LOAD_SAMPLE_S, _LOAD_SAMPLE, None)
            self._push(self.metrics.spec.scrape_s, _SCRAPE, None)
        now = 0.0
        next_util = 0.0
        # Locals for what every event touches (a day's replay pops a million events).
        queue, pop, physics_at, snapshot = self._queue, heapq.heappop, self._physics_at, self.snapshot
        while queue and self._unfinished > 0:
            now, _, kind, payload = pop(queue)
            if now > until_s:
                break
            if kind == _PHYSICS and physics_at.get(payload) != now:
                continue  # superseded: the node's next event moved when a task started or ended
            self.events += 1
            snapshot.now = now
            if now >= next_util:
                self._sample_utilisation(now)
                next_util = now + self._util_every
            if kind == _PHYSICS:  # the commonest events first
                del physics_at[payload]
                self._complete(payload, now)
            elif kind == _HEARTBEAT and payload != _ROUND_NODE:
                if self.active or snapshot.running[payload]:
                    self._heartbeat(payload, now)
                    self._push(now + self.heartbeat_s, _HEARTBEAT, payload)
                else:
                    self._dormant.append(payload)  # nothing to do: sleep until the next job arrives
            elif kind == _ARRIVAL:
                self.active.append(payload)
                self._active_ids.add(payload.id)
                self.snapshot.touch(jobs_changed=True)
                self.policy.on_job_submitted(payload, now)
                self._wake_heartbeats(now)
                self._wake_round(now)
            elif kind == _LOAD_SAMPLE:
                assert self.metrics is not None
                self.metrics.sample_load(now)
                self._reschedule_all_physics()
                self._push(now + LOAD_SAMPLE_S, _LOAD_SAMPLE, None)
            elif kind == _SCRAPE:
                assert self.metrics is not None
                self.metrics.scrape(now)
                self._push(now + self.metrics.spec.scrape_s, _SCRAPE, None)
            elif kind == _HEARTBEAT:  # _ROUND_NODE: kubernetes mode's periodic round
                if self.active or self._unfinished_attempts():
                    self._round(now)
                    self._push(now + self.heartbeat_s, _HEARTBEAT, _ROUND_NODE)
                else:
                    self._dormant.append(_ROUND_NODE)
            else:  # _ROUND, kubernetes mode: a watch event (a task ended, a job arrived) woke the loop
                self._round_due = None
                self._round(now)
            if progress is not None and self.events % 50_000 == 0:
                progress(now, self._unfinished)
        self._sample_utilisation(now)
        finished = [r.finish_s for r in self.records.values() if r.finish_s is not None]
        return SimulationResult(
            self.policy.name,
            self.seed,
            list(self.records.values()),
            max(finished, default=0.0),
            dict(self.locality_counts),
            self.utilisation,
            self.work_done / max(now, 1e-9),
            self.events,
            self.started,
            self.failed_attempts,
            map_times={app: dict(by_class) for app, by_class in self.map_times.items()},
            extra={
                **({"metrics_trace": self.metrics.thinned_trace()} if self.metrics is not None else {}),
                **({"detection": self.health.report(self._faults, now)} if self.health is not None else {}),
                **({"speculation": self.speculator.report()} if self.speculator.enabled else {}),
            },
        )

    def _reschedule_all_physics(self) -> None:
        for name in self.models:
            self._schedule_physics(name)

    def _wake_heartbeats(self, now: float) -> None:
        """Heartbeats stop while no job is active (a trace day is mostly idle); restart them, staggered."""
        for i, node in enumerate(self._dormant):
            self._push(now + self.heartbeat_s * (i + 1) / (len(self._dormant) + 1), _HEARTBEAT, node)
        self._dormant.clear()

    def _unfinished_attempts(self) -> bool:
        return any(self.snapshot.running.values())

    def _wake_round(self, now: float) -> None:
        """Kubernetes mode: an event asks for a round now (one per instant, however many events)."""
        if self.mode == "kubernetes" and self._round_due != now:
            self._round_due = now
            self._push(now, _ROUND, None)

    def _round(self, now: float) -> None:
        """Kubernetes mode: one scheduling round over every node (the operator's ``schedule_round``)."""
        if not self.active:
            return
        for name in list(self.side.unpolled):
            self.side.poll(name, now)
        for name in self.nodes:
            self.models[name].advance(now)
            if self.metrics is not None:
                self.snapshot.metrics[name] = self.metrics.read(name, now)
        if not self.policy.idle(self.snapshot):
            self._apply(self.framework.run_round(self.policy, self.snapshot, self._node_order), now)
        if self.speculator.enabled:
            for name in self._node_order:
                self._speculate(name, now)
        for name in self.nodes:
            self._schedule_physics(name)

    def _sample_utilisation(self, now: float) -> None:
        # Locals: this runs for every node every utilisation_every_s (a day's replay: 288,000 node samples).
        utilisation, last_busy, capabilities = self.utilisation, self._last_busy, self.capabilities
        for name, model in self.models.items():
            busy = model.cpu_busy_at(now)
            series = utilisation[name]
            span = max(now - (series[-1][0] if series else 0.0), 1e-9)
            frac = (busy - last_busy[name]) / span / capabilities[name].cores
            series.append((now, min(1.0, max(0.0, frac))))
            last_busy[name] = busy
            # Only a sample past the node's next event advances it (the last one, after the loop stopped early).
            if model.has_finished:
                self._schedule_physics(name)

    def _progress(self, node: str, key: str) -> float:
        """The progress of ``key``'s attempt on ``node`` now (speculation compares attempts on many nodes)."""
        model = self.models[node]
        model.advance(self.snapshot.now)
        if model.has_finished:
            self._schedule_physics(node)
        return model.progress(self._running[node][key].model_id)

    def _heartbeat(self, node: str, now: float) -> None:
        # No advance here: what a policy reads (the snapshot, scraped metrics) changes only at events, and a
        # start advances the node itself; an advance per heartbeat would only split the node's integration.
        if not self.active:
            return
        if node in self.side.unpolled:
            self.side.poll(node, now)
        if self.metrics is not None:
            self.snapshot.metrics[node] = self.metrics.read(node, now)
        if not self.policy.idle(self.snapshot):
            self._apply(self.framework.run_round(self.policy, self.snapshot, [node]), now)
        if self.speculator.enabled and self.speculator.running:
            self._speculate(node, now)
