"""Probe tasks: a known amount of CPU and disk work that measures a node's capability (seed 002 P3-A).

The operator runs each probe kind a few times alone on a node and turns the durations into the node's CPU and
disk rates κc, κd and overhead Ω (``mrsched/core/probes.py``, Eq 3.5). A probe of kind ``k`` at scale ``s``
does θ = ``probe_work(k, s)`` reference seconds of work, one resource after the other as Eq 3.2 assumes:

* CPU: θc reference-core seconds = ``θc × CPU_BYTES_PER_REFERENCE_S`` bytes hashed with BLAKE2b, one core;
* disk: θd reference-disk seconds = ``θd × 100 MB`` moved: half written to a private file under the data
  volume and fsynced, then dropped from the page cache and read back. The file's directory
  (``<data>/.mrsched-probe/<host>-<random>/``) is removed afterwards, also on failure or SIGTERM.

The ``unit`` probe (θ = (0, 0)) does nothing but start and report: its duration is the overhead Ω.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import random
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mrworker.errors import TaskError, UsageError
from mrworker.report import Counters

PROBE_KINDS = ("unit", "base", "cpu", "disk")

# Copies of mrsched.core.probes (PROBE_ETA, PROBE_CPU_S, PROBE_DISK_S) and mrsched.core.physics
# (REFERENCE_DISK_MBPS): the worker is standard-library only and never imports mrsched.
# tests/workers/test_probe.py asserts that they agree.
PROBE_ETA = 4.0
PROBE_CPU_S = 20.0
PROBE_DISK_S = 20.0
REFERENCE_DISK_MBPS = 100.0

#: Bytes hashed per reference-core second: this constant *defines* the CPU unit of a real cluster's probes.
#: core/probes.py measures θc in reference seconds, the time the work takes on a κc = 1 core; with no
#: reference machine at hand (nodes come and go), the probe loop itself is the reference. 1.2 GB of BLAKE2b
#: takes about 1 s on one core of a current server (1.0 s on an AMD EPYC core under CPython 3.11, measured
#: 2026-11), so current nodes probe near κc = 1 and the base probe's 20 reference seconds take about 20 s
#: of CPU: long against the start-up overhead Ω, short enough to probe every node a few times.
#: BLAKE2b, not SHA-256: CPython hashes it with its own portable C code and no CPU has instructions for it,
#: so its speed follows a core's general integer throughput, whereas SHA-256 runs 2-4 times faster on CPUs
#: with SHA extensions, which says nothing about how fast they run a map task.
CPU_BYTES_PER_REFERENCE_S = 1_200_000_000
#: The block hashed over and over: 64 KiB stays in the L2 cache, so memory bandwidth does not enter.
_CPU_BLOCK = random.Random(0).randbytes(64 << 10)
#: Disk I/O size; the written data is random so that a compressing filesystem cannot shrink it.
_IO_CHUNK = 1 << 20
_IO_DATA = random.Random(1).randbytes(_IO_CHUNK)
#: Probes' scratch directories, under the data volume (hidden: input listings skip names starting with ".").
PROBE_DIR = ".mrsched-probe"


def probe_work(kind: str, scale: float = 1.0) -> tuple[float, float]:
    """(θc, θd) of a probe kind in reference seconds, as ``mrsched.core.probes.probe_work``."""
    cpu_s, disk_s = {
        "unit": (0.0, 0.0),
        "base": (PROBE_CPU_S, PROBE_DISK_S),
        "cpu": (PROBE_ETA * PROBE_CPU_S, PROBE_DISK_S),
        "disk": (PROBE_CPU_S, PROBE_ETA * PROBE_DISK_S),
    }[kind]
    return cpu_s * scale, disk_s * scale


@dataclass(frozen=True)
class Probe:
    """One probe task: its kind, scale and the data volume its disk work goes to."""

    kind: str
    scale: float
    data_dir: Path

    def __post_init__(self) -> None:
        if self.kind not in PROBE_KINDS:
            raise UsageError(
                f"probe kind {self.kind!r} (--probe-kind or MRSCHED_PROBE_KIND): "
                f"must be one of {', '.join(PROBE_KINDS)}"
            )
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise UsageError(
                f"probe scale {self.scale!r} (--probe-scale or MRSCHED_PROBE_SCALE): must be a positive number"
            )

    @property
    def cpu_bytes(self) -> int:
        """Bytes to hash: θc × CPU_BYTES_PER_REFERENCE_S."""
        return round(probe_work(self.kind, self.scale)[0] * CPU_BYTES_PER_REFERENCE_S)

    @property
    def disk_bytes(self) -> int:
        """Bytes written, and then read back: half of θd × REFERENCE_DISK_MBPS megabytes (10⁶ bytes)."""
        return round(probe_work(self.kind, self.scale)[1] * REFERENCE_DISK_MBPS * 1e6 / 2)


def run_probe(probe: Probe, counters: Counters) -> None:
    """Do the probe's CPU work, then its disk work (every kind but ``unit`` has both)."""
    if probe.kind == "unit":
        return
    with scratch_dir(probe.data_dir) as work:
        hash_bytes(probe.cpu_bytes)
        write_and_read_back(work / "probe.bin", probe.disk_bytes, counters)


def hash_bytes(total: int) -> str:
    """The CPU work: ``total`` bytes through BLAKE2b, on this thread; returns the digest."""
    digest = hashlib.blake2b()
    block = memoryview(_CPU_BLOCK)
    full, rest = divmod(total, len(block))
    for _ in range(full):
        digest.update(block)
    digest.update(block[:rest])
    return digest.hexdigest()


@contextlib.contextmanager
def scratch_dir(data_dir: Path) -> Iterator[Path]:
    """A new private directory under ``<data>/.mrsched-probe``, removed with its contents when done."""
    parent = data_dir / PROBE_DIR
    prefix = f"{socket.gethostname()}-"  # a pod's host name is its name: says whose leftovers they are
    work: Path | None = None
    try:
        # No window between creating the directory and owning its removal: a SIGTERM held back meanwhile is
        # raised on leaving the deferral, already inside this try.
        with _sigterm_deferred():
            work = _make_private_dir(parent, prefix)
        yield work
    finally:
        with _sigterm_deferred():  # SIGTERM must not interrupt the removal either
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
            with contextlib.suppress(OSError):  # not empty: other probes are at work there
                parent.rmdir()


def _make_private_dir(parent: Path, prefix: str) -> Path:
    for _ in range(10):
        parent.mkdir(parents=True, exist_ok=True)
        try:
            return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        except FileNotFoundError:  # another probe removed the (then empty) parent in between
            continue
    raise TaskError(f"cannot create a probe directory under {parent}")


@contextlib.contextmanager
def _sigterm_deferred() -> Iterator[None]:
    """Hold SIGTERM back; one that arrived meanwhile is handled (exit 143) on leaving."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def write_and_read_back(path: Path, nbytes: int, counters: Counters) -> None:
    """Write ``nbytes`` to ``path`` and fsync them, drop them from the page cache, and read them back."""
    data = memoryview(_IO_DATA)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        remaining = nbytes
        while remaining:
            written = os.write(fd, data[: min(_IO_CHUNK, remaining)])
            remaining -= written
            counters.written_bytes += written
        os.fsync(fd)
        _drop_cache(fd)  # after fsync the pages are clean, so an unprivileged process may drop them
    finally:
        os.close(fd)
    read = 0
    buffer = bytearray(_IO_CHUNK)
    with open(path, "rb", buffering=0) as file:
        _drop_cache(file.fileno())
        while count := file.readinto(buffer):
            read += count
            counters.read_bytes += count
    if read != nbytes:
        raise TaskError(f"probe read back {read} bytes of the {nbytes} it wrote to {path}")


def _drop_cache(fd: int) -> None:
    """Ask the kernel to forget the file's cached pages, so the read-back reaches the disk (Linux; no root)."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):  # e.g. a filesystem without fadvise support
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
