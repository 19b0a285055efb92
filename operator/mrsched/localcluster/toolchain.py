"""Where the harness finds its binaries: built by ``hack/build-binaries.sh`` into a versioned cache.

The versions live in ``mrsched/data/toolchain.env``, which the build script reads too. ``MRSCHED_CACHE_DIR``
moves the cache (default ``~/.cache/mrsched``); ``MRSCHED_BIN_DIR`` points at one directory that holds every
binary instead (for binaries built some other way).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

#: Debian's prometheus package (2.42) installs here; MRSCHED_PROMETHEUS overrides it.
DEFAULT_PROMETHEUS = "/usr/bin/prometheus"


class ToolchainError(RuntimeError):
    """A binary is missing; the message says how to build or install it."""


def versions() -> dict[str, str]:
    text = resources.files("mrsched").joinpath("data", "toolchain.env").read_text()
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def cache_dir() -> Path:
    return Path(os.environ.get("MRSCHED_CACHE_DIR", Path.home() / ".cache" / "mrsched"))


@dataclass(frozen=True)
class Toolchain:
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    etcd: Path
    kwokctl: Path
    kwok: Path
    helm: Path
    prometheus: Path
    kubernetes_version: str

    @classmethod
    def locate(cls) -> Toolchain:
        """Find every binary, or raise ToolchainError naming what is missing and how to get it."""
        v = versions()
        single = os.environ.get("MRSCHED_BIN_DIR")
        bin_root = cache_dir() / "bin"

        def where(tool: str, version_key: str) -> Path:
            return Path(single) if single else bin_root / f"{tool}-{v[version_key]}"

        k8s, etcd = where("kubernetes", "KUBERNETES_VERSION"), where("etcd", "ETCD_VERSION")
        kwok, helm = where("kwok", "KWOK_VERSION"), where("helm", "HELM_VERSION")
        prometheus = Path(
            os.environ.get("MRSCHED_PROMETHEUS") or shutil.which("prometheus") or DEFAULT_PROMETHEUS
        )
        chain = cls(
            kube_apiserver=k8s / "kube-apiserver",
            kube_controller_manager=k8s / "kube-controller-manager",
            kube_scheduler=k8s / "kube-scheduler",
            kubectl=k8s / "kubectl",
            etcd=etcd / "etcd",
            kwokctl=kwok / "kwokctl",
            kwok=kwok / "kwok",
            helm=helm / "helm",
            prometheus=prometheus,
            kubernetes_version=v["KUBERNETES_VERSION"],
        )
        missing = [str(p) for p in chain.paths() if not os.access(p, os.X_OK)]
        if missing:
            hints = []
            if any("prometheus" not in m for m in missing):
                hints.append("build the control-plane binaries with `make binaries` (hack/build-binaries.sh)")
            if any("prometheus" in m for m in missing):
                hints.append(
                    "install Prometheus with `apt-get install prometheus` (or set MRSCHED_PROMETHEUS)"
                )
            raise ToolchainError(f"missing {', '.join(missing)}: {'; '.join(hints)}")
        return chain

    def paths(self) -> list[Path]:
        return [
            self.kube_apiserver,
            self.kube_controller_manager,
            self.kube_scheduler,
            self.kubectl,
            self.etcd,
            self.kwokctl,
            self.kwok,
            self.helm,
            self.prometheus,
        ]
