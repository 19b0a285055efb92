"""Process mode: a pod's container command runs as a real local process (see :class:`ProcessRunner`)."""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from mrsched.emulator.localimages import local_command
from mrsched.emulator.podcredentials import PodCredentials, token_volumes
from mrsched.emulator.podstatus import log_fallback
from mrsched.emulator.runners import NodeUsage, TaskExit
from mrsched.emulator.workload import container_env

#: Environment variable through which a process-mode task learns where to write its termination message
#: (in a real pod the path is the container's terminationMessagePath, a file the kubelet mounts).
TERMINATION_LOG_ENV = "MRSCHED_TERMINATION_LOG"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Where a pod's processes find its ServiceAccount's token and CA (the in-cluster config's fixed path).
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


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
    #: The ServiceAccount token mounts: container path -> local directory.
    tokens: dict[str, str] = field(default_factory=dict)

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
        credentials: PodCredentials | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.credentials = credentials
        self._mounted: dict[str, str] = {}  # pod key -> the uid of the pod whose volumes mount() filled
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

    def mount(self, pod_key: str, pod: dict[str, Any]) -> str | None:
        """Fill the pod's ServiceAccount token volumes (``kube-api-access-*``) as a kubelet does. A ConfigMap
        they project that is not there yet (``kube-root-ca.crt`` in a namespace seconds old) or a token the API
        refuses leaves the pod waiting, in the words of the kubelet's FailedMount event."""
        if self.credentials is None:
            return None
        pod_dir = self.run_dir / pod["metadata"]["uid"]
        for name, volume in token_volumes(pod).items():
            try:
                self.credentials.fill(pod, volume, pod_dir / "volumes" / name)
            except (ApiException, KeyError) as err:
                why = err.reason if isinstance(err, ApiException) else f"no key {err}"
                return f'MountVolume.SetUp failed for volume "{name}" : {why}'
        self._mounted[pod_key] = pod["metadata"]["uid"]
        return None

    def _paths(self, pod: dict[str, Any], container: dict[str, Any], pod_dir: Path) -> _Rewrite:
        rewrite = _Rewrite()
        tokens = token_volumes(pod) if self.credentials is not None else {}
        for mount in container.get("volumeMounts") or []:
            if mount["name"] in tokens:  # the pod's own, filled by mount()
                local = pod_dir / "volumes" / mount["name"]
                rewrite.tokens[mount["mountPath"]] = str(local)
            else:
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
        address: str = "",
    ) -> None:
        """The process waits for its maps itself (the worker's MRSCHED_WAIT_FOR_MAPS): no shuffle model here. A
        wildcard bind address it is given becomes the pod's own (``address``, a loopback address): pods here share
        this machine's ports, and two replicas of a server (or a rolling upgrade's surge pod) would collide on
        0.0.0.0, where in a cluster each binds its own network namespace."""
        container = pod["spec"]["containers"][0]
        now = time.monotonic()
        program, args = local_command(container)
        if not program and not args:
            self._fail_now(
                pod_key,
                now,
                "process mode needs the container's command: the emulator has no "
                "image entrypoint to fall back on",
            )
            return
        pod_dir = self.run_dir / pod["metadata"]["uid"]
        pod_dir.mkdir(parents=True, exist_ok=True)
        mounted = self._mounted.pop(pod_key, None) == pod["metadata"]["uid"]
        if not mounted and (why := self.mount(pod_key, pod)) is not None:
            self._fail_now(pod_key, now, why)  # only a caller that skipped mount() gets here
            return
        self._mounted.pop(pod_key, None)
        rewrite = self._paths(pod, container, pod_dir)
        address = address or "127.0.0.1"
        env = {k: address if v == "0.0.0.0" else rewrite(v) for k, v in container_env(pod).items()}
        # The container's arguments name container paths; the program (and what wraps it) are this machine's.
        argv = [*program, *(rewrite(a) for a in args)]
        in_cluster = rewrite.tokens.get(SERVICE_ACCOUNT_MOUNT)
        if in_cluster is not None and self.credentials is not None:
            env.update(self.credentials.environment())
            if argv[:2] == [sys.executable, "-m"]:
                # One of our images' programs: its in-cluster config read from the pod's token volume.
                argv = [sys.executable, "-m", "mrsched.emulator.incluster", in_cluster, *argv[2:]]
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
                    argv,
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
        """The pod is gone: stop its process (SIGTERM, SIGKILL after the runner's grace) and report nothing."""
        self._mounted.pop(pod_key, None)
        with self._lock:
            proc = self._procs.get(pod_key)
            if proc is None:
                return
            proc.killed = True
        _stop(proc.popen, self._kill_grace_s)

    def terminate(self, pod_key: str, grace_s: float) -> bool:
        """The kubelet kills the container of a pod that stays (activeDeadlineSeconds): SIGTERM, SIGKILL after
        the pod's ``grace_s``; the exit is reported as the runtime sees it (143 if the process ended on
        SIGTERM, 137 if it had to be killed) with whatever termination message it left."""
        with self._lock:
            proc = self._procs.get(pod_key)
            if proc is None or proc.killed:
                return False
        _stop(proc.popen, grace_s)
        return True

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


def _stop(popen: subprocess.Popen[bytes], grace_s: float) -> None:
    _signal_group(popen, signal.SIGTERM)
    escalate = threading.Timer(grace_s, _signal_group, args=(popen, signal.SIGKILL))
    escalate.daemon = True  # never keeps the emulator from exiting; close() kills what is left anyway
    escalate.start()


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
