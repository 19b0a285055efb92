"""Model mode: reduces held idle until every map of their job has succeeded, as the worker holds them.

The worker (``MRSCHED_WAIT_FOR_MAPS``) keeps a reduce's pod Running and its slot taken while it waits for the map
output; the model has to do the same or reduces would finish before their input exists. The job's map pods are
followed on every node through the pod watch, and a reduce starts with its shuffle fetched from where they ran.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mrsched.core.report import TaskReport
from mrsched.emulator.runners import SIGTERM_ERROR, SIGTERM_EXIT_CODE, ModelRunner, TaskExit
from mrsched.emulator.workload import container_env, job_of, map_output_weight, map_task, reduce_wait


@dataclass
class _WaitingReduce:
    """A reduce pod holding its slot, idle, until every map of its job has succeeded."""

    job: str  # namespace/job uid
    node: str
    pod: dict[str, Any]
    maps: int
    since: float  # monotonic
    deadline: float  # monotonic: the worker gives up waiting then


@dataclass
class _MapPod:
    index: int
    node: str
    succeeded: bool
    output: float  # bytes written (or an estimate), once succeeded


class ReduceWaits:
    def __init__(self, runner: ModelRunner) -> None:
        self.runner = runner
        self.waiting: dict[str, _WaitingReduce] = {}  # by pod key
        self._map_pods: dict[
            str, dict[str, _MapPod]
        ] = {}  # every job's map pods, on any node: by job, pod key

    def hold(self, key: str, node: str, pod: dict[str, Any]) -> bool:
        """Hold a reduce that waits for its maps (False: the pod is no such reduce; start it now)."""
        wait = reduce_wait(container_env(pod))
        if wait is None:
            return False
        maps, timeout_s = wait
        now = time.monotonic()
        self.waiting[key] = _WaitingReduce(job_of(pod), node, pod, maps, now, now + timeout_s)
        self._release(job_of(pod))
        return True

    def track(self, event: str, pod: dict[str, Any]) -> None:
        """Keep the job's map pods as the watch shows them; a map that succeeded may release waiting reduces."""
        task = map_task(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if task is None or not node:
            return
        job, index = task
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if event == "DELETED":
            maps = self._map_pods.get(job, {})
            if key in maps and not maps[key].succeeded:
                del maps[key]
            # A succeeded map's output stays on the shared volume when its pod is deleted (the pod GC, a user):
            # its reduces still fetch it, as they would the worker's committed map-NNNNN directory.
            if not maps:
                self._map_pods.pop(job, None)
            return
        succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
        before = self._map_pods.get(job, {}).get(key)
        self._map_pods.setdefault(job, {})[key] = _MapPod(
            index, node, succeeded, map_output_weight(pod) if succeeded else 0.0
        )
        if succeeded and (before is None or not before.succeeded):
            self._release(job)

    def _release(self, job: str) -> None:
        """Start the job's waiting reduces once every one of its maps has a succeeded pod: each fetches the map
        output from the nodes where those pods ran (one succeeded pod per map)."""
        waiting = [k for k, w in self.waiting.items() if w.job == job]
        if not waiting:
            return
        done: dict[int, _MapPod] = {}
        for map_pod in self._map_pods.get(job, {}).values():
            if map_pod.succeeded:
                done.setdefault(map_pod.index, map_pod)
        shuffle_from: dict[str, float] = {}
        for map_pod in done.values():
            shuffle_from[map_pod.node] = shuffle_from.get(map_pod.node, 0.0) + map_pod.output
        now = time.monotonic()
        for key in waiting:
            reduce = self.waiting[key]
            if any(i not in done for i in range(reduce.maps)):
                continue
            del self.waiting[key]
            self.runner.start(
                key, reduce.node, reduce.pod, shuffle_from=shuffle_from, waited_s=now - reduce.since
            )

    def next_deadline(self) -> float:
        return min((w.deadline for w in self.waiting.values()), default=float("inf"))

    def expire(self, now: float) -> list[TaskExit]:
        """A reduce whose maps did not all succeed within its wait fails, as the worker does."""
        exits = []
        for key, reduce in list(self.waiting.items()):
            if now < reduce.deadline:
                continue
            del self.waiting[key]
            error = f"map output missing after waiting {reduce.deadline - reduce.since:.0f} s for {reduce.maps} maps"
            report = TaskReport("failed", wall_s=now - reduce.since, error=error)
            exits.append(TaskExit(key, 1, report.to_json(), None, reduce.since, now))
        return exits

    def terminate(self, key: str, now: float) -> TaskExit | None:
        """SIGTERM for a waiting reduce (its pod's deadline passed): the worker stops waiting and exits 143."""
        reduce = self.waiting.pop(key, None)
        if reduce is None:
            return None
        report = TaskReport(
            "failed", wall_s=(now - reduce.since) * self.runner.time_scale, error=SIGTERM_ERROR
        )
        return TaskExit(key, SIGTERM_EXIT_CODE, report.to_json(), None, reduce.since, now)

    def drop(self, key: str) -> None:
        self.waiting.pop(key, None)

    def on_node(self, node: str) -> list[str]:
        """The node is gone: its waiting reduces with it."""
        lost = [k for k, w in self.waiting.items() if w.node == node]
        for key in lost:
            del self.waiting[key]
        return lost

    def keep_listed(self, listed: Iterable[str]) -> None:
        """After a relist: forget map pods deleted while no watch was open (they sent no DELETED event)."""
        present = set(listed)
        for job, maps in list(self._map_pods.items()):
            for key in [k for k in maps if k not in present]:
                del maps[key]
            if not maps:
                del self._map_pods[job]
