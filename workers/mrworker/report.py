"""The usage report a task leaves in its container's termination message (format version 1).

A compact JSON object, always under the kubelet's 4 KiB termination-message limit::

    {"v": 1, "status": "succeeded" | "failed", "cpuUserS": 1.23, "cpuSystemS": 0.1,
     "readBytes": 0, "writtenBytes": 0, "networkBytes": 0, "recordsIn": 0, "recordsOut": 0,
     "peakMemoryBytes": 0, "wallS": 2.5, "error": "..."}

``networkBytes`` counts the shuffle: map outputs a reduce fetches, which on a real cluster cross the network
to the shared volume. The operator parses it with ``mrsched.core.report.TaskReport``; a test keeps the two
in step. CPU and peak memory come from ``getrusage`` of the worker process.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPORT_VERSION = 1
_LOADED = time.monotonic()  # close to process start: the worker imports this first
MAX_REPORT_BYTES = 4096


@dataclass
class Counters:
    """What the task has done so far; every data-plane read and write adds to it."""

    read_bytes: int = 0
    written_bytes: int = 0
    network_bytes: int = 0
    records_in: int = 0
    records_out: int = 0
    started: float = _LOADED


def render(counters: Counters, *, error: str = "") -> str:
    """The report as JSON; a long error is cut (keeping its start) so that the whole stays under 4 KiB."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    body: dict[str, object] = {
        "v": REPORT_VERSION,
        "status": "failed" if error else "succeeded",
        "cpuUserS": round(usage.ru_utime, 3),
        "cpuSystemS": round(usage.ru_stime, 3),
        "readBytes": counters.read_bytes,
        "writtenBytes": counters.written_bytes,
        "networkBytes": counters.network_bytes,
        "recordsIn": counters.records_in,
        "recordsOut": counters.records_out,
        "peakMemoryBytes": peak_memory_bytes(usage),
        "wallS": round(time.monotonic() - counters.started, 3),
    }
    if error:
        body["error"] = error
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    excess = len(text.encode()) - MAX_REPORT_BYTES
    if excess > 0:
        body["error"] = error[: max(0, len(error) - excess - 16)] + "…"
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return text


def peak_memory_bytes(usage: resource.struct_rusage) -> int:
    """This process's peak resident memory.

    ``VmHWM`` from ``/proc/self/status`` where there is one: ``ru_maxrss`` survives ``exec``, so a worker
    started by a large parent would report the parent's peak.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return usage.ru_maxrss * 1024  # Linux reports kilobytes


def write(text: str, path: Path) -> None:
    """Write the report where the kubelet reads it; also print it, so that it is in the log either way."""
    print(text, flush=True)
    try:
        path.write_text(text)
    except OSError as err:  # outside a container /dev/termination-log usually does not exist
        print(f"mrworker: cannot write the termination message to {path}: {err.strerror}", file=sys.stderr)
