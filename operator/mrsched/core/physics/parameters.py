"""The node's parameters: what a node can do (:class:`NodeCapability`), what a task needs (:class:`TaskDemand`),
the soft faults injected on a node (:class:`Fault`), and the module constants the physics converts with.

Schedulers never see these parameters; they must learn them from task outcomes, as on a real cluster.

Faults (seed 002 §5.2.6): a CPU hog adds ``intensity`` busy loops per core; a disk hog adds ``intensity``
writing streams; lost cores remove ``intensity`` cores; each from ``start_s`` to ``end_s`` (open-ended when
None).
"""

from __future__ import annotations

from dataclasses import dataclass
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
    #: parallel. 0: Ω is a free delay, which a policy that knows it exploits by running more tasks than cores.
    #: A class sets its own where a paper's baseline figure says otherwise (dara-8core).
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
