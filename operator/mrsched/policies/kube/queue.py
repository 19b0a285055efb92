"""kube-scheduler's scheduling queue as the real one (v1.35) orders and retries pods, for kube-default.

What the real scheduler does, and this models (``pkg/scheduler/backend/queue``, the default profile):

* **Queue order: PrioritySort.** The activeQ pops the pod of the highest priority first, then the one that
  entered the queue first (``QueuedPodInfo.Timestamp``): a pod's timestamp is when it was created, and is
  refreshed each time a scheduling attempt fails (``AddUnschedulableIfNotPresent``). Pods of one instant keep
  the order they entered in (``seq``: the real timestamps are microseconds apart).
* **Pods enter when the operator creates them** (:mod:`.default` says when). A reduce pod created at
  slow-start therefore queues behind other jobs' maps that entered (or last failed) before it.
* **A failed attempt** (no node fits the pod) counts one more unschedulable attempt and parks the pod in
  ``unschedulablePods``. Only an event that may make it fit moves it back (QueueingHints, GA since 1.34): for
  NodeResourcesFit, the deletion of an assigned pod (a task pod that ends leaves the scheduler's informer,
  which selects non-terminal pods: a delete event), or ``podMaxInUnschedulablePodsDuration`` (5 min; the real
  scheduler checks that every 30 s, this at every round, so a pod may leave up to 30 s sooner here). It moves
  to the backoffQ while its back-off runs, else to the activeQ.
* **Back-off**: ``podInitialBackoffDuration`` 1 s doubling per unschedulable attempt up to
  ``podMaxBackoffDuration`` 10 s, from its timestamp, truncated to the backoffQ's 1 s ordering window.
* **PopFromBackoffQ** (beta, on since 1.33): when the activeQ is empty the scheduler pops the backoffQ, by
  back-off expiry, then PrioritySort. So a round tries every active pod first, then the backing-off ones.

Not modelled: preemption (the operator gives its pods no priority class; the peer check's priority class has
``preemptionPolicy: Never``). A simulated round is one instant: every pod popped in it is tried against the
cluster as the round leaves it. Pods are held in arrays, not objects: a busy round tries hundreds of pods,
most of which fail alike (the cluster is full), and those failures are recorded in one vectorised step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from mrsched.core.model import Resources, Task

#: spec: kube-scheduler v1.35 DefaultPodInitialBackoffDuration (1 s) and DefaultPodMaxBackoffDuration (10 s).
INITIAL_BACKOFF_S, MAX_BACKOFF_S = 1.0, 10.0
#: spec: kube-scheduler v1.35 DefaultPodMaxInUnschedulablePodsDuration, 5 min.
MAX_UNSCHEDULABLE_S = 300.0
#: spec: kube-scheduler v1.35 backoffQOrderingWindowDuration, 1 s: back-off expiries are truncated to it.
BACKOFF_WINDOW_S = 1.0
_NOT_PARKED = -1


def backoff_until(timestamp: np.ndarray, unschedulable: np.ndarray) -> np.ndarray:
    """When each pod's back-off completes (0 before any failure): ``calculateBackoffDuration``, initial
    doubled per failure up to the cap, added to its timestamp and truncated to the ordering window."""
    duration = np.minimum(MAX_BACKOFF_S, INITIAL_BACKOFF_S * np.exp2(np.minimum(unschedulable - 1, 32)))
    until = np.floor((timestamp + duration) / BACKOFF_WINDOW_S) * BACKOFF_WINDOW_S
    return np.where(unschedulable > 0, until, 0.0)


class SchedulingQueue:
    """The queued pods of kube-default's pending tasks, by task key (module docstring)."""

    _FIELDS = (
        ("priority", np.int64),
        ("timestamp", np.float64),  # when it entered the queue or last failed
        ("seq", np.int64),  # order among pods of one timestamp
        ("unschedulable", np.int64),  # failed attempts (UnschedulableCount)
        ("parked", np.int64),  # in unschedulablePods since this many deletions had happened, else -1
        ("cpu", np.float64),
        ("memory", np.float64),
    )

    def __init__(self) -> None:
        self._tasks: list[Task | None] = []
        self._slot: dict[str, int] = {}
        self._arrays = {name: np.zeros(64, dtype) for name, dtype in self._FIELDS}
        self._alive = np.zeros(64, bool)
        self._seq = 0
        #: Assigned pods that ended so far (each a delete event for the scheduler's informer).
        self._deletions = 0

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, key: str) -> bool:
        return key in self._slot

    def add(self, task: Task, priority: int, request: Resources, now: float) -> None:
        """The operator created the pod of ``task`` at ``now`` (unless it already has one queued)."""
        if task.key in self._slot:
            return
        if len(self._tasks) == len(self._alive):
            self._grow()
        i = len(self._tasks)
        self._tasks.append(task)
        self._slot[task.key] = i
        self._seq += 1
        a = self._arrays
        a["priority"][i], a["timestamp"][i], a["seq"][i] = priority, now, self._seq
        a["unschedulable"][i], a["parked"][i] = 0, _NOT_PARKED
        a["cpu"][i], a["memory"][i] = request.cpu, request.memory_mb
        self._alive[i] = True

    def _grow(self) -> None:
        live = [i for i, t in enumerate(self._tasks) if t is not None and self._alive[i]]
        size = max(64, 2 * len(live) + 1)
        arrays = {name: np.zeros(size, dtype) for name, dtype in self._FIELDS}
        for name, values in self._arrays.items():
            arrays[name][: len(live)] = values[live]
        self._arrays, self._alive = arrays, np.zeros(size, bool)
        self._alive[: len(live)] = True
        self._tasks = [self._tasks[i] for i in live]
        self._slot = {t.key: j for j, t in enumerate(self._tasks) if t is not None}

    def assigned_pod_deleted(self) -> None:
        """An assigned pod ended: the pods unschedulable before it are moved at the next round."""
        self._deletions += 1

    def forget(self, keys: Iterable[str]) -> None:
        for key in keys:
            i = self._slot.pop(key, None)
            if i is not None:
                self._alive[i], self._tasks[i] = False, None

    def in_order(self) -> list[Task]:
        """Every queued pod by PrioritySort alone (a hadoop-mode heartbeat's order: no attempt fails there)."""
        live = np.flatnonzero(self._alive[: len(self._tasks)])
        a = self._arrays
        order = live[np.lexsort((a["seq"][live], a["timestamp"][live], -a["priority"][live]))]
        return [t for t in (self._tasks[i] for i in order) if t is not None]

    def schedule(self, now: float, bind: Callable[[Task, int, int], bool]) -> None:
        """One round at ``now``: the pods in the order the scheduler pops them (the activeQ by PrioritySort,
        then the backoffQ by back-off expiry and PrioritySort; parked pods first move out when an assigned pod
        was deleted since they failed, or after ``MAX_UNSCHEDULABLE_S``; the rest stay parked and are not
        tried), each offered to ``bind(task, priority, failed attempts)``, which places it and says True, or
        finds no node. A pod no node fits is parked; so is every later pod whose requests are no smaller than
        one that fit nowhere this round, without asking ``bind`` (nothing was freed in between)."""
        n = len(self._tasks)
        alive = self._alive[:n]
        a = {name: values[:n] for name, values in self._arrays.items()}
        parked = a["parked"]
        waiting = alive & (parked != _NOT_PARKED)
        moved = waiting & ((parked < self._deletions) | (now - a["timestamp"] > MAX_UNSCHEDULABLE_S))
        parked[moved] = _NOT_PARKED
        ready = np.flatnonzero(alive & (parked == _NOT_PARKED))
        if not len(ready):
            return
        until = backoff_until(a["timestamp"][ready], a["unschedulable"][ready])
        backing = until >= math.floor(now / BACKOFF_WINDOW_S) * BACKOFF_WINDOW_S
        active, backoff = ready[~backing], ready[backing]
        key = (a["seq"], a["timestamp"], -a["priority"])
        active = active[np.lexsort(tuple(k[active] for k in key))]
        backoff = backoff[np.lexsort((*(k[backoff] for k in key), until[backing]))]
        order = np.concatenate((active, backoff))
        cpu, memory = a["cpu"][order], a["memory"][order]
        unfit: list[tuple[float, float]] = []
        failed = np.zeros(len(order), bool)
        at = 0
        while at < len(order):
            if unfit:  # skip (and fail) the pods no larger than one that fit nowhere
                dominated = np.zeros(len(order) - at, bool)
                for c, m in unfit:
                    dominated |= (cpu[at:] >= c) & (memory[at:] >= m)
                if dominated.all():
                    failed[at:] = True
                    break
                skip = int(np.argmin(dominated))  # the first that might still fit
                failed[at : at + skip] = True
                at += skip
            i = int(order[at])
            task = self._tasks[i]
            assert task is not None
            if bind(task, int(a["priority"][i]), int(a["unschedulable"][i])):
                self.forget([task.key])
            else:
                failed[at] = True
                unfit.append((float(cpu[at]), float(memory[at])))
            at += 1
        # AddUnschedulableIfNotPresent for each failure, in the order they were tried.
        losers = order[failed]
        a["unschedulable"][losers] += 1
        a["timestamp"][losers] = now
        a["seq"][losers] = self._seq + 1 + np.arange(len(losers))
        self._seq += len(losers)
        parked[losers] = self._deletions
