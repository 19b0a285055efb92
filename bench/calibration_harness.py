"""Our workers' map tasks run and measured on this machine, for ``bench/calibrate.py`` (issue 19, item 1).

Each task is a real ``python -m mrworker map`` process (interpreter start included). ``Harness.run_together``
starts k commands at once and records each one's wall time (measured around the process), CPU seconds
(``wait4``: the whole process) and the usage report the worker writes to its termination log. ``generate``
writes the inputs once with the worker's own generators (randomtextwriter, teragen, randomwriter), one part per
concurrent task; ``measure`` runs one (application, k, repeat) and ``points`` reduces the runs to the
per-k means (and ranges) the fit and the report use; ``machine`` describes this machine. No fitting and no
rendering here: ``calibrate.py`` fits, ``calibration_report.py`` renders.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MB = 1_000_000
#: The application name the bare start-up's runs (``mrworker probe --probe-kind unit``) are recorded under.
PROBE = "probe-unit"


@dataclass(frozen=True)
class AppSpec:
    """How to run one application's map task, and its default size (one task alone: about 2-5 s)."""

    size: float  # MB of input (or of output, for randomwriter), or Halton samples for pi
    unit: str
    source: str | None = None  # generated input it reads: "text", "tera" or "random"
    reduces: int = 2
    extra: tuple[str, ...] = ()


APPS: dict[str, AppSpec] = {
    "wordcount": AppSpec(80, "MB", "text"),
    "grep": AppSpec(80, "MB", "text", extra=("--pattern", "[a-z]*ing[a-z]*")),
    "sort": AppSpec(512, "MB", "random"),
    "terasort": AppSpec(96, "MB", "tera"),
    "pi": AppSpec(2_400_000, "samples", reduces=1),
    "randomwriter": AppSpec(256, "MB", reduces=0),
    "jio": AppSpec(96, "MB", "text", reduces=0),  # writes --output-factor 10 times its input
}
#: The generator that writes each kind of input, one part per concurrent task.
GENERATORS = {"text": "randomtextwriter", "tera": "teragen", "random": "randomwriter"}


@dataclass
class TaskRun:
    app: str
    concurrency: int
    repeat: int
    index: int
    wall_s: float  # around the process: interpreter start to exit
    cpu_s: float  # user + system, the whole process (wait4)
    report_wall_s: float = 0.0
    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0
    read_bytes: int = 0
    written_bytes: int = 0
    peak_memory_bytes: int = 0


@dataclass
class Harness:
    data: Path
    logs: Path
    env: dict[str, str] = field(default_factory=dict)

    def run_together(
        self, commands: Sequence[Sequence[str]], tag: str
    ) -> list[tuple[float, float, dict[str, Any]]]:
        """Start every command at once; each one's (wall s, CPU s, usage report), waiting for all."""
        results: list[tuple[float, float] | None] = [None] * len(commands)
        threads, procs = [], []

        def reap(i: int, proc: subprocess.Popen[bytes], started: float) -> None:
            _, status, usage = os.wait4(proc.pid, 0)
            ended = time.perf_counter()
            proc.returncode = os.waitstatus_to_exitcode(status)
            results[i] = (ended - started, usage.ru_utime + usage.ru_stime)

        for i, command in enumerate(commands):
            env = {**self.env, "MRSCHED_TERMINATION_LOG": str(self.logs / f"{tag}-{i}.json")}
            with open(self.logs / f"{tag}-{i}.err", "wb") as err:
                started = time.perf_counter()
                proc = subprocess.Popen(
                    [sys.executable, "-m", "mrworker", *command],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
            procs.append(proc)
            threads.append(threading.Thread(target=reap, args=(i, proc, started)))
            threads[-1].start()
        for thread in threads:
            thread.join()
        out = []
        for i, (proc, result) in enumerate(zip(procs, results, strict=True)):
            if proc.returncode != 0 or result is None:
                error = (self.logs / f"{tag}-{i}.err").read_text()[-2000:]
                raise RuntimeError(
                    f"{tag} task {i}: mrworker {' '.join(commands[i])} exited {proc.returncode}\n{error}"
                )
            out.append((*result, json.loads((self.logs / f"{tag}-{i}.json").read_text())))
        return out


def task_command(app: str, spec: AppSpec, size: float, index: int, parts: int, output: str) -> list[str]:
    command = [
        "map",
        "--app",
        app,
        "--index",
        str(index),
        "--maps",
        str(parts),
        "--reduces",
        str(spec.reduces),
    ]
    command += ["--output", output, *spec.extra]
    if spec.source:
        command += ["--split", f"{spec.source}/part-m-{index:05d}:0:{int(size * MB)}"]
    elif app == "pi":
        command += ["--samples", str(int(size))]
    else:
        command += ["--bytes-per-map", str(int(size * MB))]
    return command


def generate(harness: Harness, sizes: dict[str, float], parts: int) -> None:
    """Each input kind once, ``parts`` parts of the largest size any application reads from it."""
    for source, mb in sizes.items():
        app, amount = GENERATORS[source], int(mb * MB)
        size = ["--rows", str(amount // 100)] if app == "teragen" else ["--bytes-per-map", str(amount)]
        common = ["--app", app, "--maps", str(parts), "--reduces", "0", "--output", source, *size]
        batch = os.cpu_count() or 1
        for first in range(0, parts, batch):
            last = min(parts, first + batch)
            harness.run_together(
                [["map", "--index", str(i), *common] for i in range(first, last)], f"gen-{source}-{first}"
            )
        # A map-only job's parts reach its output directory when the job commits (workers/mrworker/committer.py).
        harness.run_together([["commit-job", *common]], f"gen-{source}-commit")
        print(f"generated {source}: {parts} x {mb:g} MB ({app})", flush=True)


def measure(harness: Harness, app: str, commands: list[list[str]], repeat: int, output: str) -> list[TaskRun]:
    """``commands`` (one per task) started together; their output directory removed afterwards."""
    k = len(commands)
    runs = []
    for i, (wall, cpu, report) in enumerate(harness.run_together(commands, f"{app}-k{k}-r{repeat}")):
        runs.append(
            TaskRun(
                app=app,
                concurrency=k,
                repeat=repeat,
                index=i,
                wall_s=round(wall, 4),
                cpu_s=round(cpu, 4),
                report_wall_s=report["wallS"],
                cpu_user_s=report["cpuUserS"],
                cpu_system_s=report["cpuSystemS"],
                read_bytes=report["readBytes"],
                written_bytes=report["writtenBytes"],
                peak_memory_bytes=report["peakMemoryBytes"],
            )
        )
    shutil.rmtree(harness.data / output, ignore_errors=True)
    os.sync()  # the next run starts with no dirty pages of this one to write back
    walls = [r.wall_s for r in runs]
    print(
        f"{app:<12} k={k} repeat {repeat}: wall {statistics.fmean(walls):.2f} s "
        f"({min(walls):.2f}-{max(walls):.2f}), CPU {statistics.fmean(r.cpu_s for r in runs):.2f} s",
        flush=True,
    )
    return runs


def points(runs: list[TaskRun]) -> dict[int, dict[str, float]]:
    """Per concurrency: the tasks' mean, min and max wall time, mean CPU and bytes."""
    out = {}
    for k in sorted({r.concurrency for r in runs}):
        at = [r for r in runs if r.concurrency == k]
        walls = [r.wall_s for r in at]
        cpu = statistics.fmean(r.cpu_s for r in at)
        out[k] = {
            "tasks": len(at),
            "measured_mean_s": statistics.fmean(walls),
            "measured_min_s": min(walls),
            "measured_max_s": max(walls),
            "cpu_mean_s": cpu,
            "cpu_per_wall": cpu / statistics.fmean(walls),
            "read_mb": statistics.fmean(r.read_bytes for r in at) / MB,
            "written_mb": statistics.fmean(r.written_bytes for r in at) / MB,
        }
    return out


def machine() -> dict[str, Any]:
    model = "unknown"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "memory_mb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
    }
