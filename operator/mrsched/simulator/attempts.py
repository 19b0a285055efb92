"""A task attempt's life in the simulator: started from a placement (or a speculative copy), run on its node's
physics (with its side flows), finished, failed or killed; and a job's end. ``Simulation`` (engine.py) mixes
this in: the event loop decides when, this module what happens to the attempts and the jobs' bookkeeping.

A reduce holds its slot from the moment it is placed but does its own work only when all of its job's maps are
done (``_release_waiting_reduces``). An attempt killed by the OOM killer is retried up to the job's
``max_attempts``, then the job fails and its other attempts stop. When a speculative copy of a map
(``speculation.py``) or the original finishes, the other is killed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mrsched.core.catalog import application
from mrsched.core.locality import locality
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement, Task, TaskOutcome
from mrsched.core.physics import NodeCapability, NodeModel, TaskDemand, isolated_duration
from mrsched.core.policy import Policy
from mrsched.health import profile_key
from mrsched.simulator.dataflow import DataFlow
from mrsched.simulator.detection import HealthRecorder
from mrsched.simulator.result import JobRecord
from mrsched.simulator.scenario import PhysicsOptions
from mrsched.simulator.sideflows import Running, SideFlows
from mrsched.simulator.speculation import Speculator


class AttemptLifecycle:
    """The attempt and job bookkeeping of :class:`mrsched.simulator.engine.Simulation` (module docstring)."""

    # The simulation's state this part reads and writes (set in Simulation.__init__).
    snapshot: ClusterSnapshot
    nodes: dict[str, Node]
    models: dict[str, NodeModel]
    noise_free_capabilities: dict[str, NodeCapability]
    policy: Policy
    physics: PhysicsOptions
    dataflow: DataFlow
    side: SideFlows
    speculator: Speculator
    health: HealthRecorder | None
    records: dict[str, JobRecord]
    active: list[Job]
    map_times: dict[str, dict[str, list[float]]]
    locality_counts: dict[str, int]
    work_done: float
    started: int
    failed_attempts: int
    _running: dict[str, dict[str, Running]]
    _attempt_nodes: dict[str, list[str]]
    _reduce_starts: dict[str, list[float]]
    _last_map_done: dict[str, float]
    _active_ids: set[str]
    _unfinished: int
    _feedback: bool
    demand: Callable[[Task, str], TaskDemand]
    _schedule_physics: Callable[[str], None]
    _wake_round: Callable[[float], None]

    def _apply(self, placements: list[Placement], now: float) -> None:
        for placement in placements:
            if self.records[placement.task.job_id].finish_s is None:
                self._start(placement, now)
            else:  # its job failed while this round's earlier placements started: undo the commit
                self.snapshot.running[placement.node] = [
                    a for a in self.snapshot.running[placement.node] if a.task is not placement.task
                ]
                placement.task.running = False
                self.snapshot.touch()

    def _start(self, placement: Placement, now: float, *, speculative: bool = False) -> None:
        task, node = placement.task, placement.node
        job = self.snapshot.job(task.job_id)
        if self.snapshot.nodes[node].by_requests and min(self.snapshot.unrequested(node)) < -1e-6:
            # The kubelet would refuse the pod (OutOfcpu / OutOfmemory): a policy placed past what fits.
            raise RuntimeError(
                f"{placement.explanation.policy} placed {task.key} on {node} past its allocatable "
                f"(unrequested CPU, memory: {self.snapshot.unrequested(node)})"
            )
        task.attempts += 1
        self.started += 1
        record = self.records[job.id]
        if record.start_s is None:
            record.start_s = job.start_s = now
        attempt = next(a for a in reversed(self.snapshot.running[node]) if a.task is task)
        level = locality(task, self.nodes[node], self.nodes)
        if task.kind == "map":
            self.locality_counts[level] += 1
        demand = self.demand(task, node)
        run = Running(attempt, demand, level, f"{task.key}#{task.attempts}", speculative)
        self._running[node][task.key] = run
        self._attempt_nodes[task.key].append(node)
        self.speculator.started(task, node, now)
        if task.kind == "reduce":
            self._reduce_starts[job.id].append(now)
            if job.finished_maps < len(job.maps):
                run.waiting = True  # holds its slot until the map output is complete
                if self.physics.shuffle_while_maps_run and not self.dataflow.replayed(task):
                    self.side.start_early_reduce(node, run, job, now)
                return
        elif (
            level in ("rack", "off")
            and self.physics.remote_reads_load_replica
            and not self.dataflow.replayed(task)
        ):
            source = self.dataflow.replica_for(task, node)
            if source is not None:  # the replica's disk serves the bytes this map reads over the network
                self.side.serve_read(source, node, run, now)
        if self.physics.replica_writes_remote:
            self.side.write_replicas(node, run, job.app, now)
        self._launch(node, run, now)

    def _launch(self, node: str, run: Running, now: float) -> None:
        model = self.models[node]
        model.advance(now)
        if not model.start(run.model_id, run.demand, now):
            self._complete(node, now)  # the OOM killer refused it: handle that (and anything due now) at once
        self._schedule_physics(node)

    def _complete(self, node: str, now: float) -> None:
        model = self.models[node]
        model.advance(now)
        for outcome in model.pop_finished():
            if outcome.task_id in self.side.owner:
                self.side.finished(outcome.task_id, now)
                continue
            key = outcome.task_id.split("#")[0]
            run = self._running[node].get(key)
            if run is None or run.model_id != outcome.task_id:
                continue  # an attempt killed the instant it ended too (its speculative twin won first)
            if run.side and not outcome.oom_killed:  # replicas it reads from or writes to are not done yet
                run.ended = outcome
                continue
            if run.side:
                self.side.stop(run, now)
            self._finish(node, key, now, succeeded=not outcome.oom_killed, usage=outcome.usage)
        self._schedule_physics(node)

    def _finish_held(self, node: str, run: Running, now: float) -> None:
        """An attempt whose process had ended ends with the last side flow it waited for."""
        assert run.ended is not None
        self._finish(node, run.attempt.task.key, now, succeeded=True, usage=run.ended.usage)
        self._schedule_physics(node)

    def _finish(self, node: str, task_key: str, now: float, *, succeeded: bool, usage: Any = None) -> None:
        run = self._running[node].pop(task_key)
        self._wake_round(now)  # kubernetes mode: the pod's end is a watch event that wakes the loop
        task = run.attempt.task
        job = self.snapshot.job(task.job_id)
        self.records[job.id].task_s += now - run.attempt.start_s
        self.snapshot.running[node].remove(run.attempt)
        self.snapshot.touch()
        others = self._attempt_nodes[task.key]
        others.remove(node)
        self.speculator.ended(task, node)
        if succeeded:
            for other in list(others):  # the JobTracker kills the attempts that lost
                self._kill(other, task.key, now)
        task.running = bool(others)  # another attempt of it (a speculative copy) still runs
        if not task.running:  # a job counts a running task once, however many attempts it has
            if task.kind == "map":
                job.running_maps -= 1
            else:
                job.running_reduces -= 1
        self.policy.on_task_finished(
            TaskOutcome(
                task,
                node,
                run.attempt.start_s,
                now,
                succeeded,
                cpu_s=usage.cpu_s if usage else 0.0,
                read_bytes=usage.read_bytes if usage else 0,
                written_bytes=usage.written_bytes if usage else 0,
                network_bytes=usage.network_bytes if usage else 0,
                locality=run.level,  # type: ignore[arg-type]
            )
        )
        if not succeeded:
            self.failed_attempts += 1
            self.speculator.failed_on.setdefault(task.key, set()).add(node)
            if task.attempts >= job.max_attempts:
                task.failed = True
                self._end_job(job, now, failed=True)
                return
            return
        task.done = True
        if run.speculative:
            self.speculator.won += 1
        work = isolated_duration(self.noise_free_capabilities[node], run.demand)
        self.work_done += work
        if task.kind == "map":
            self.map_times[job.app][self.nodes[node].node_class].append(now - run.attempt.start_s)
            if self.health is not None:
                self.health.on_map(
                    node, profile_key(job.app, task.input_mb), now - run.attempt.start_s, now, work
                )
                # The policy sees the verdict (Node.slowdown), as the operator's policies do.
                if self._feedback:
                    slowdown = self.health.monitor.slowdown(node)
                    if slowdown != self.nodes[node].slowdown:
                        self.snapshot.replace_node(node, replace(self.nodes[node], slowdown=slowdown))
            job.finished_maps += 1
            profile = application(job.app).map
            job.map_output_mb[node] = job.map_output_mb.get(node, 0.0) + profile.output(task.input_mb)
            if self.side.waiting.get(job.id):
                self.side.map_output(job, node, profile.output(task.input_mb))
            if job.finished_maps == len(job.maps):
                self._last_map_done[job.id] = now
                self._release_waiting_reduces(job, now)
        else:
            job.finished_reduces += 1
        if job.finished:
            self._end_job(job, now, failed=False)

    def _release_waiting_reduces(self, job: Job, now: float) -> None:
        for node, runs in self._running.items():
            for run in list(runs.values()):
                if run.waiting and run.attempt.task.job_id == job.id:
                    run.waiting = False
                    self.records[job.id].reduce_idle_s += now - run.attempt.start_s
                    run.demand = self.demand(run.attempt.task, node)  # map outputs are all placed now
                    run.demand = self.side.remaining(run, run.demand, now)  # shuffleWhileMapsRun
                    if self.physics.replica_writes_remote:
                        self.side.write_replicas(node, run, job.app, now)
                    self._launch(node, run, now)
        self.side.forget(job.id)

    def _end_job(self, job: Job, now: float, *, failed: bool) -> None:
        if job not in self.active:
            return
        record = self.records[job.id]
        record.finish_s = job.finish_s = now
        record.failed = failed
        t_m = self._last_map_done.get(job.id)
        late = [s - t_m for s in self._reduce_starts.get(job.id, []) if t_m is not None and s > t_m]
        record.starvation_s = sum(late) / len(late) if late else 0.0
        if failed:  # stop whatever else of it still runs
            for node, runs in self._running.items():
                for key, run in list(runs.items()):
                    if run.attempt.task.job_id == job.id:
                        self.side.stop(run, now)
                        self.models[node].stop(run.model_id, now)
                        self._attempt_nodes.pop(key, None)
                        runs.pop(key)
                        self.snapshot.running[node].remove(run.attempt)
                        self._schedule_physics(node)
        self.side.forget(job.id)
        self.speculator.forget(job.id)
        self.active.remove(job)
        self._active_ids.discard(job.id)
        self._unfinished -= 1
        self.snapshot.touch(jobs_changed=True)
        self.policy.on_job_finished(job, now)

    def _speculate(self, node: str, now: float) -> None:
        """Speculative execution (cluster.speculation) in the map slots the policy left free on ``node``."""
        for task in self.speculator.offer(node, now):
            placement = Placement(
                task, node, Explanation("speculation", 0.0, "a second attempt of a slow map")
            )
            self.snapshot.commit(placement)
            self._start(placement, now, speculative=True)

    def _kill(self, node: str, key: str, now: float) -> None:
        """Kill an attempt whose task another attempt has finished (the JobTracker kills the speculative loser)."""
        run = self._running[node].pop(key)
        if run.side:
            self.side.stop(run, now)
        self.models[node].stop(run.model_id, now)
        self.snapshot.running[node].remove(run.attempt)
        self._attempt_nodes[key].remove(node)
        self.speculator.ended(run.attempt.task, node)
        self.records[run.attempt.task.job_id].task_s += now - run.attempt.start_s
        self.snapshot.touch()
        self._schedule_physics(node)
