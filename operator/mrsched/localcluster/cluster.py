"""The whole local cluster: control plane, Prometheus and node emulators, as one object with a state file.

``LocalCluster.up`` starts everything and records it in ``<workdir>/state.json`` so that another process (the
``mrsched cluster`` CLI, or a test run that was interrupted) can find, inspect and tear it down. Every server
binds to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mrsched.core.catalog import ClusterLayout, load_cluster_layout
from mrsched.emulator.client import EmulatorClient
from mrsched.localcluster.controlplane import ControlPlane, start_control_plane, stop_control_plane
from mrsched.localcluster.ports import free_port
from mrsched.localcluster.processes import alive, terminate
from mrsched.localcluster.prometheus import (
    EMULATOR_JOB,
    SCRAPE_INTERVAL,
    PrometheusServer,
    start_prometheus,
    stop_prometheus,
)
from mrsched.localcluster.toolchain import Toolchain, cache_dir


def default_state_dir() -> Path:
    return Path(os.environ.get("MRSCHED_STATE_DIR", cache_dir() / "clusters"))


@dataclass
class EmulatorHandle:
    """A running node-emulator process and the way to reach it."""

    emulator_id: str
    pid: int
    url: str
    mode: str
    nodes: list[str]
    workdir: Path

    @property
    def client(self) -> EmulatorClient:
        return EmulatorClient(self.url)

    def to_json(self) -> dict[str, Any]:
        return {
            "emulator_id": self.emulator_id,
            "pid": self.pid,
            "url": self.url,
            "mode": self.mode,
            "nodes": self.nodes,
            "workdir": str(self.workdir),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EmulatorHandle:
        return cls(
            data["emulator_id"],
            int(data["pid"]),
            data["url"],
            data["mode"],
            list(data["nodes"]),
            Path(data["workdir"]),
        )


@dataclass
class LocalCluster:
    name: str
    workdir: Path
    plane: ControlPlane
    prometheus: PrometheusServer
    emulators: dict[str, EmulatorHandle] = field(default_factory=dict)
    owner_pid: int = field(default_factory=os.getpid)

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    # --- lifecycle --------------------------------------------------------------------------------------------

    @classmethod
    def up(
        cls,
        name: str,
        *,
        state_dir: Path | None = None,
        tool: Toolchain | None = None,
        node_grace_s: float = 20.0,
        persistent: bool = False,
        scrape_interval: str = SCRAPE_INTERVAL,
    ) -> LocalCluster:
        """Start a control plane and Prometheus under ``<state_dir>/<name>``; add nodes with :meth:`emulate`.
        Prometheus scrapes the emulated nodes' exporters every ``scrape_interval`` (a Prometheus duration).

        A ``persistent`` cluster (the CLI's) outlives this process; any other is torn down by
        :func:`reap_abandoned` once the process that started it is gone."""
        tool = tool or Toolchain.locate()
        workdir = (state_dir or default_state_dir()) / name
        if (workdir / "state.json").exists():
            raise FileExistsError(f"cluster {name!r} already exists ({workdir}); take it down first")
        workdir.mkdir(parents=True, exist_ok=True)
        plane = start_control_plane(tool, name, workdir, node_grace_s=node_grace_s)
        try:
            prometheus = start_prometheus(
                tool, workdir / "prometheus", free_port(), scrape_interval=scrape_interval
            )
        except BaseException:
            stop_control_plane(tool, plane)
            raise
        cluster = cls(name, workdir, plane, prometheus, owner_pid=0 if persistent else os.getpid())
        cluster.save()
        return cluster

    def emulate(
        self,
        layout: ClusterLayout | Path | str | None = None,
        *,
        mode: str = "model",
        emulator_id: str | None = None,
        name_prefix: str = "",
        time_scale: float = 1.0,
        seed: int = 0,
        data_dir: Path | None = None,
        heartbeat_interval_s: float = 5.0,
        timeout_s: float = 60.0,
    ) -> EmulatorHandle:
        """Start a node-emulator process for ``layout`` (a cluster file or object; default: the packaged
        heterogeneous cluster), registered with Prometheus as a scrape target."""
        emulator_id = emulator_id or f"emu-{uuid.uuid4().hex[:6]}"
        workdir = self.workdir / "emulators" / emulator_id
        workdir.mkdir(parents=True, exist_ok=True)
        if not isinstance(layout, ClusterLayout):
            layout = load_cluster_layout(layout)
        layout_file = workdir / "cluster.yaml"
        layout_file.write_text(yaml.safe_dump(layout.model_dump(by_alias=True, exclude_none=True)))
        ready_file = workdir / "ready.json"
        command = [
            sys.executable,
            "-m",
            "mrsched",
            "emulator",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--cluster-file",
            str(layout_file),
            "--mode",
            mode,
            "--id",
            emulator_id,
            "--name-prefix",
            name_prefix,
            "--time-scale",
            str(time_scale),
            "--seed",
            str(seed),
            "--data-dir",
            str(data_dir or workdir / "data"),
            "--run-dir",
            str(workdir / "run"),
            "--heartbeat-interval",
            str(heartbeat_interval_s),
            "--ready-file",
            str(ready_file),
        ]
        with open(workdir / "emulator.log", "ab") as log:
            proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while not ready_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    terminate([proc.pid])
                tail = (workdir / "emulator.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"node emulator {emulator_id} did not start:\n{tail}")
            time.sleep(0.05)
        ready = json.loads(ready_file.read_text())
        handle = EmulatorHandle(
            emulator_id, proc.pid, f"http://127.0.0.1:{ready['port']}", mode, ready["nodes"], workdir
        )
        self.prometheus.add_target(emulator_id, f"127.0.0.1:{ready['port']}", {"emulator": emulator_id})
        self.emulators[emulator_id] = handle
        self.save()
        return handle

    def stop_emulator(self, emulator_id: str) -> None:
        """Stop an emulator; it deletes its pods and Nodes on the way out."""
        handle = self.emulators.pop(emulator_id)
        self.prometheus.remove_target(emulator_id)
        if alive(handle.pid):
            terminate([handle.pid], timeout_s=30)
        self.save()

    def down(self, tool: Toolchain | None = None) -> None:
        """Stop everything this cluster started and remove its directory."""
        errors: list[str] = []
        for emulator_id in list(self.emulators):
            try:
                self.stop_emulator(emulator_id)
            except Exception as err:
                errors.append(f"emulator {emulator_id}: {err}")
        try:
            stop_prometheus(self.prometheus)
        except Exception as err:
            errors.append(f"prometheus: {err}")
        try:
            stop_control_plane(tool or Toolchain.locate(), self.plane)
        except Exception as err:
            errors.append(f"control plane: {err}")
        if errors:
            raise RuntimeError("teardown left things behind: " + "; ".join(errors))
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- state file -------------------------------------------------------------------------------------------

    def save(self) -> None:
        state = {
            "name": self.name,
            "workdir": str(self.workdir),
            "owner_pid": self.owner_pid,
            "plane": self.plane.to_json(),
            "prometheus": self.prometheus.to_json(),
            "emulators": {k: v.to_json() for k, v in self.emulators.items()},
        }
        tmp = self.workdir / "state.json.tmp"
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.workdir / "state.json")

    @classmethod
    def load(cls, name: str, state_dir: Path | None = None) -> LocalCluster:
        path = (state_dir or default_state_dir()) / name / "state.json"
        if not path.exists():
            raise FileNotFoundError(f"no local cluster {name!r} (looked for {path})")
        state = json.loads(path.read_text())
        return cls(
            state["name"],
            Path(state["workdir"]),
            ControlPlane.from_json(state["plane"]),
            PrometheusServer.from_json(state["prometheus"]),
            {k: EmulatorHandle.from_json(v) for k, v in state["emulators"].items()},
            int(state["owner_pid"]),
        )

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kubeconfig": str(self.kubeconfig),
            "server": self.plane.server,
            "prometheus": self.prometheus.url,
            "controlPlaneProcesses": {str(pid): alive(pid) for pid in self.plane.pids()},
            "prometheusAlive": alive(self.prometheus.pid),
            "emulators": {
                k: {"url": v.url, "mode": v.mode, "alive": alive(v.pid), "nodes": v.nodes}
                for k, v in self.emulators.items()
            },
            "scrapeJob": EMULATOR_JOB,
        }


def reap_abandoned(state_dir: Path | None = None) -> list[str]:
    """Tear down clusters whose owning process died without cleaning up (a killed test run)."""
    root = state_dir or default_state_dir()
    reaped = []
    for state_file in sorted(root.glob("*/state.json")) if root.exists() else []:
        try:
            cluster = LocalCluster.load(state_file.parent.name, root)
        except (OSError, ValueError, KeyError):
            continue
        if cluster.owner_pid and not alive(cluster.owner_pid):
            cluster.down()
            reaped.append(cluster.name)
    return reaped
