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

import math
from collections.abc import Callable

from mrsched.core.model import ClusterSnapshot, Task
from mrsched.simulator.scenario import SpeculationSpec


class Speculator:
    """Which maps to give a speculative attempt on a node (module docstring). The engine reports each map
    attempt's start and end (:meth:`started`, :meth:`ended`), so an offer looks only at running maps."""

    def __init__(
        self,
        spec: SpeculationSpec,
        policy: str,
        snapshot: ClusterSnapshot,
        progress: Callable[[str, str], float],
    ) -> None:
        self.spec = spec
        self.enabled = spec.enabled and policy.split(":")[0] in spec.policies
        self.snapshot = snapshot
        self.progress = progress  # (node, task key) -> that attempt's progress
        #: job -> running map -> (task, [(node, start time)] of its attempts, when its first attempt started).
        #: In start order, so the first entry's first start is the job's oldest (offer's cheapest test).
        self.running: dict[str, dict[str, tuple[Task, list[tuple[str, float]], float]]] = {}
        self.failed_on: dict[str, set[str]] = {}  # task key -> nodes an attempt of it failed on
        self.started_count = 0
        self.won = 0
        #: The jobs with a map that has run lagS, valid until ``_eligible_until`` or a map attempt starts or ends
        #: (offer runs on every heartbeat; the set changes far less often).
        self._eligible: set[str] | None = None
        self._eligible_until = 0.0

    def started(self, task: Task, node: str, now: float) -> None:
        if self.enabled and task.kind == "map":
            entry = self.running.setdefault(task.job_id, {}).setdefault(task.key, (task, [], now))
            entry[1].append((node, now))
            self._eligible = None

    def ended(self, task: Task, node: str) -> None:
        runs = self.running.get(task.job_id)
        if runs is None or task.key not in runs:
            return
        attempts = runs[task.key][1]
        attempts[:] = [(n, at) for n, at in attempts if n != node]
        if not attempts:
            del runs[task.key]
        self._eligible = None

    def forget(self, job_id: str) -> None:
        self.running.pop(job_id, None)
        self._eligible = None

    def _eligible_jobs(self, now: float) -> set[str]:
        """The jobs one of whose maps has run lagS (the first entry started first), cached until another will
        have or a map attempt starts or ends."""
        if self._eligible is None or now >= self._eligible_until:
            self._eligible, self._eligible_until = set(), math.inf
            for job_id, runs in self.running.items():
                if runs:
                    due = next(iter(runs.values()))[2] + self.spec.lag_s
                    if now >= due:
                        self._eligible.add(job_id)
                    else:
                        self._eligible_until = min(self._eligible_until, due)
        return self._eligible

    def offer(self, node: str, now: float) -> list[Task]:
        """The maps to start a speculative attempt of on ``node`` now, one per free map slot."""
        if not self.enabled or not self.running:
            return []
        # Cheap tests first: a job offers speculative maps only when one of its maps has run lagS, and only once
        # every map has started.
        eligible = self._eligible_jobs(now)
        if not eligible:
            return []
        free = self.snapshot.free_slots(node, "map")
        chosen: list[Task] = []
        for job in self.snapshot.jobs:
            if free <= len(chosen):
                break
            if job.id not in eligible:
                continue
            runs = self.running[job.id]
            if job.finished_maps + len(runs) < len(job.maps):
                continue
            # The job's average progress only when some map passes the per-map tests.
            candidates = [
                (task, attempts[0][0])
                for task, attempts, _ in runs.values()
                if len(attempts) == 1
                and attempts[0][0] != node
                and now - attempts[0][1] >= self.spec.lag_s
                and node not in self.failed_on.get(task.key, ())
            ]
            if not candidates:
                continue
            total = sum(
                max(self.progress(n, key) for n, _ in attempts) for key, (_, attempts, _) in runs.items()
            )
            average = (job.finished_maps + total) / len(job.maps)
            for task, where in candidates:
                if free <= len(chosen):
                    break
                if average - self.progress(where, task.key) >= self.spec.gap:
                    chosen.append(task)
        self.started_count += len(chosen)
        return chosen

    def report(self) -> dict[str, int]:
        return {"speculative_attempts": self.started_count, "speculative_wins": self.won}
