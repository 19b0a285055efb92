"""How the emulator runs a pod's task: against the hidden physics model, or as a real local process.

Both runners have the same shape: ``start`` a pod's task on a node, ``kill`` it, ``poll`` for the tasks that
ended, say when the next one is due (``next_deadline``) and report the node's usage for its metrics.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from mrsched.core.physics import Fault, NodeCapability, NodeModel
from mrsched.core.report import TaskReport
from mrsched.emulator.podstatus import log_fallback
from mrsched.emulator.workload import WorkloadError, container_env, demand_from_env

#: Environment variable through which a process-mode task learns where to write its termination message
#: (in a real pod the path is the container's terminationMessagePath, a file the kubelet mounts).
TERMINATION_LOG_ENV = "MRSCHED_TERMINATION_LOG"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TaskExit:
    """A task that ended: what the kubelet would write into the container's terminated state."""

    pod_key: str
    exit_code: int
    message: str = ""
    reason: str | None = None  # None: the kubelet's default (Completed or Error)
    started_wall: float = 0.0
    finished_wall: float = 0.0


@dataclass
class NodeUsage:
    """Cumulative counters for one node in wall-clock seconds and bytes, as node_exporter reports them."""

    cpu_busy_s: float = 0.0
    cpu_iowait_s: float = 0.0
    disk_read_bytes: float = 0.0
    disk_written_bytes: float = 0.0
    network_receive_bytes: float = 0.0
    network_transmit_bytes: float = 0.0
    runnable: float = 0.0  # threads running or waiting now (what the load average averages)
    memory_used_bytes: float = 0.0


class TaskRunner(Protocol):
    def start(
        self,
        pod_key: str,
        node: str,
        pod: dict[str, Any],
        *,
        shuffle_from: Mapping[str, float] | None = None,
        waited_s: float = 0.0,
    ) -> None:
        """Start the pod's task; a reduce that waited ``waited_s`` wall seconds for its job's maps fetches its
        shuffle from ``shuffle_from`` (map output by node; model mode only)."""
        ...

    def kill(self, pod_key: str) -> None: ...
    def poll(self) -> list[TaskExit]: ...
    def next_deadline(self) -> float: ...
    def usage(self, node: str) -> NodeUsage: ...
    def remove_node(self, node: str) -> list[str]: ...
    def close(self) -> None: ...


class ModelRunner:
    """Model mode: task durations from the per-node physics (``mrsched.core.physics``), never from the pod.

    ``time_scale`` model seconds pass per wall second, so a 60 s task with time_scale 10 takes 6 s of wall
    time; usage counters are reported in wall time so that rates read from Prometheus stay consistent.
    """

    def __init__(
        self,
        capabilities: dict[str, NodeCapability],
        *,
        seed: int = 0,
        time_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self._clock = clock
        self._origin = clock()
        self.time_scale = time_scale
        self._models = {name: NodeModel(name, cap, seed=seed) for name, cap in capabilities.items()}
        self._node_of: dict[str, str] = {}  # pod key -> node, for modelled tasks
        self._forever: dict[str, str] = {}  # pod key -> node, for pods without finite work
        self._immediate: list[TaskExit] = []
        self._started_wall: dict[str, float] = {}
        self._waited: dict[str, float] = {}  # pod key -> wall seconds a reduce waited for its maps
        self._lock = threading.Lock()

    def model_now(self) -> float:
        return (self._clock() - self._origin) * self.time_scale

    def _wall(self, model_s: float) -> float:
        return self._origin + model_s / self.time_scale

    def start(
        self,
        pod_key: str,
        node: str,
        pod: dict[str, Any],
        *,
        shuffle_from: Mapping[str, float] | None = None,
        waited_s: float = 0.0,
    ) -> None:
        with self._lock:
            now_wall = self._clock()
            self._started_wall[pod_key] = now_wall
            if waited_s > 0:
                self._waited[pod_key] = waited_s
            try:
                demand = demand_from_env(container_env(pod), node, shuffle_from)
            except WorkloadError as err:
                report = TaskReport("failed", error=str(err))
                self._immediate.append(TaskExit(pod_key, 2, report.to_json(), None, now_wall, now_wall))
                return
            if demand is None:
                self._forever[pod_key] = node
                return
            self._node_of[pod_key] = node
            self._models[node].start(pod_key, demand, self.model_now())

    def kill(self, pod_key: str) -> None:
        with self._lock:
            self._forever.pop(pod_key, None)
            self._started_wall.pop(pod_key, None)
            self._waited.pop(pod_key, None)
            node = self._node_of.pop(pod_key, None)
            if node is not None:
                self._models[node].stop(pod_key, self.model_now())

    def poll(self) -> list[TaskExit]:
        with self._lock:
            exits, self._immediate = self._immediate, []
            now = self.model_now()
            for model in self._models.values():
                model.advance(now)
                for outcome in model.pop_finished():
                    if self._node_of.pop(outcome.task_id, None) is None:
                        continue  # killed meanwhile
                    usage = outcome.usage
                    # The worker's clock runs from its start, so a reduce's includes its wait for the maps.
                    waited = self._waited.pop(outcome.task_id, 0.0) * self.time_scale
                    report = TaskReport(
                        "failed" if outcome.oom_killed else "succeeded",
                        cpu_user_s=usage.cpu_s * 0.9,
                        cpu_system_s=usage.cpu_s * 0.1,
                        read_bytes=usage.read_bytes,
                        written_bytes=usage.written_bytes,
                        network_bytes=usage.network_bytes,
                        peak_memory_bytes=int(usage.peak_memory_mb * 1e6),
                        wall_s=outcome.duration_s + waited,
                        error="killed: out of memory" if outcome.oom_killed else "",
                    )
                    exits.append(
                        TaskExit(
                            outcome.task_id,
                            137 if outcome.oom_killed else 0,
                            report.to_json(),
                            "OOMKilled" if outcome.oom_killed else None,
                            self._started_wall.pop(outcome.task_id, self._wall(outcome.started_s)),
                            self._wall(outcome.finished_s),
                        )
                    )
            return exits

    def next_deadline(self) -> float:
        with self._lock:
            if self._immediate:
                return self._clock()
            soonest = min((m.next_event_s() for m in self._models.values()), default=math.inf)
            return self._wall(soonest) if soonest < math.inf else math.inf

    def add_fault(self, node: str, fault: Fault) -> None:
        """Inject a fault; ``fault.start_s`` and ``end_s`` are model seconds from now."""
        with self._lock:
            now = self.model_now()
            model = self._models[node]
            model.advance(now)
            end = None if fault.end_s is None else now + fault.end_s
            model.add_fault(replace(fault, start_s=now + fault.start_s, end_s=end))

    def clear_faults(self, node: str) -> None:
        with self._lock:
            self._models[node].clear_faults(self.model_now())

    def faults(self, node: str) -> list[Fault]:
        with self._lock:
            return list(self._models[node].faults)

    def usage(self, node: str) -> NodeUsage:
        with self._lock:
            model = self._models[node]
            model.advance(self.model_now())
            c = model.counters
            scale = self.time_scale
            return NodeUsage(
                cpu_busy_s=c.cpu_busy_s / scale,
                cpu_iowait_s=c.cpu_iowait_s / scale,
                disk_read_bytes=c.disk_read_bytes,
                disk_written_bytes=c.disk_written_bytes,
                network_receive_bytes=c.network_receive_bytes,
                network_transmit_bytes=c.network_transmit_bytes,
                runnable=model.runnable(),
                memory_used_bytes=model.memory_used_mb() * 1e6,
            )

    def remove_node(self, node: str) -> list[str]:
        with self._lock:
            gone = [k for k, n in {**self._node_of, **self._forever}.items() if n == node]
            for key in gone:
                self._node_of.pop(key, None)
                self._forever.pop(key, None)
                self._started_wall.pop(key, None)
                self._waited.pop(key, None)
            now = self.model_now()
            for key in self._models[node].running_ids:
                self._models[node].stop(key, now)
            return gone

    def close(self) -> None:
        pass


@dataclass
class _Proc:
    pod_key: str
    node: str
    popen: subprocess.Popen[bytes]
    workdir: Path
    termination_log: Path
    log_path: Path
    fallback_to_logs: bool
    started_wall: float
    killed: bool = False


@dataclass
class _Finished:
    cpu_s: float = 0.0
    read_bytes: float = 0.0
    written_bytes: float = 0.0


@dataclass
class _Rewrite:
    """Container paths (volume mounts, the termination message path) mapped to local directories."""

    pairs: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, value: str) -> str:
        for container_path, local in self.pairs:
            if value == container_path or value.startswith(container_path.rstrip("/") + "/"):
                return local + value[len(container_path.rstrip("/")) :]
        return value


class ProcessRunner:
    """Process mode: the pod's container command runs as a real local process.

    The process gets the pod's literal environment (and downward-API fields), runs in a per-pod directory,
    and sees each volume mount as ``<data_dir>/<volume name>``: arguments and environment values that start
    with a mount path are rewritten to the local directory. Its termination message is read from the file
    named by ``$MRSCHED_TERMINATION_LOG`` (the container's terminationMessagePath is rewritten there too);
    with ``terminationMessagePolicy: FallbackToLogsOnError`` a failed task with no message gets its log's tail.
    """

    def __init__(
        self,
        data_dir: Path,
        run_dir: Path,
        *,
        wake: Callable[[], None] = lambda: None,
        kill_grace_s: float = 5.0,
    ) -> None:
        self.data_dir = data_dir
        self.run_dir = run_dir
        self._wake = wake
        self._kill_grace_s = kill_grace_s
        self._procs: dict[str, _Proc] = {}
        self._exits: queue.Queue[tuple[_Proc, int, Any]] = queue.Queue()
        self._finished: dict[str, _Finished] = {}
        self._immediate: list[TaskExit] = []
        self._lock = threading.Lock()
        data_dir.mkdir(parents=True, exist_ok=True)
        run_dir.mkdir(parents=True, exist_ok=True)

    def _paths(self, pod: dict[str, Any], container: dict[str, Any], pod_dir: Path) -> _Rewrite:
        rewrite = _Rewrite()
        for mount in container.get("volumeMounts") or []:
            local = self.data_dir / mount["name"]
            if mount.get("subPath"):
                local = local / mount["subPath"]
            local.mkdir(parents=True, exist_ok=True)
            rewrite.pairs.append((mount["mountPath"], str(local)))
        rewrite.pairs.append(
            (
                container.get("terminationMessagePath") or "/dev/termination-log",
                str(pod_dir / "termination-log"),
            )
        )
        # Longest mount path first, so that nested mounts win over their parents.
        rewrite.pairs.sort(key=lambda pair: -len(pair[0]))
        return rewrite

    def start(
        self,
        pod_key: str,
        node: str,
        pod: dict[str, Any],
        *,
        shuffle_from: Mapping[str, float] | None = None,
        waited_s: float = 0.0,
    ) -> None:
        """The process waits for its maps itself (the worker's MRSCHED_WAIT_FOR_MAPS): no shuffle model here."""
        container = pod["spec"]["containers"][0]
        now = time.monotonic()
        argv = list(container.get("command") or []) + list(container.get("args") or [])
        if not argv:
            self._fail_now(
                pod_key,
                now,
                "process mode needs the container's command: the emulator has no "
                "image entrypoint to fall back on",
            )
            return
        pod_dir = self.run_dir / pod["metadata"]["uid"]
        pod_dir.mkdir(parents=True, exist_ok=True)
        rewrite = self._paths(pod, container, pod_dir)
        env = {k: rewrite(v) for k, v in container_env(pod).items()}
        termination_log = pod_dir / "termination-log"
        termination_log.write_bytes(b"")
        base_env = {
            k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "TMPDIR")
        }
        env = {
            **base_env,
            **env,
            TERMINATION_LOG_ENV: str(termination_log),
            "HOSTNAME": pod["metadata"]["name"],
        }
        workdir = Path(rewrite(container["workingDir"])) if container.get("workingDir") else pod_dir
        log_path = pod_dir / "container.log"
        try:
            with open(log_path, "wb") as log:
                popen = subprocess.Popen(
                    [rewrite(a) for a in argv],
                    env=env,
                    cwd=workdir,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
        except OSError as err:
            self._fail_now(
                pod_key, now, f"cannot start {argv[0]!r}: {err.strerror}", code=127, reason="StartError"
            )
            return
        proc = _Proc(
            pod_key,
            node,
            popen,
            workdir,
            termination_log,
            log_path,
            container.get("terminationMessagePolicy") == "FallbackToLogsOnError",
            now,
        )
        with self._lock:
            self._procs[pod_key] = proc
        threading.Thread(target=self._wait, args=(proc,), daemon=True, name=f"wait-{pod_key}").start()

    def _fail_now(
        self, pod_key: str, now: float, error: str, *, code: int = 128, reason: str = "ContainerCannotRun"
    ) -> None:
        with self._lock:
            self._immediate.append(TaskExit(pod_key, code, error, reason, now, now))
        self._wake()

    def _wait(self, proc: _Proc) -> None:
        _, status, rusage = os.wait4(proc.popen.pid, 0)
        proc.popen.returncode = os.waitstatus_to_exitcode(status)
        self._exits.put((proc, proc.popen.returncode, rusage))
        self._wake()

    def poll(self) -> list[TaskExit]:
        with self._lock:
            exits, self._immediate = self._immediate, []
        while True:
            try:
                proc, code, rusage = self._exits.get_nowait()
            except queue.Empty:
                return exits
            with self._lock:
                self._procs.pop(proc.pod_key, None)
                done = self._finished.setdefault(proc.node, _Finished())
                done.cpu_s += rusage.ru_utime + rusage.ru_stime
                done.read_bytes += rusage.ru_inblock * 512
                done.written_bytes += rusage.ru_oublock * 512
            if proc.killed:
                continue
            exit_code = code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a runtime reports
            message = (
                proc.termination_log.read_text(errors="replace") if proc.termination_log.exists() else ""
            )
            if not message and exit_code != 0 and proc.fallback_to_logs:
                with open(proc.log_path, "rb") as log:
                    log.seek(max(0, proc.log_path.stat().st_size - 16384))
                    message = log_fallback(log.read())
            exits.append(
                TaskExit(proc.pod_key, exit_code, message, None, proc.started_wall, time.monotonic())
            )

    def kill(self, pod_key: str) -> None:
        with self._lock:
            proc = self._procs.get(pod_key)
            if proc is None:
                return
            proc.killed = True
        _signal_group(proc.popen, signal.SIGTERM)
        escalate = threading.Timer(self._kill_grace_s, _signal_group, args=(proc.popen, signal.SIGKILL))
        escalate.daemon = True  # never keeps the emulator from exiting; close() kills what is left anyway
        escalate.start()

    def next_deadline(self) -> float:
        return time.monotonic() if self._immediate else math.inf

    def usage(self, node: str) -> NodeUsage:
        with self._lock:
            done = self._finished.get(node, _Finished())
            live = [p for p in self._procs.values() if p.node == node]
        cpu, read, written, runnable, rss = done.cpu_s, done.read_bytes, done.written_bytes, 0.0, 0.0
        for proc in live:
            stat = _proc_stat(proc.popen.pid)
            if stat is None:
                continue
            cpu += stat["cpu_s"]
            read += stat["read_bytes"]
            written += stat["written_bytes"]
            rss += stat["rss_bytes"]
            runnable += 1.0 if stat["state"] in ("R", "D") else 0.0
        return NodeUsage(
            cpu_busy_s=cpu,
            disk_read_bytes=read,
            disk_written_bytes=written,
            runnable=runnable,
            memory_used_bytes=rss,
        )

    def remove_node(self, node: str) -> list[str]:
        with self._lock:
            gone = [k for k, p in self._procs.items() if p.node == node]
        for key in gone:
            self.kill(key)
        return gone

    def close(self) -> None:
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            proc.killed = True
            _signal_group(proc.popen, signal.SIGKILL)


def _signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    if popen.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)


def _proc_stat(pid: int) -> dict[str, Any] | None:
    """CPU seconds, I/O bytes, resident memory and scheduler state of a live process, from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        fields = raw[raw.rindex(")") + 2 :].split()
        io: dict[str, int] = {}
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            key, _, value = line.partition(":")
            io[key] = int(value)
    except (OSError, ValueError):
        return None
    return {
        "state": fields[0],
        "cpu_s": (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS,
        "rss_bytes": int(fields[21]) * os.sysconf("SC_PAGE_SIZE"),
        "read_bytes": io.get("read_bytes", 0),
        "written_bytes": io.get("write_bytes", 0),
    }
