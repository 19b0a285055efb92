"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok's
controller for kwok-managed nodes), started and stopped by kwokctl's binary runtime with local binaries.

kwokctl generates the certificates and supervises the processes; this module only picks free loopback ports,
writes kwokctl's configuration, waits for ``/readyz`` and for the controller manager to be serving, and makes
sure teardown leaves no process, port or directory behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from mrsched.localcluster.ports import free_port, is_listening
from mrsched.localcluster.processes import terminate, wait_dead
from mrsched.localcluster.toolchain import Toolchain

#: kwok's own controller plays the kubelet only for nodes with this label (its scale-test nodes); every
#: other node, the emulator's, it leaves alone.
KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
_PORT_OPTIONS = (
    "kubeApiserverPort",
    "etcdPort",
    "etcdPeerPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
    "kwokControllerPort",
)


class ControlPlaneError(RuntimeError):
    pass


@dataclass(frozen=True)
class ControlPlane:
    name: str
    kwok_workdir: Path  # KWOK_WORKDIR: kwokctl keeps clusters/<name>/ (pki, etcd data, logs, pids) here
    kubeconfig: Path
    server: str
    ports: dict[str, int]

    @property
    def cluster_dir(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def scheduler_log(self) -> Path:
        return self.cluster_dir / "logs" / "kube-scheduler.log"

    @property
    def audit_log(self) -> Path:
        """The apiserver's audit log (:data:`AUDIT_POLICY`): one JSON event per line."""
        return self.cluster_dir / "logs" / "audit.log"

    def pids(self) -> list[int]:
        pid_dir = self.cluster_dir / "pids"
        if not pid_dir.is_dir():
            return []
        return [int(p.read_text().strip()) for p in pid_dir.glob("*.pid") if p.read_text().strip().isdigit()]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {**data, "kwok_workdir": str(self.kwok_workdir), "kubeconfig": str(self.kubeconfig)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ControlPlane:
        return cls(
            data["name"],
            Path(data["kwok_workdir"]),
            Path(data["kubeconfig"]),
            data["server"],
            dict(data["ports"]),
        )


#: What the apiserver audits: who created and bound pods, and who wrote MapReduceJobs' status (the user each
#: request authenticated as: e2e/ checks that a job's pods came from the operator's ServiceAccount), at the
#: Metadata level; nothing else, so that load tests pay for no more than that.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Metadata",
            "verbs": ["create"],
            "resources": [{"group": "", "resources": ["pods", "pods/binding"]}],
        },
        {
            "level": "Metadata",
            "verbs": ["patch", "update"],
            "resources": [{"group": "mrsched.dev", "resources": ["mapreducejobs/status"]}],
        },
        {"level": "None"},
    ],
}


def kwokctl_config(
    tool: Toolchain,
    ports: dict[str, int],
    *,
    node_grace_s: float,
    audit_policy: Path,
    scheduler_verbosity: int | None = None,
) -> dict[str, Any]:
    """kwokctl's configuration: local binaries, loopback everywhere, our ports, kwok limited to its nodes."""
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            "kubeVersion": tool.kubernetes_version,
            **ports,
            "kubeApiserverBinary": str(tool.kube_apiserver),
            "kubeControllerManagerBinary": str(tool.kube_controller_manager),
            "kubeSchedulerBinary": str(tool.kube_scheduler),
            "kubectlBinary": str(tool.kubectl),
            "etcdBinary": str(tool.etcd),
            "kwokControllerBinary": str(tool.kwok),
            # How long a node may miss heartbeats before the node lifecycle controller marks it NotReady.
            "kubeControllerManagerNodeMonitorGracePeriodMilliseconds": int(node_grace_s * 1000),
            "kubeControllerManagerNodeMonitorPeriodMilliseconds": 2000,
            # kwokctl multiplies every heartbeat setting by this factor (default 5): take ours as given.
            "heartbeatFactor": 1.0,
            "disableQPSLimits": True,
            "kubeAuditPolicy": str(audit_policy),
        },
        "componentsPatches": [
            {
                "name": "kwok-controller",
                "extraArgs": [
                    # Both flags: kwokctl passes --manage-all-nodes=true itself, and a selector alone conflicts.
                    {"key": "manage-all-nodes", "value": "false"},
                    {"key": "manage-nodes-with-label-selector", "value": KWOK_NODE_SELECTOR},
                ],
            },
            # kube-scheduler's log level when asked (5: every pod's queue moves and attempts, for a peer check)
            *(
                [{"name": "kube-scheduler", "extraArgs": [{"key": "v", "value": str(scheduler_verbosity)}]}]
                if scheduler_verbosity is not None
                else []
            ),
        ],
    }


def _kwokctl(tool: Toolchain, kwok_workdir: Path, *args: str, timeout_s: float = 120.0) -> str:
    env = {
        **os.environ,
        "KWOK_WORKDIR": str(kwok_workdir),
        # kwokctl has no --kubectl-binary flag for every use: put ours first on PATH.
        "PATH": f"{tool.kubectl.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(
        [str(tool.kwokctl), *args], env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        raise ControlPlaneError(f"kwokctl {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def start_control_plane(
    tool: Toolchain,
    name: str,
    workdir: Path,
    *,
    node_grace_s: float = 20.0,
    timeout_s: float = 90.0,
    scheduler_verbosity: int | None = None,
) -> ControlPlane:
    """Create and start a cluster called ``name`` with its state under ``workdir``; ready when it returns."""
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {option: free_port() for option in _PORT_OPTIONS}
    config_path = workdir / "kwokctl.yaml"
    audit_policy = workdir / "audit-policy.yaml"
    audit_policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    config_path.write_text(
        yaml.safe_dump(
            kwokctl_config(
                tool,
                ports,
                node_grace_s=node_grace_s,
                audit_policy=audit_policy,
                scheduler_verbosity=scheduler_verbosity,
            )
        )
    )
    kubeconfig = workdir / "kubeconfig"
    plane = ControlPlane(
        name, workdir / "kwok", kubeconfig, f"https://127.0.0.1:{ports['kubeApiserverPort']}", ports
    )
    try:
        _kwokctl(
            tool,
            plane.kwok_workdir,
            "create",
            "cluster",
            "--name",
            name,
            "--config",
            str(config_path),
            "--kubeconfig",
            str(kubeconfig),
            "--wait",
            f"{int(timeout_s)}s",
            timeout_s=timeout_s + 30,
        )
        wait_ready(plane, timeout_s)
    except BaseException:
        stop_control_plane(tool, plane)
        raise
    return plane


def _ssl_context(kubeconfig: Path) -> tuple[ssl.SSLContext, str]:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    context = ssl.create_default_context(cafile=cluster["certificate-authority"])
    context.load_cert_chain(user["client-certificate"], user["client-key"])
    return context, cluster["server"]


def get_json(plane: ControlPlane, path: str, timeout_s: float = 5.0) -> Any:
    """GET an API path with the admin credentials of the kubeconfig."""
    context, server = _ssl_context(plane.kubeconfig)
    with urllib.request.urlopen(server + path, context=context, timeout=timeout_s) as resp:
        body = resp.read()
    return json.loads(body) if body.startswith(b"{") else body.decode()


def wait_ready(plane: ControlPlane, timeout_s: float) -> None:
    """Wait for the API server's /readyz and for the default ServiceAccount (the controller manager's
    service-account controller makes it; without it no pod can be created)."""
    deadline = time.monotonic() + timeout_s
    last_error = ""
    while time.monotonic() < deadline:
        try:
            if get_json(plane, "/readyz") == "ok":
                get_json(plane, "/api/v1/namespaces/default/serviceaccounts/default")
                return
        except Exception as err:  # not up yet: connection refused, 404 before the controller runs, ...
            last_error = str(err)
        time.sleep(0.1)
    raise ControlPlaneError(f"control plane {plane.name} not ready after {timeout_s:.0f} s: {last_error}")


def stop_control_plane(tool: Toolchain, plane: ControlPlane) -> None:
    """Stop every component, then check that no process or port is left and remove the cluster's files."""
    pids = plane.pids()
    if plane.cluster_dir.exists():
        # On failure, fall through to killing what is left.
        with contextlib.suppress(ControlPlaneError, subprocess.TimeoutExpired):
            _kwokctl(tool, plane.kwok_workdir, "delete", "cluster", "--name", plane.name, timeout_s=60)
    if wait_dead(pids, 15.0):
        terminate(pids, timeout_s=5.0)
    busy = [port for port in plane.ports.values() if is_listening(port)]
    deadline = time.monotonic() + 10
    while busy and time.monotonic() < deadline:
        time.sleep(0.1)
        busy = [port for port in busy if is_listening(port)]
    if busy:
        raise ControlPlaneError(f"ports {busy} are still held after stopping {plane.name}")
    shutil.rmtree(plane.cluster_dir, ignore_errors=True)
