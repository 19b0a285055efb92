"""Run the operator as a real process against the local control plane, and read MapReduceJobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mrsched.localcluster.ports import free_port
from tests.kubehelpers import Kube, wait_for

REPO = Path(__file__).resolve().parents[1]
CRDS = REPO / "crds"
MRSCHED = Path(sys.executable).parent / "mrsched"
#: Half a core and 256 MiB per map and reduce pod: small enough that several fit on an emulated small node.
SMALL_TASKS = {"map": {"cpu": "500m", "memory": "256Mi"}, "reduce": {"cpu": "500m", "memory": "256Mi"}}


@dataclass
class OperatorProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    liveness_port: int
    args: list[str] = field(default_factory=list)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


def apply_crds(kube: Kube) -> None:
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    for crd in ("mapreducejobs", "nodeprofiles", "appprofiles", "policyprofiles"):
        kube.kubectl("wait", "--for=condition=Established", f"crd/{crd}.mrsched.dev", "--timeout=60s")


def start_operator(
    kube: Kube,
    namespace: str,
    log_dir: Path,
    *,
    policy: str = "fair",
    extra: tuple[str, ...] = (),
    kubeconfig: Path | None = None,
    env: dict[str, str] | None = None,
) -> OperatorProcess:
    """The operator as a process watching ``namespace`` (its Lease there too), as ``kube``'s identity or, with
    ``kubeconfig``, as another one (a ServiceAccount's token, to test the chart's RBAC)."""
    metrics_port, liveness_port = free_port(), free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"operator-{time.monotonic_ns()}.log"
    args = [
        str(MRSCHED),
        "run",
        "--kubeconfig",
        str(kubeconfig or kube.kubeconfig),
        "--namespace",
        namespace,
        "--lease-namespace",
        namespace,
        "--policy",
        policy,
        "--heartbeat",
        "0.5",
        "--worker-command",
        f"{sys.executable} -m mrworker",
        "--metrics-port",
        str(metrics_port),
        "--liveness-port",
        str(liveness_port),
        *extra,
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    handle = OperatorProcess(proc, log, metrics_port, liveness_port, args)

    def ready() -> bool:
        assert proc.poll() is None, f"the operator exited:\n{handle.logs()[-4000:]}"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{liveness_port}/healthz", timeout=2).read()
        except OSError:
            return False
        return True

    wait_for(ready, 60, "operator liveness endpoint")
    return handle


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mrsched.dev/v1alpha1",
        "kind": "MapReduceJob",
        "metadata": {"name": name},
        "spec": spec,
    }


def apply(
    kube: Kube, namespace: str, manifest: dict[str, Any], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return kube.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(manifest), check=check)


def get_job(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    return dict(json.loads(kube.kubectl("get", "mrj", name, "-n", namespace, "-o", "json").stdout))


def wait_phase(
    kube: Kube, namespace: str, name: str, phases: tuple[str, ...], timeout_s: float
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        job = get_job(kube, namespace, name)
        return job if (job.get("status") or {}).get("phase") in phases else None

    return dict(wait_for(probe, timeout_s, f"job {name} in {phases}", interval_s=0.5))


def task_pods(kube: Kube, namespace: str, job: str) -> list[dict[str, Any]]:
    out = kube.kubectl("get", "pods", "-n", namespace, "-l", f"mrsched.dev/job={job}", "-o", "json").stdout
    return list(json.loads(out)["items"])
