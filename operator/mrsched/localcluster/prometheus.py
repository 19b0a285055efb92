"""A real Prometheus (Debian's 2.42) that scrapes the node emulators every second.

Scrape targets come from file-based service discovery: each emulator gets a ``targets/<id>.json``, written when
it starts and removed when it stops, so emulators come and go without restarting Prometheus.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mrsched.localcluster.processes import alive, terminate
from mrsched.localcluster.toolchain import Toolchain

SCRAPE_INTERVAL = "1s"
EMULATOR_JOB = "mrsched-emulator"


class PrometheusError(RuntimeError):
    pass


@dataclass(frozen=True)
class PrometheusServer:
    url: str
    pid: int
    workdir: Path

    @property
    def targets_dir(self) -> Path:
        return self.workdir / "targets"

    def add_target(self, name: str, address: str, labels: dict[str, str] | None = None) -> None:
        tmp = self.targets_dir / f".{name}.json.tmp"
        tmp.write_text(json.dumps([{"targets": [address], "labels": labels or {}}]))
        tmp.replace(self.targets_dir / f"{name}.json")  # atomic: Prometheus never reads half a file

    def remove_target(self, name: str) -> None:
        (self.targets_dir / f"{name}.json").unlink(missing_ok=True)

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.loads(resp.read())
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "pid": self.pid, "workdir": str(self.workdir)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PrometheusServer:
        return cls(data["url"], int(data["pid"]), Path(data["workdir"]))


def prometheus_config(targets_dir: Path, scrape_interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": [
            {"job_name": "prometheus", "static_configs": [{"targets": []}]},
            {
                "job_name": EMULATOR_JOB,
                # The emulator already labels every series with its node; keep that label as it is.
                "honor_labels": True,
                "file_sd_configs": [{"files": [str(targets_dir / "*.json")], "refresh_interval": "1s"}],
            },
        ],
    }


def start_prometheus(
    tool: Toolchain, workdir: Path, port: int, timeout_s: float = 30.0, scrape_interval: str = SCRAPE_INTERVAL
) -> PrometheusServer:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "targets").mkdir(exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config = prometheus_config(workdir / "targets", scrape_interval)
    config["scrape_configs"][0]["static_configs"][0]["targets"] = [f"127.0.0.1:{port}"]
    config_path.write_text(yaml.safe_dump(config))
    with open(workdir / "prometheus.log", "ab") as log:
        proc = subprocess.Popen(
            [
                str(tool.prometheus),
                f"--config.file={config_path}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=1d",
                "--web.enable-lifecycle",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = PrometheusServer(f"http://127.0.0.1:{port}", proc.pid, workdir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (workdir / "prometheus.log").read_text(errors="replace")[-2000:]
            raise PrometheusError(f"prometheus exited with {proc.returncode}: {tail}")
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.1)
    stop_prometheus(server)
    raise PrometheusError(f"prometheus not ready on {server.url} after {timeout_s:.0f} s")


def stop_prometheus(server: PrometheusServer) -> None:
    if alive(server.pid):
        terminate([server.pid], timeout_s=10)
