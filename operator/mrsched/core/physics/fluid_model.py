"""The fluid model of one node's running tasks, time explicit (:class:`NodeModel`).

Together, tasks share the node as a fluid (processor-sharing) model, integrated exactly between events:

* CPU: m CPU consumers (tasks in their CPU phase plus hog threads) share C cores, each getting min(1, C/m)
  of a core; beyond the core count every consumer also pays cache and context-switch cost
  ``1 + cpu_contention·(m − C)/C``. Identical CPU-bound tasks therefore stretch by exactly max(1, k/C) until
  the cores are full, then super-linearly: T ∝ (k/C)·(1 + a(k−C)/C), quadratic in load as seed 002 §4.2 observed
  (its Eq 4.12 fits t = λ + c·αc·Lc² + d·αd·Ld²).
* Disk: s concurrent streams (tasks in their disk phase plus hog streams) share the bandwidth, and seeks
  thrash as streams grow: each stream gets κd / (s·(1 + disk_contention·(s − 1))).
* Network: flows in their network phase share the NIC equally (the simulator may pass a smaller per-flow
  bandwidth for rack uplinks). The NIC is full duplex: what a node sends (a data transfer's ``transmit``
  phase, the last) shares its transmit side with other sends only.
* Memory: tasks' memory beyond the node's costs heavily (swapping divides every rate by
  ``1 + swap_penalty·(r − 1)`` at over-subscription ratio r); a start that would push r past ``oom_ratio``
  is killed as the kernel's OOM killer would.
"""

from __future__ import annotations

import math
from dataclasses import replace

from mrsched.core.physics.draws import noise_factor, straggler_factor
from mrsched.core.physics.outcomes import NodeCounters, RunOutcome, TaskUsage
from mrsched.core.physics.parameters import (
    _EPS,
    OVERHEAD_CPU_SHARE,
    REFERENCE_DISK_MBPS,
    Fault,
    NodeCapability,
    TaskDemand,
)
from mrsched.core.physics.phases import (
    _CPU,
    _DISK,
    _NETWORK,
    _OVERHEAD,
    _PHASE_ORDER,
    _TRANSMIT,
    _WAIT,
    _Rates,
    _Running,
)


class NodeModel:
    """One node's running tasks under the fluid contention model; time is explicit (model seconds).

    Callers start and stop tasks at times they choose and call :meth:`advance` to move the clock; finished
    tasks are collected with :meth:`pop_finished`. :meth:`next_event_s` says when the next phase change or
    fault boundary happens, so an event loop knows how long it may sleep.
    """

    def __init__(self, name: str, capability: NodeCapability, *, seed: int = 0, now: float = 0.0) -> None:
        self.name = name
        self.capability = capability
        self.seed = seed
        self.now = now
        self.faults: list[Fault] = []
        self.counters = NodeCounters()
        self._running: dict[str, _Running] = {}
        self._finished: list[RunOutcome] = []
        self._cached: _Rates | None = None
        self._memory_mb: float | None = None  # memory_used_mb's sum (None: stale)
        #: next_event_s's answer for the current state (None: stale). A heartbeat asks it three times of an
        #: unchanged node; everything that changes the answer resets it with the rates (_invalidate).
        self._next: float | None = None

    # --- inputs -------------------------------------------------------------------------------------------

    def add_fault(self, fault: Fault) -> None:
        self.faults.append(fault)
        self._invalidate()

    def clear_faults(self, now: float) -> None:
        """End every active fault at ``now`` (after advancing to it)."""
        self.advance(now)
        self.faults = [replace(f, end_s=now) if f.active(now) else f for f in self.faults if f.start_s <= now]
        self._invalidate()

    def start(self, task_id: str, demand: TaskDemand, now: float, *, noisy: bool = True) -> bool:
        """Start a task at ``now``. Returns False, recording an OOM-killed outcome, when memory would pass
        ``oom_ratio`` times the node's. ``noisy=False`` takes the demand as it is (a data transfer whose bytes
        the caller counts)."""
        if task_id in self._running:
            raise ValueError(f"task {task_id} already runs on {self.name}")
        self.advance(now)
        cap = self.capability
        factor = noise_factor(self.seed, self.name, task_id, cap.noise_sigma) if noisy else 1.0
        if noisy and cap.straggler_probability > 0:
            factor *= straggler_factor(
                self.seed,
                self.name,
                task_id,
                cap.straggler_probability,
                cap.straggler_shape,
                cap.straggler_max,
            )
        overhead = self.capability.overhead_s * factor if demand.startup else 0.0
        task = _Running(
            task_id, demand.scaled(factor), now, remaining=overhead, work=overhead, startup_s=overhead
        )
        task.usage.peak_memory_mb = demand.memory_mb
        if (self.memory_used_mb() + demand.memory_mb) > self.capability.oom_ratio * self.capability.memory_mb:
            self._finished.append(RunOutcome(task_id, now, now, task.usage, oom_killed=True))
            return False
        if self._skip_empty_phases(task):  # no work at all: done the moment it starts
            self._finished.append(RunOutcome(task_id, now, now, task.usage))
        else:
            self._running[task_id] = task
            if demand.memory_mb:  # a data transfer's side flow holds none: the sum stands exactly
                self._memory_mb = None
            self._invalidate()
        return True

    def add_network(self, task_id: str, mb: float, now: float) -> bool:
        """Give a running task still in its network phase ``mb`` more to transfer (a shuffle copying one more
        map's output); False when it is not running or past that phase."""
        if self.next_event_s() <= now + _EPS:
            self.advance(now)
        # Else nothing changes phase before ``now``: the sharing up to then is the same whether the work is added
        # now or at the node's last advance, so the node need not be integrated for it (a shuffle's every map).
        task = self._running.get(task_id)
        if task is None or task.phase_index != _NETWORK:
            return False
        task.remaining += mb
        task.work += mb
        task.added_network_mb += mb
        self._next = None  # the sharing is the same (rates do not depend on what is left), the end moves
        return True

    def stop(self, task_id: str, now: float) -> TaskUsage | None:
        """Kill a running task at ``now``; returns what it had consumed, or None if it was not running."""
        self.advance(now)
        task = self._running.pop(task_id, None)
        if task is not None and task.demand.memory_mb:
            self._memory_mb = None
        self._invalidate()
        return task.usage if task else None

    # --- state --------------------------------------------------------------------------------------------

    @property
    def running_ids(self) -> list[str]:
        return list(self._running)

    def memory_used_mb(self) -> float:
        # Recounted only when a task starts or leaves (the rates that read it are recomputed far more often).
        if self._memory_mb is None:
            self._memory_mb = sum(t.demand.memory_mb for t in self._running.values())
        return self._memory_mb

    def _invalidate(self) -> None:
        self._cached = None
        self._next = None

    def effective_cores(self, now: float | None = None) -> int:
        if not self.faults:  # the common case, without a generator per call
            return self.capability.cores
        t = self.now if now is None else now
        lost = sum(f.intensity for f in self.faults if f.kind == "lost-cores" and f.active(t))
        return max(1, self.capability.cores - int(lost))

    def cpu_hog_threads(self) -> float:
        if not self.faults:
            return 0
        return sum(f.intensity for f in self.faults if f.kind == "cpu-hog" and f.active(self.now)) * (
            self.effective_cores()
        )

    def disk_hog_streams(self) -> float:
        if not self.faults:
            return 0
        return sum(f.intensity for f in self.faults if f.kind == "disk-hog" and f.active(self.now))

    def runnable(self) -> float:
        """Threads running or waiting for CPU or disk: what Linux's load average counts."""
        in_work = sum(
            (t.demand.threads if t.phase_index == _CPU else 1)
            for t in self._running.values()
            if t.phase_index not in (_NETWORK, _WAIT, _TRANSMIT)
        )
        return in_work + self.cpu_hog_threads() + self.disk_hog_streams()

    def progress(self, task_id: str) -> float:
        """How far ``task_id`` is, 0-1: its phases' work done, each weighted by its time alone on this node (what
        a task's progress report approximates: a map's share of its input read). 1 when not running."""
        task = self._running.get(task_id)
        if task is None:
            return 1.0
        cap = self.capability
        d = task.demand
        alone = (
            task.startup_s,
            (d.network_mb + task.added_network_mb) / cap.network_mbps,
            d.wait_s,
            d.cpu_s / (cap.cpu_rate * min(d.threads, cap.cores)),
            d.disk_s / cap.disk_rate,
            d.transmit_mb / cap.network_mbps,
        )
        total = sum(alone)
        if total <= 0:
            return 0.0
        phase = task.phase_index
        work = task.work
        left = task.remaining / work if work > 0 else 0.0
        done = sum(alone[:phase]) + alone[phase] * (1.0 - min(1.0, left))
        return max(0.0, min(1.0, done / total))

    def cpu_busy_at(self, now: float) -> float:
        """Core-seconds busy up to ``now``, without integrating the node there when no phase ends before it
        (a sampler reading every node often): the busy cores are constant until the next event."""
        if not (self._running or self.faults):  # idle: nothing has been busy since the last advance
            return self.counters.cpu_busy_s
        if now > self.next_event_s():
            self.advance(now)
        return self.counters.cpu_busy_s + self._rates().busy_cores * max(0.0, now - self.now)

    @property
    def has_finished(self) -> bool:
        """Whether outcomes wait for :meth:`pop_finished` (an advance ended a task the caller has not seen)."""
        return bool(self._finished)

    def pop_finished(self) -> list[RunOutcome]:
        done, self._finished = self._finished, []
        return done

    # --- the fluid model ----------------------------------------------------------------------------------

    def _rates(self) -> _Rates:
        """Per-task progress rate of each task's current phase, and the node-wide sharing that sets it.
        Cached until a task starts, stops or changes phase, or a fault begins or ends."""
        if self._cached is None:
            self._cached = self._compute_rates()
        return self._cached

    def _compute_rates(self) -> _Rates:
        cap = self.capability
        faults = bool(self.faults)  # without faults (the common case) the hogs and lost cores need no scan
        cores = self.effective_cores() if faults else cap.cores
        in_phase = [0] * len(_PHASE_ORDER)  # tasks per phase, indexed like _PHASE_ORDER
        cpu_threads = 0
        for task in self._running.values():
            in_phase[task.phase_index] += 1
            if task.phase_index == _CPU:
                cpu_threads += task.demand.threads
        share = cap.overhead_cpu_share  # a starting task is this many CPU consumers, on average over its Ω
        consumers: float = cpu_threads + in_phase[_OVERHEAD] * share
        streams: float = in_phase[_DISK]
        if faults:
            consumers += self.cpu_hog_threads()
            streams += self.disk_hog_streams()
        flows = in_phase[_NETWORK]
        ratio = self.memory_used_mb() / cap.memory_mb
        swap = 1.0 + cap.swap_penalty * (ratio - 1.0) if ratio > 1.0 else 1.0

        cpu_share = min(1.0, cores / consumers) if consumers else 1.0
        cpu_cost = 1.0 + cap.cpu_contention * max(0.0, consumers - cap.contention_onset * cores) / cores
        disk_share = 1.0 / (streams * (1.0 + cap.disk_contention * (streams - 1))) if streams else 1.0
        cpu_rate = cpu_share / cpu_cost / swap  # the progress of a second of CPU work that takes a core alone
        rate_of = (
            # Ω is seconds of this node's own start-up: alone it takes Ω; its CPU share s is stretched by the
            # sharing, its waiting (1 - s) only by swapping (a second of Ω takes (1 - s)·swap + s / cpu_rate).
            cpu_rate if share >= 1.0 else 1.0 / ((1.0 - share) * swap + share / cpu_rate),
            cap.network_mbps / max(flows, 1) / swap,
            1.0,  # sleeping: wall time, whatever else the node does
            cap.cpu_rate * cpu_share / cpu_cost / swap,
            cap.disk_rate * disk_share / swap,
            cap.network_mbps / max(in_phase[_TRANSMIT], 1) / swap,
        )
        threaded = cpu_threads != in_phase[_CPU]
        return _Rates(rate_of, threaded, min(float(cores), consumers), cpu_share, streams)

    def next_event_s(self) -> float:
        """Model time of the next phase change or fault boundary (inf when nothing will change)."""
        if self._next is not None:
            return self._next
        rates = self._rates()
        of_phase = rates.of_phase
        now = self.now
        soonest = math.inf
        for task in self._running.values():
            rate = rates.of(task) if rates.threaded else of_phase[task.phase_index]
            at = now + task.remaining / rate
            if at < soonest:
                soonest = at
        for fault in self.faults:
            for edge in (fault.start_s, fault.end_s):
                if edge is not None and edge > now + _EPS:
                    soonest = min(soonest, edge)
        self._next = soonest
        return soonest

    def advance(self, now: float) -> None:
        """Integrate the model up to ``now``, recording phase changes and finished tasks on the way."""
        if now < self.now - 1e-6:
            raise ValueError(f"{self.name}: time runs forward only ({now} < {self.now})")
        if math.isinf(now):
            raise ValueError(f"{self.name}: cannot advance to infinity")
        while True:
            event = self.next_event_s()
            if event <= self.now + _EPS:
                # Due now: float residue too small to move the clock (a task with a few bytes of work).
                self._finish_due()
                continue
            if now <= self.now + _EPS:
                return
            step_end = min(now, event)
            self._integrate(step_end - self.now)
            self.now = step_end
            self._next = None
            if step_end >= event:  # a phase ends or a fault starts or stops here: the sharing changes
                self._complete_phases()
                self._invalidate()

    def _finish_due(self) -> None:
        rates = self._rates()
        for task in self._running.values():
            if self.now + task.remaining / rates.of(task) <= self.now + _EPS:  # next_event_s's test
                task.remaining = 0.0
        self._complete_phases()
        self._invalidate()

    def _integrate(self, dt: float) -> None:
        rates = self._rates()
        of_phase, threaded = rates.of_phase, rates.threaded
        streams = rates.disk_streams
        cores = self.effective_cores()
        self.counters.cpu_busy_s += rates.busy_cores * dt
        if streams:
            self.counters.cpu_iowait_s += (cores - rates.busy_cores) * dt * min(1.0, streams / cores)
        held = rates.cpu_share * dt  # core-seconds each CPU consumer holds over the step
        share = self.capability.overhead_cpu_share
        for task in self._running.values():
            remaining = task.remaining
            done = (rates.of(task) if threaded else of_phase[task.phase_index]) * dt
            # Snap float residue so that a phase ends exactly at the event time computed for it.
            work = task.work
            if remaining - done <= _EPS * (work if work > 1.0 else 1.0):
                done = remaining
            task.remaining = remaining - done
            phase = task.phase_index
            if phase == _CPU:
                # Time held on a core: contention makes a task hold it longer for the same work, as a real
                # task's rusage shows; each thread holds its own share.
                task.usage.cpu_s += held * task.demand.threads
            elif phase == _DISK:
                self._account_disk(task, done)
            elif phase == _NETWORK:
                nbytes = done * 1e6
                task.usage.network_bytes += int(nbytes)
                self.counters.network_receive_bytes += nbytes
            elif phase == _TRANSMIT:
                self.counters.network_transmit_bytes += done * 1e6
            elif phase == _OVERHEAD:
                # Its CPU share holds a core for as long as the sharing makes it (all of Ω's CPU: ``held``); a
                # free start-up is accounted at OVERHEAD_CPU_SHARE of its time (its usage report's assumption).
                task.usage.cpu_s += (
                    held
                    if share >= 1.0
                    else share * done * self._cpu_cost(rates)
                    if share > 0
                    else OVERHEAD_CPU_SHARE * done
                )
        if self.faults and self.disk_hog_streams():
            hog_rate = self.capability.disk_rate * REFERENCE_DISK_MBPS * 1e6
            hog_share = self.disk_hog_streams() / max(streams, _EPS)
            self.counters.disk_written_bytes += (
                hog_rate * hog_share * dt / (1.0 + self.capability.disk_contention * max(streams - 1, 0))
            )

    def _cpu_cost(self, rates: _Rates) -> float:
        """Core-seconds held per second of CPU work under ``rates``: its share of a core over its CPU phase's
        rate, which the over-subscription cost and swapping slow (``of_phase = share / cost / swap``)."""
        rate = rates.of_phase[_CPU] / self.capability.cpu_rate  # cpu_share / cost / swap
        return rates.cpu_share / rate if rate > 0 else 1.0

    def _account_disk(self, task: _Running, done: float) -> None:
        total = task.demand.read_mb + task.demand.write_mb
        nbytes = done * REFERENCE_DISK_MBPS * 1e6
        read = nbytes * (task.demand.read_mb / total) if total else 0.0
        task.usage.read_bytes += int(read)
        task.usage.written_bytes += int(nbytes - read)
        self.counters.disk_read_bytes += read
        self.counters.disk_written_bytes += nbytes - read

    def _phase_work(self, task: _Running) -> float:
        index, demand = task.phase_index, task.demand
        if index == _CPU:
            return demand.cpu_s
        if index == _DISK:
            return demand.disk_s
        if index == _NETWORK:
            return demand.network_mb + task.added_network_mb
        if index == _TRANSMIT:
            return demand.transmit_mb
        if index == _WAIT:
            return demand.wait_s
        return task.startup_s

    def _skip_empty_phases(self, task: _Running) -> bool:
        """Move ``task`` past phases with no work; True when it has none left."""
        while task.remaining <= 0.0:
            if task.phase_index == len(_PHASE_ORDER) - 1:
                return True
            task.phase_index += 1
            task.remaining = task.work = self._phase_work(task)
        return False

    def _complete_phases(self) -> None:
        for task in list(self._running.values()):
            if self._skip_empty_phases(task):
                del self._running[task.task_id]
                if task.demand.memory_mb:
                    self._memory_mb = None
                self._finished.append(RunOutcome(task.task_id, task.started_s, self.now, task.usage))
