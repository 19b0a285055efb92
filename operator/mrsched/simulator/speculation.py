"""Speculative execution for the Hadoop baselines, as Hadoop 0.20/1.0's JobTracker runs it (``cluster.speculation``).

Hadoop 0.20's ``TaskInProgress.hasSpeculativeTask(averageProgress)`` gives a running map a second attempt when
at most one attempt of it runs, it started ``SPECULATIVE_LAG`` (60 s) or more ago, and its progress is
``SPECULATIVE_GAP`` (0.2) or more behind its job's average map progress (``JobInProgress``: the maps' summed
progress over their number, finished ones 1, pending ones 0). The JobTracker offers speculative maps to a
TaskTracker only once the job has no map that has not started, and never on a machine the task already runs
or failed on. The first attempt to succeed wins; the JobTracker kills the other.

Here, after the policy's placements on a node (a hadoop-mode heartbeat, or each node of a kubernetes-mode
round), each free map slot left goes to the first such map of the active jobs in submission order (Hadoop
asks the job the scheduler picked; with free slots left every job has been asked). Progress is
``NodeModel.progress``: the attempt's work done, each phase weighted by its time alone on its node.
"""

from __future__ import annotations

from collections.abc import Callable

from mrsched.core.model import ClusterSnapshot, Job, Task
from mrsched.simulator.scenario import SpeculationSpec


class Speculator:
    """Which maps to give a speculative attempt on a node (module docstring)."""

    def __init__(
        self,
        spec: SpeculationSpec,
        policy: str,
        snapshot: ClusterSnapshot,
        attempt_nodes: dict[str, list[str]],
        progress: Callable[[str, str], float],
    ) -> None:
        self.spec = spec
        self.enabled = spec.enabled and policy.split(":")[0] in spec.policies
        self.snapshot = snapshot
        self.attempt_nodes = attempt_nodes  # task key -> the nodes its running attempts are on
        self.progress = progress  # (node, task key) -> that attempt's progress
        self.failed_on: dict[str, set[str]] = {}  # task key -> nodes an attempt of it failed on
        self.started = 0
        self.won = 0

    def _job_progress(self, job: Job) -> float:
        """JobInProgress's average map progress: finished maps 1, running ones their best attempt, pending 0."""
        running = sum(
            max(self.progress(node, task.key) for node in self.attempt_nodes[task.key])
            for task in job.maps
            if task.running and not task.done and self.attempt_nodes.get(task.key)
        )
        return (job.finished_maps + running) / len(job.maps)

    def offer(self, node: str, now: float) -> list[Task]:
        """The maps to start a speculative attempt of on ``node`` now, one per free map slot."""
        if not self.enabled:
            return []
        snapshot = self.snapshot
        free = snapshot.nodes[node].map_slots - sum(1 for a in snapshot.running[node] if a.task.kind == "map")
        chosen: list[Task] = []
        for job in snapshot.jobs:
            if free <= len(chosen):
                break
            if not job.maps or job.running_maps == 0 or any(t.pending for t in job.maps):
                continue  # a job offers speculative maps only once every map has started
            average = self._job_progress(job)
            for task in job.maps:
                if free <= len(chosen):
                    break
                nodes = self.attempt_nodes.get(task.key, [])
                if task.done or len(nodes) != 1 or node in nodes or node in self.failed_on.get(task.key, ()):
                    continue
                attempt = next(a for a in snapshot.running[nodes[0]] if a.task is task)
                if now - attempt.start_s < self.spec.lag_s:
                    continue
                if average - self.progress(nodes[0], task.key) >= self.spec.gap:
                    chosen.append(task)
        self.started += len(chosen)
        return chosen

    def report(self) -> dict[str, int]:
        return {"speculative_attempts": self.started, "speculative_wins": self.won}
