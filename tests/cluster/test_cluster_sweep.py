"""``mrsched simulate --on-cluster``: a sweep as one Indexed Job on the local control plane (the real Job
controller and kube-scheduler), each index a pod the process-mode emulator runs as a process, the results
gathered from the shared claim (issue 24)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mrsched.localcluster.cluster import LocalCluster
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube
from tests.sweephelpers import write_swim_small


def mrsched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mrsched", *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_a_sweep_on_the_cluster_as_an_indexed_job_gives_the_local_results_byte_for_byte(
    kube: Kube, namespace: str, emulate: EmulateFactory, local_cluster: LocalCluster, tmp_path: Path
) -> None:
    handle = emulate({"medium": 2}, mode="process", data_dir=tmp_path / "volumes")
    source = write_swim_small(tmp_path / "scenario").parent

    local = mrsched("simulate", str(source / "s.yaml"), "--jobs", "1", "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    remote = mrsched(
        "simulate",
        str(source / "s.yaml"),
        "--on-cluster",
        namespace,
        "--claim-dir",
        str(tmp_path / "volumes" / "data"),  # the pods' volume "data" (the claim mrsched-data), as seen here
        "--command",
        f"{sys.executable} -m mrsched",  # the image's entrypoint, on this machine
        "--node-selector",
        f"mrsched.dev/emulator={handle.emulator_id}",
        "--kubeconfig",
        str(local_cluster.kubeconfig),
        "--jobs",
        "2",
        "--out",
        str(tmp_path / "remote"),
    )
    assert remote.returncode == 0, remote.stderr + remote.stdout
    assert "submitted Job" in remote.stdout and remote.stdout.count("swim-small: ") == 4  # a line per run
    assert (tmp_path / "remote" / "results.json").read_bytes() == (
        tmp_path / "local" / "results.json"
    ).read_bytes()

    # The real Job controller ran it: four completions, each index a pod on an emulated node.
    (job,) = json.loads(kube.kubectl("get", "jobs", "-n", namespace, "-o", "json").stdout)["items"]
    assert job["spec"]["completionMode"] == "Indexed" and job["status"]["succeeded"] == 4
    assert job["status"]["completedIndexes"] == "0-3"
    pods = json.loads(
        kube.kubectl(
            "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/name=mrsched-sweep", "-o", "json"
        ).stdout
    )["items"]
    assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods) == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert {p["spec"]["nodeName"] for p in pods} <= set(handle.nodes)
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)


def test_a_sweep_whose_runs_fail_names_them_and_fails(
    kube: Kube, namespace: str, emulate: EmulateFactory, local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """A pod that cannot run its index (here a command that exits 1) is retried once, then the sweep stops with
    the runs it lost, not a partial results.json."""
    handle = emulate({"medium": 1}, mode="process", data_dir=tmp_path / "volumes")
    source = write_swim_small(tmp_path / "scenario", policies=["fifo"], seeds=[1]).parent
    failed = mrsched(
        "simulate",
        str(source / "s.yaml"),
        "--on-cluster",
        namespace,
        "--claim-dir",
        str(tmp_path / "volumes" / "data"),
        "--command",
        "false",
        "--node-selector",
        f"mrsched.dev/emulator={handle.emulator_id}",
        "--kubeconfig",
        str(local_cluster.kubeconfig),
        "--out",
        str(tmp_path / "remote"),
    )
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "failed: 1 of 1 runs after 2 tries" in failed.stderr
    assert "index 0 (fifo seed 1): no output" in failed.stderr
    assert not (tmp_path / "remote").exists()
    pods = json.loads(kube.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Failed" for p in pods)  # the try and its retry
