"""docs/kind.md cannot run here (no container engine); what it says is checked against what it relies on: the
kind config's shared mount, kind's node names, the chart's image tags and the data path the tasks see."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
DOC = (REPO / "docs" / "kind.md").read_text()
KIND = yaml.safe_load((REPO / "hack" / "kind-cluster.yaml").read_text())


def test_the_workers_share_one_host_directory_that_the_chart_mounts() -> None:
    workers = [n for n in KIND["nodes"] if n["role"] == "worker"]
    mounts = {(m["hostPath"], m["containerPath"]) for n in workers for m in n["extraMounts"]}
    assert len(workers) == 2 and len(mounts) == 1
    ((host, container),) = mounts
    assert f"mkdir -p {host} && chmod 0777 {host}" in DOC
    assert f"--set data.claim= --set data.hostPath={container}" in DOC
    assert f"cat {host}/namespaces/default/examples/pi/part-r-00000" in DOC


def test_the_labelled_nodes_and_loaded_images_are_kinds_and_the_charts() -> None:
    name = KIND["name"]
    # kind names workers <cluster>-worker, <cluster>-worker2, ...
    assert f"kubectl label node {name}-worker {name}-worker2 mrsched.dev/worker=true" in DOC
    app_version = yaml.safe_load((REPO / "charts" / "mrsched" / "Chart.yaml").read_text())["appVersion"]
    loaded = re.search(r"kind load docker-image --name (\S+) (.+)", DOC)
    assert loaded is not None and loaded.group(1) == name
    assert loaded.group(2).split() == [
        f"ghcr.io/mrsched/mrsched:{app_version}",
        f"ghcr.io/mrsched/worker:{app_version}",
    ]
