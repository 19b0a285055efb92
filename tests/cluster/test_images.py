"""`make images` (issue 25) builds the two images under the names the chart's defaults run, with docker or
podman; where no engine answers it builds nothing and says so. The engine here is a stand-in that records what
it was asked to build (no container engine runs on this machine)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from mrsched.localcluster.toolchain import Toolchain
from tests.chart.helmtool import Helm, by_kind

REPO = Path(__file__).resolve().parents[2]
FAKE_ENGINE = """#!/bin/sh
# answers `info` (the engine is up) and records each build's arguments
[ "$1" = info ] && exit 0
echo "$@" >> "$BUILDS"
"""


@pytest.fixture(scope="module")
def helm(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(toolchain.helm, tmp_path_factory.mktemp("helm"))


def _make_images(path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "images"],
        cwd=REPO,
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_make_images_tags_what_the_charts_defaults_run(helm: Helm, tmp_path: Path) -> None:
    engine = tmp_path / "bin" / "podman"
    engine.parent.mkdir()
    engine.write_text(FAKE_ENGINE)
    engine.chmod(engine.stat().st_mode | stat.S_IEXEC)
    builds = tmp_path / "builds"
    made = _make_images(f"{engine.parent}:/usr/bin:/bin", BUILDS=str(builds), ENGINE="podman")
    assert made.returncode == 0, made.stderr
    built = {line.split()[-2]: line.split() for line in builds.read_text().splitlines()}

    (deployment,) = by_kind(helm.render(), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    worker = {e["name"]: e.get("value") for e in container["env"]}["MRSCHED_WORKER_IMAGE"]
    assert set(built) == {container["image"], worker}
    assert built[container["image"]][:3] == ["build", "-f", "operator/Dockerfile"]
    assert built[worker][:3] == ["build", "-f", "workers/Dockerfile"]


def test_make_images_without_an_engine_builds_nothing_and_says_so(tmp_path: Path) -> None:
    # Only the system's tools: a docker client there finds no daemon on this machine, and CI has none at all.
    made = _make_images("/usr/bin:/bin")
    assert made.returncode == 0, made.stderr
    assert "no docker or podman engine answers here; no image built" in made.stdout
