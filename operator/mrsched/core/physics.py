"""The hidden physics of a node: how long tasks take, alone and together.

One model serves two callers: the offline simulator and the node emulator's *model mode*. Schedulers never
see its parameters; they must learn them from task outcomes, as on a real cluster.

Alone, a task's time is seed 002's static model (Gupta, Eq 3.1/3.2): it uses one resource after another,

    T = Ω + θn/βn + w + θc/κc + θd/κd

(start-up overhead Ω, network transfer, CPU work θc in reference-core seconds at capability κc, disk work θd
in reference-disk seconds at capability κd; the network term is zero for local input, where Eq 3.2 applies
exactly). ``w`` is time the task sleeps using nothing (a server's think time, a deliberate delay: seed 000's
URLGet and "WordCount + 10 ms delay"); a sleeping task is not runnable, so it adds nothing to the load average.

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

Faults (seed 002 §5.2.6): a CPU hog adds ``intensity`` busy loops per core; a disk hog adds ``intensity``
writing streams; lost cores remove ``intensity`` cores; each from ``start_s`` to ``end_s`` (open-ended when
None). Noise: each task's work is scaled by a log-normal factor with the node's σ, drawn deterministically
from the seed, the node and the task id.
"""

from __future__ import annotations

import _random  # random.Random's C generator: noise_factor
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Literal

#: Disk bandwidth of the reference machine (κd = 1), in MB/s: converts bytes moved into θd.
#: assumption: a hard disk's sequential rate of the seeds' era; seed 002 gives κd = 1 no bandwidth.
REFERENCE_DISK_MBPS = 100.0
#: Share of the start-up overhead Ω that burns CPU (JVM or interpreter start), for usage accounting.
#: assumption: half; no seed measures it (`make calibrate` measures our bare start-up's CPU/wall ratio).
OVERHEAD_CPU_SHARE = 0.5
_EPS = 1e-9

FaultKind = Literal["cpu-hog", "disk-hog", "lost-cores"]


@dataclass(frozen=True)
class NodeCapability:
    """Hidden per-node parameters (seed 002 Table 3.1 gives κc, κd and Ω for its cluster)."""

    cores: int
    memory_mb: float
    #: paper: seed 002 Eq 3.5 and Table 3.1, κ = 1 is the reference machine.
    cpu_rate: float = 1.0  # κc: reference-core seconds of CPU work per second, per core
    #: paper: seed 002 Eq 3.5 and Table 3.1, κ = 1 is the reference machine.
    disk_rate: float = 1.0  # κd: reference-disk seconds of disk work per second
    #: assumption: a JVM or interpreter starts in about a second (as catalog.DEFAULT_SOURCES).
    overhead_s: float = 1.0  # Ω
    #: spec: 1 Gbit/s Ethernet, the seeds' clusters' NIC.
    network_mbps: float = 1000.0 / 8  # NIC bandwidth, MB/s (1 Gbit/s)
    #: assumption: 5 % spread (seed 002 §3.2.1 learns a σ per machine but reports none).
    noise_sigma: float = 0.05  # σ of the log-normal noise on a task's work
    #: assumption: near dara-8core's 0.22 from seed 002 Fig 2.5; no other seed measures it.
    cpu_contention: float = 0.2  # a: extra cost per consumer beyond the core count, relative to C
    #: assumption: no seed gives a disk-only concurrency curve.
    disk_contention: float = 0.1  # b: seek thrashing per extra concurrent stream
    #: The share of the cores beyond which CPU consumers pay the over-subscription cost (1: only past the core
    #: count, the measured physics; below 1 a sensitivity variant: caches and memory bandwidth shared before
    #: every core is busy, ``cluster.variant.contentionOnset``).
    contention_onset: float = 1.0
    #: assumption: swapping slows work about tenfold; no seed over-subscribes memory.
    swap_penalty: float = 10.0
    #: assumption: the OOM killer acts at 1.5x the node's memory; no seed reports a kill.
    oom_ratio: float = 1.5
    #: The share of start-up Ω that is CPU work and competes for cores like it (measured: our workers' start-up
    #: is all CPU work, 0.17 s wall = 0.17 CPU-s, `make calibrate`); the rest is waiting, which every task does in
    #: parallel. 0: Ω is a free delay, which a policy that knows it exploits by running more tasks than cores
    #: (issue 19). A class sets its own where a paper's baseline figure says otherwise (dara-8core).
    overhead_cpu_share: float = 1.0
    #: Stragglers (heavy-tailed slow attempts, beyond the log-normal noise): the chance that an attempt is one,
    #: and its slowdown, Pareto with this shape (scale 1) capped at ``straggler_max``. Off (0) unless a
    #: scenario's ``cluster.stragglers`` sets them.
    straggler_probability: float = 0.0
    straggler_shape: float = 1.5
    straggler_max: float = 10.0

    def __post_init__(self) -> None:
        if self.cores < 1 or self.memory_mb <= 0:
            raise ValueError("a node needs at least one core and some memory")
        if min(self.cpu_rate, self.disk_rate, self.network_mbps) <= 0:
            raise ValueError("cpu_rate, disk_rate and network_mbps must be positive")
        if min(self.overhead_s, self.noise_sigma, self.cpu_contention, self.disk_contention) < 0:
            raise ValueError("overhead_s, noise_sigma and the contention factors must not be negative")
        if not 0.0 <= self.overhead_cpu_share <= 1.0:
            raise ValueError("overhead_cpu_share is a share of the start-up: from 0 to 1")
        if not 0.0 < self.contention_onset <= 1.0:
            raise ValueError("contention_onset is a share of the cores: above 0, at most 1")


@dataclass(frozen=True)
class TaskDemand:
    """What one task needs: θ = (θc, θd) of seed 002 plus network transfer and memory."""

    cpu_s: float = 0.0  # θc: CPU work in reference-core seconds
    read_mb: float = 0.0  # local disk reads
    write_mb: float = 0.0  # local disk writes
    network_mb: float = 0.0  # non-local input or shuffle bytes fetched over the network
    memory_mb: float = 0.0
    wait_s: float = 0.0  # sleeping, using no resource (server replies, deliberate delays)
    #: Runnable threads in its CPU phase: each competes for a core like a task of its own, so alone it uses
    #: min(threads, cores) cores (a JVM's GC and spill threads; seed 000 Fig 2's 1.3-2.0 load per task).
    threads: int = 1
    #: Whether the node's start-up Ω precedes the work. False for a replayed container, whose measured time
    #: already contains its start-up, and for a shuffle fetch, which is not a process of its own.
    startup: bool = True
    #: Bytes this node sends, in MB: the last phase, on the NIC's transmit side (full duplex: transmits share it
    #: with one another, not with what the node receives). Only a data transfer's sending side has it (a
    #: replica serving a remote read, a DataNode forwarding a replicated write).
    transmit_mb: float = 0.0

    @property
    def disk_s(self) -> float:
        """θd: disk work in reference-disk seconds."""
        return (self.read_mb + self.write_mb) / REFERENCE_DISK_MBPS

    def scaled(self, factor: float) -> TaskDemand:
        """The same task with its work (not its memory) multiplied by ``factor``."""
        if factor == 1.0:  # noise off, or a data transfer: the demand is immutable, so itself
            return self
        # The constructor, not dataclasses.replace: this runs for every task started (replace inspects fields).
        return TaskDemand(
            self.cpu_s * factor,
            self.read_mb * factor,
            self.write_mb * factor,
            self.network_mb * factor,
            self.memory_mb,
            self.wait_s * factor,
            self.threads,
            self.startup,
            self.transmit_mb * factor,
        )

    def with_data(self, *, read_mb: float, write_mb: float, network_mb: float) -> TaskDemand:
        """The same task with its bytes moved between disk and network (a remote read, a replicated write)."""
        # The constructor, not dataclasses.replace, for the same reason as scaled: once per task started.
        return TaskDemand(
            self.cpu_s,
            read_mb,
            write_mb,
            network_mb,
            self.memory_mb,
            self.wait_s,
            self.threads,
            self.startup,
            self.transmit_mb,
        )


@dataclass(frozen=True)
class Fault:
    """A soft fault on one node (seed 002 §5.2.6: CPU hogging, disk hogging; Fig 6.2: lost cores)."""

    kind: FaultKind
    start_s: float
    end_s: float | None = None
    intensity: float = 1.0

    def active(self, now: float) -> bool:
        return self.start_s <= now + _EPS and (self.end_s is None or now + _EPS < self.end_s)


def isolated_duration(cap: NodeCapability, demand: TaskDemand) -> float:
    """Seed 002 Eq 3.2 (plus the network term): the task's time alone on an idle node, without noise; a task of
    several threads does its CPU work on min(threads, cores) cores, paying the over-subscription cost when it
    has more threads than the node has cores (as :class:`NodeModel` charges it)."""
    cpu_time = demand.cpu_s / (cap.cpu_rate * min(demand.threads, cap.cores))
    onset = cap.contention_onset * cap.cores
    if demand.threads > onset:
        cpu_time *= 1.0 + cap.cpu_contention * (demand.threads - onset) / cap.cores
    return (
        (cap.overhead_s if demand.startup else 0.0)
        + demand.network_mb / cap.network_mbps
        + demand.wait_s
        + cpu_time
        + demand.disk_s / cap.disk_rate
        + demand.transmit_mb / cap.network_mbps
    )


class Phase(Enum):
    """The resources a task uses one after another (seed 002 Eq 3.1's assumption)."""

    OVERHEAD = "overhead"
    NETWORK = "network"
    WAIT = "wait"
    CPU = "cpu"
    DISK = "disk"
    TRANSMIT = "transmit"


_PHASE_ORDER = (Phase.OVERHEAD, Phase.NETWORK, Phase.WAIT, Phase.CPU, Phase.DISK, Phase.TRANSMIT)
_OVERHEAD, _NETWORK, _WAIT, _CPU, _DISK, _TRANSMIT = range(6)


@dataclass(slots=True)
class TaskUsage:
    """What a finished task consumed, in the units of the worker's usage report."""

    cpu_s: float = 0.0
    read_bytes: int = 0
    written_bytes: int = 0
    network_bytes: int = 0
    peak_memory_mb: float = 0.0


@dataclass
class TaskOutcome:
    task_id: str
    started_s: float
    finished_s: float
    usage: TaskUsage
    oom_killed: bool = False

    @property
    def duration_s(self) -> float:
        return self.finished_s - self.started_s


@dataclass
class NodeCounters:
    """Cumulative node-level counters, with node_exporter's meaning (seconds of CPU per mode, bytes)."""

    cpu_busy_s: float = 0.0  # user + system time of tasks and hogs, summed over cores
    cpu_iowait_s: float = 0.0  # idle cores while disk streams wait
    disk_read_bytes: float = 0.0
    disk_written_bytes: float = 0.0
    network_receive_bytes: float = 0.0
    network_transmit_bytes: float = 0.0


@dataclass(slots=True)
class _Running:
    task_id: str
    demand: TaskDemand  # already scaled by the task's noise factor
    started_s: float
    phase_index: int = 0
    remaining: float = 0.0  # seconds (overhead) or work units of the current phase
    work: float = 0.0  # the current phase's whole work (the tolerance an integration step snaps within)
    startup_s: float = 0.0  # its start-up Ω as drawn (noise and straggler factor included)
    usage: TaskUsage = field(default_factory=TaskUsage)
    #: NIC work added while it ran (NodeModel.add_network), beside the demand's own: kept apart so that a
    #: shuffle's every extension does not rebuild its frozen demand.
    added_network_mb: float = 0.0

    @property
    def phase(self) -> Phase:
        return _PHASE_ORDER[self.phase_index]


@dataclass(slots=True)
class _Rates:
    """A node's sharing until its next change: per phase, the progress per second of a task in it."""

    of_phase: tuple[float, ...]  # indexed like _PHASE_ORDER; a CPU-phase task of t threads progresses t times
    threaded: bool  # some CPU-phase task has more than one thread
    busy_cores: float
    cpu_share: float  # fraction of a core each CPU consumer holds
    disk_streams: float

    def of(self, task: _Running) -> float:
        """The progress per second of ``task``'s current phase."""
        rate = self.of_phase[task.phase_index]
        if self.threaded and task.phase_index == _CPU:  # each of its threads holds its share of a core
            rate *= task.demand.threads
        return rate


_TWO_PI = 2.0 * math.pi  # random.TWOPI


def straggler_factor(
    seed: int, node: str, task_id: str, probability: float, shape: float, cap: float
) -> float:
    """1, or with ``probability`` a Pareto(``shape``) slowdown capped at ``cap``: the same for the same (seed,
    node, attempt), drawn apart from the noise (a speculative copy of a straggler on another node is no
    straggler, unless it draws one there)."""
    if probability <= 0:
        return 1.0
    digest = hashlib.blake2b(f"{seed}/{node}/{task_id}/straggler".encode(), digest_size=8).digest()
    rng = _random.Random(int.from_bytes(digest, "big"))
    if rng.random() >= probability:
        return 1.0
    return min(cap, float((1.0 - rng.random()) ** (-1.0 / shape)))


def noise_factor(seed: int, node: str, task_id: str, sigma: float) -> float:
    """Log-normal work multiplier with median 1, the same for the same (seed, node, task)."""
    if sigma <= 0:
        return 1.0
    digest = hashlib.blake2b(f"{seed}/{node}/{task_id}".encode(), digest_size=8).digest()
    # random.Random(n).gauss(0, sigma), unrolled on the C generator the class wraps: the same Mersenne Twister
    # state and the same two uniforms (tests/unit/test_physics.py pins it), without the Python-level seed and
    # gauss wrappers, which cost as much as the draw itself; the lower bound draws one per task and node.
    rng = _random.Random(int.from_bytes(digest, "big"))
    x2pi = rng.random() * _TWO_PI
    g2rad = math.sqrt(-2.0 * math.log(1.0 - rng.random()))
    return math.exp(math.cos(x2pi) * g2rad * sigma)


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
        self._finished: list[TaskOutcome] = []
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
            self._finished.append(TaskOutcome(task_id, now, now, task.usage, oom_killed=True))
            return False
        if self._skip_empty_phases(task):  # no work at all: done the moment it starts
            self._finished.append(TaskOutcome(task_id, now, now, task.usage))
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

    def pop_finished(self) -> list[TaskOutcome]:
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
                self._finished.append(TaskOutcome(task.task_id, task.started_s, self.now, task.usage))


def predicted_duration(cap: NodeCapability, demand: TaskDemand, others: int) -> float:
    """Expected time of a task that joins ``others`` similar tasks on a node, no noise: the fluid model's
    sharing at that load held constant (CPU stretched by processor sharing and the over-subscription cost;
    disk by the streams expected in their disk phase at the same time, with seek thrashing). A task of t
    threads is t CPU consumers: alone it uses min(t, cores) cores, among k tasks its threads share the cores
    with the k·t of them."""
    k = others + 1
    t = demand.threads
    cpu_t, disk_t = demand.cpu_s / (cap.cpu_rate * min(t, cap.cores)), demand.disk_s / cap.disk_rate
    busy = cpu_t + disk_t
    threads = k * t
    cpu_stretch = (
        (min(t, cap.cores) / t)
        * max(1.0, threads / cap.cores)
        * (1.0 + cap.cpu_contention * max(0.0, threads - cap.contention_onset * cap.cores) / cap.cores)
    )
    streams = max(1.0, k * (disk_t / busy if busy else 0.0))
    disk_stretch = streams * (1.0 + cap.disk_contention * (streams - 1.0))
    # Start-up's CPU share shares the cores too (the tasks' start-ups overlap one another's CPU work).
    share = cap.overhead_cpu_share
    overhead = (cap.overhead_s if demand.startup else 0.0) * ((1.0 - share) + share * cpu_stretch)
    return (
        overhead
        + demand.network_mb / cap.network_mbps
        + demand.wait_s
        + cpu_t * cpu_stretch
        + disk_t * disk_stretch
        + demand.transmit_mb / cap.network_mbps
    )


def run_alone(cap: NodeCapability, demand: TaskDemand, *, faults: Iterable[Fault] = ()) -> float:
    """Duration of one task started at time 0 on an otherwise idle node, noise off (for tests and probes)."""
    model = NodeModel("probe", replace(cap, noise_sigma=0.0))
    for fault in faults:
        model.add_fault(fault)
    model.start("t", demand, 0.0)
    while model.running_ids:
        model.advance(model.next_event_s())
    (outcome,) = model.pop_finished()
    return outcome.duration_s
