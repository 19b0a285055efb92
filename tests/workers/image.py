"""Run the worker exactly as its container image does, as a local process.

No image can be built here, so the Dockerfile is read instead: its ENTRYPOINT is the command (``python`` is
this interpreter, the image's Python version), its ENV the environment, its WORKDIR the working directory,
with the image's paths mapped to local ones (``/opt/mrworker`` to ``workers/``, ``/data`` to the test's data
volume). The termination message goes where ``$MRSCHED_TERMINATION_LOG`` says, as in the emulator.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKERS = Path(__file__).resolve().parents[2] / "workers"
DOCKERFILE = WORKERS / "Dockerfile"


@dataclass(frozen=True)
class ImageSpec:
    entrypoint: list[str]
    env: dict[str, str]
    user: str
    workdir: str
    copies: dict[str, str] = field(default_factory=dict)  # image path -> path under workers/


def image_spec(dockerfile: Path = DOCKERFILE) -> ImageSpec:
    text = dockerfile.read_text().replace("\\\n", " ")
    entrypoint: list[str] = []
    env: dict[str, str] = {}
    copies: dict[str, str] = {}
    user = workdir = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        match instruction.upper():
            case "ENTRYPOINT":
                entrypoint = json.loads(rest)
            case "ENV":
                env.update(pair.split("=", 1) for pair in shlex.split(rest))  # type: ignore[arg-type]
            case "USER":
                user = rest.strip()
            case "WORKDIR":
                workdir = rest.strip()
            case "COPY":
                source, target = rest.split()
                copies[target] = source
    return ImageSpec(entrypoint, env, user, workdir, copies)


@dataclass
class Result:
    code: int
    report: dict[str, Any]
    stdout: str
    stderr: str


class Worker:
    """The worker image's entrypoint run locally over ``data`` as its data volume."""

    def __init__(self, data: Path, scratch: Path, *, workers: Path = WORKERS) -> None:
        self.workers = workers
        self.data = data
        self.scratch = scratch
        self.spec = image_spec()
        self._runs = 0
        data.mkdir(parents=True, exist_ok=True)
        scratch.mkdir(parents=True, exist_ok=True)

    def _map_path(self, value: str) -> str:
        for image_path, source in self.spec.copies.items():
            parent = str(Path(image_path).parent)  # COPY mrworker /opt/mrworker/mrworker
            if value == parent:
                return str((self.workers / source).parent)
        if value == "/data" or value.startswith("/data/"):
            return str(self.data) + value[len("/data") :]
        return value

    def _prepare(
        self, args: Sequence[str], env: dict[str, str] | None
    ) -> tuple[list[str], dict[str, str], Path]:
        self._runs += 1
        log = self.scratch / f"termination-log-{self._runs}"
        command = [sys.executable if a == "python" else a for a in self.spec.entrypoint] + list(args)
        environment = {k: self._map_path(v) for k, v in self.spec.env.items()}
        environment |= {"PATH": os.environ.get("PATH", ""), "MRSCHED_TERMINATION_LOG": str(log)}
        environment |= env or {}
        return command, environment, log

    def run(self, *args: str, env: dict[str, str] | None = None, expect: int | None = 0) -> Result:
        command, environment, log = self._prepare(args, env)
        proc = subprocess.run(
            command,
            env=environment,
            cwd=self._map_path(self.spec.workdir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        report = json.loads(log.read_text()) if log.exists() and log.read_text() else {}
        result = Result(proc.returncode, report, proc.stdout, proc.stderr)
        if expect is not None:
            assert proc.returncode == expect, f"exit {proc.returncode}, stderr:\n{proc.stderr}"
        return result

    def start(self, *args: str) -> tuple[subprocess.Popen[str], Path]:
        command, environment, log = self._prepare(args, None)
        proc = subprocess.Popen(
            command,
            env=environment,
            cwd=self._map_path(self.spec.workdir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return proc, log

    def job(
        self,
        app: str,
        *,
        maps: int,
        reduces: int,
        output: str,
        args: Sequence[str] = (),
    ) -> list[Result]:
        """Every map, then every reduce, then commit-job, one after another; the results in that order."""
        common = ["--app", app, "--maps", str(maps), "--reduces", str(reduces), "--output", output, *args]
        results = [self.run("map", "--index", str(i), *common) for i in range(maps)]
        results += [self.run("reduce", "--index", str(r), *common) for r in range(reduces)]
        results.append(self.run("commit-job", *common))
        return results


def kill_when(
    proc: subprocess.Popen[str], ready: Any, timeout: float = 60.0, sig: int = signal.SIGKILL
) -> None:
    """Send ``sig`` to ``proc`` as soon as ``ready()`` holds (polling), failing if it exits first."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the worker finished before it could be killed: {proc.communicate()}"
        assert time.monotonic() < deadline, "the worker never reached the point to kill it at"
        time.sleep(0.002)
    proc.send_signal(sig)
    proc.wait(timeout=30)
