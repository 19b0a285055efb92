"""Teardown leaves nothing behind: no process the harness started, no port, no cluster directory; also when
the process that started a cluster is killed before it could clean up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.localcluster.cluster import LocalCluster, reap_abandoned
from mrsched.localcluster.ports import is_listening
from mrsched.localcluster.processes import alive
from mrsched.localcluster.toolchain import Toolchain
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for

ONE_SMALL_NODE = ClusterLayout(name="one", nodes=[NodeGroup.model_validate({"class": "small", "count": 1})])


def _described(pids: list[int]) -> list[str]:
    """Leftover processes with their command lines, for a failure message that says what survived."""
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:
            cmd = "?"
        out.append(f"{pid}: {cmd}")
    return out


def _everything(cluster: LocalCluster) -> tuple[list[int], list[int]]:
    """Every process and port the harness started for ``cluster``."""
    prom_port = int(cluster.prometheus.url.rsplit(":", 1)[1])
    pids = [*cluster.plane.pids(), cluster.prometheus.pid, *(e.pid for e in cluster.emulators.values())]
    ports = [
        *cluster.plane.ports.values(),
        prom_port,
        *(int(e.url.rsplit(":", 1)[1]) for e in cluster.emulators.values()),
    ]
    return pids, ports


def test_down_stops_every_process_and_frees_every_port(toolchain: Toolchain, tmp_path: Path) -> None:
    cluster = LocalCluster.up("teardown", state_dir=tmp_path / "state", tool=toolchain)
    try:
        emulator = cluster.emulate(ONE_SMALL_NODE, mode="process", data_dir=tmp_path / "data")
        kube = Kube(cluster.kubeconfig, toolchain.kubectl)
        # A task process that would run for ten minutes, and says its pid.
        script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
        kube.create_pod(
            "default",
            task_pod(
                "sleeper",
                node=emulator.nodes[0],
                app=None,
                command=[sys.executable, "-c", script, "/data/pid"],
                volumes={"v": "/data"},
            ),
        )
        pod = kube.wait_pod("default", "sleeper", phase_in("Running", "Failed", "Succeeded"))
        assert pod["status"]["phase"] == "Running", pod["status"]
        task_pid = int(
            wait_for(
                lambda: (
                    (tmp_path / "data" / "v" / "pid").exists()
                    and (tmp_path / "data" / "v" / "pid").read_text()
                ),
                30,
                "the task's pid",
            )
        )
        kube.close()
        pids, ports = _everything(cluster)
        pids.append(task_pid)
        assert len(pids) == 8 and all(alive(p) for p in pids)  # 5 control-plane components, prometheus,
        assert all(is_listening(p) for p in ports)  # the emulator and its task process
    finally:
        cluster.down(toolchain)

    assert _described([p for p in pids if alive(p)]) == []
    assert [p for p in ports if is_listening(p)] == []
    assert not (tmp_path / "state" / "teardown").exists()


STARTER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mrsched.core.catalog import load_cluster_layout
    from mrsched.localcluster.cluster import LocalCluster
    cluster = LocalCluster.up("orphan", state_dir=Path(sys.argv[1]))
    cluster.emulate(None)
    print("up", flush=True)
    time.sleep(600)
""")


def test_cluster_of_a_killed_process_is_reaped(toolchain: Toolchain, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    owner = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(state_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "up"
    finally:
        owner.send_signal(signal.SIGKILL)  # no chance to clean up
        owner.wait()
    state = json.loads((state_dir / "orphan" / "state.json").read_text())
    assert state["owner_pid"] == owner.pid
    cluster = LocalCluster.load("orphan", state_dir)
    pids, ports = _everything(cluster)
    assert all(alive(p) for p in pids)  # the components survived their owner

    assert reap_abandoned(state_dir) == ["orphan"]

    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _described([p for p in pids if alive(p)]) == []
    assert [p for p in ports if is_listening(p)] == []
    assert not (state_dir / "orphan").exists()
