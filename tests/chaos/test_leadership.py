"""One leader at a time (issue 20, defect 5): two operator replicas on the local control plane, one with a
skewed clock, one paused with SIGSTOP past the lease and resumed.

Before: a standby compared the holder's renewTime with its own wall clock (a minute of skew and it took over
from a healthy leader at once), the leader renewed only between rounds, and nothing stopped a leader resumed
mid-round from finishing that round's writes.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    apply_crds,
    job_manifest,
    start_operator,
    task_pods,
    wait_phase,
)

LEASE = "mrsched-leader"
MB = 1 << 20


def holder(kube: Kube, namespace: str) -> str:
    out = kube.kubectl("get", "lease", LEASE, "-n", namespace, "-o", "json", check=False)
    if out.returncode != 0:
        return ""
    return str(json.loads(out.stdout)["spec"].get("holderIdentity") or "")


def holds(kube: Kube, namespace: str, operator: OperatorProcess) -> bool:
    return holder(kube, namespace).endswith(f"-{operator.proc.pid}")


@pytest.fixture
def hanging_prometheus() -> Iterator[str]:
    """An address that accepts connections and never answers, as a Prometheus stuck in a long query: every
    round waits out the operator's query timeout (5 s) before it places, so a pause lands mid-round."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.5)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_a_standby_with_a_skewed_clock_does_not_take_over_a_live_leader(
    kube: Kube, namespace: str, tmp_path: Path
) -> None:
    apply_crds(kube)
    leader = start_operator(kube, namespace, tmp_path / "leader")
    wait_for(lambda: holds(kube, namespace, leader), 30, "the first operator to lead")
    # A standby whose wall clock runs a minute ahead (libfaketime, preloaded): every renewTime the leader
    # writes looks a minute old to it.
    libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    assert libs, "libfaketime is missing: hack/install-system-deps.sh installs the faketime package"
    skewed = start_operator(
        kube,
        namespace,
        tmp_path / "skewed",
        env={"LD_PRELOAD": libs[0], "FAKETIME": "+60s", "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
    )
    try:
        deadline = time.monotonic() + 25  # more than a whole lease (15 s) of the standby trying every 2 s
        while time.monotonic() < deadline:
            assert holds(kube, namespace, leader), f"the skewed standby took over: {holder(kube, namespace)}"
            time.sleep(0.5)
        leader.stop()  # released: the standby leads at its next try
        wait_for(lambda: holds(kube, namespace, skewed), 10, "the standby to lead once the leader is gone")
    finally:
        skewed.stop()
        leader.stop()


def created_by(pod: dict[str, Any], manager: str) -> bool:
    return any(entry.get("manager") == manager for entry in pod["metadata"].get("managedFields") or [])


def test_a_leader_paused_past_its_lease_writes_nothing_once_resumed(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path, hanging_prometheus: str
) -> None:
    apply_crds(kube)
    emulate({"small": 2})
    extra = ("--prometheus-url", hanging_prometheus)
    first = start_operator(kube, namespace, tmp_path / "first", extra=extra)
    wait_for(lambda: holds(kube, namespace, first), 30, "the first operator to lead")
    second = start_operator(kube, namespace, tmp_path / "second", extra=extra)
    first_manager = f"mrsched-{socket.gethostname()}-{first.proc.pid}"
    try:
        # Ten maps of ~5 s on two small nodes (2 map slots each): three waves, placed over several rounds.
        apply(
            kube,
            namespace,
            job_manifest(
                "steady",
                workload={"app": "wordcount"},
                input={"paths": ["in"], "bytes": 10 * 20 * MB},
                output={"path": "out"},
                maps=10,
                reduces=1,
                resources={
                    "map": {"cpu": "500m", "memory": "256Mi"},
                    "reduce": {"cpu": "500m", "memory": "256Mi"},
                },
            ),
        )
        wait_for(lambda: task_pods(kube, namespace, "steady"), 60, "the first maps")
        time.sleep(1.0)  # inside a round, waiting on the hanging Prometheus
        os.kill(first.proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        wait_for(lambda: holds(kube, namespace, second), 40, "the standby to take over")
        assert time.monotonic() - paused >= 12.0, "the standby waited a whole lease of its own observation"
        time.sleep(5)  # the standby places
        resumed_wall = time.time()
        os.kill(first.proc.pid, signal.SIGCONT)
        job = wait_phase(kube, namespace, "steady", ("Succeeded", "Failed"), 240)
        assert job["status"]["phase"] == "Succeeded", job["status"]
        assert job["status"]["maps"]["failed"] == 0
        assert holds(kube, namespace, second), "the resumed replica did not take the Lease back"
        late = [
            p["metadata"]["name"]
            for p in task_pods(kube, namespace, "steady")
            if created_by(p, first_manager)
            and datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
            >= resumed_wall - 1
        ]
        assert late == [], f"the resumed replica created pods after losing the Lease: {late}"
        assert "lost the leader Lease" in first.logs()
    finally:
        os.kill(first.proc.pid, signal.SIGCONT)
        second.stop()
        first.stop()
