"""A user at a shell on the local control plane: ``helm``, ``kubectl`` and ``mrsched`` on PATH, KUBECONFIG set,
commands run by bash exactly as typed. The nodes are process-mode emulated nodes, so the chart's operator and
every task run as real processes (docs/local-cluster.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: The README's release: its name and namespace.
RELEASE, RELEASE_NAMESPACE = "mrsched", "mrsched-system"
#: The namespace README's jobs run in (the chart's default watchNamespaces).
JOBS_NAMESPACE = "default"


class Shell:
    """bash with the tools a reader of README.md has, pointed at the local control plane."""

    def __init__(self, bin_dir: Path, kubeconfig: Path, home: Path) -> None:
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "KUBECONFIG": str(kubeconfig),
            # helm's own state in the test's directory, not the machine's
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    @classmethod
    def with_tools(cls, helm: Path, kubectl: Path, kubeconfig: Path, home: Path) -> Shell:
        bin_dir = home / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name, target in (
            ("helm", helm),
            ("kubectl", kubectl),
            ("mrsched", Path(sys.executable).parent / "mrsched"),
        ):
            link = bin_dir / name
            link.unlink(missing_ok=True)
            link.symlink_to(target)
        return cls(bin_dir, kubeconfig, home)

    def __call__(self, command: str, *, check: bool = True, timeout_s: float = 600) -> str:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"$ {command}\nexit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )
        return proc.stdout

    def json(self, command: str) -> Any:
        return json.loads(self(command + " -o json"))

    def job(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.json(f"kubectl get mrj {name} -n {JOBS_NAMESPACE}")
        return found

    def wait_succeeded(self, *names: str, timeout_s: float = 600) -> None:
        """Wait until every job named has ended, and fail at once, saying why, on one that failed."""

        def phases() -> dict[str, str]:
            jobs = self.json(f"kubectl get mrj -n {JOBS_NAMESPACE}")["items"]
            return {j["metadata"]["name"]: (j.get("status") or {}).get("phase", "") for j in jobs}

        def ended() -> bool:
            now = phases()
            for name in names:
                if now.get(name) == "Failed":
                    status = self.job(name)["status"]
                    raise AssertionError(f"{name} failed: {status.get('reason')}: {status.get('message')}")
            return all(now.get(name) == "Succeeded" for name in names)

        eventually(ended, timeout_s, f"{', '.join(names)} to succeed", interval_s=1.0)

    def task_pods(self, job: str | None = None) -> list[dict[str, Any]]:
        selector = f"mrsched.dev/job={job}" if job else "mrsched.dev/job"
        pods: list[dict[str, Any]] = self.json(
            f"kubectl get pods -n {JOBS_NAMESPACE} -l {selector} --show-managed-fields"
        )["items"]
        return pods

    def operator_pods(self) -> list[dict[str, Any]]:
        pods: list[dict[str, Any]] = self.json(
            f"kubectl get pods -n {RELEASE_NAMESPACE} -l app.kubernetes.io/name=mrsched"
        )["items"]
        return pods

    def leader(self) -> str | None:
        """The leader Lease's holder, ``<pod>-<pid>``."""
        out = self(f"kubectl get lease mrsched-leader -n {RELEASE_NAMESPACE} -o json", check=False)
        holder: str | None = json.loads(out)["spec"].get("holderIdentity") if out else None
        return holder


def process_environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_text().split("\0")
    return dict(item.split("=", 1) for item in raw if "=" in item)


def eventually(probe: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)
