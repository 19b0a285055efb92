"""The operator's restarts: killed mid-job it resumes without repeating a task; stopped cleanly it hands the
leader Lease over at once."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mrsched.operator.model import taskrecord
from mrsched.operator.model.pods import INDEX_LABEL, TYPE_LABEL
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    get_job,
    job_manifest,
    start_operator,
    task_pods,
    wait_phase,
)


def test_operator_killed_mid_job_resumes_and_counts_each_task_once(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    """SIGKILL while the first wave of maps runs and the operator has nothing in flight: the restarted operator
    adopts the running pods and creates the rest, each task once, at attempt 0. (A kill between recording an
    attempt and creating its pod burns that attempt number by design; tests/chaos/test_operator_killed.py
    covers that case. So the kill waits until every recorded map attempt has its pod running, and maps of ~3 s
    (0.3 s per 200000 samples measured on this machine) keep the wave from ending first: with 0.3-s maps and a
    wait for any two pods, the kill once landed mid-create in CI.)"""
    emulate({"medium": 1}, mode="process")  # room for 4 maps by requests: six maps run in two waves
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    samples = 2_000_000
    apply(
        kube,
        namespace,
        job_manifest(
            "pi",
            workload={"app": "pi", "parameters": {"samples": samples}},
            output={"path": "pi"},
            maps=6,
            reduces=1,
            reduceSlowStart=1.0,
        ),
    )

    def first_wave_running() -> bool:
        # Every map attempt the operator has recorded has its pod, all of them run, none has ended: the
        # operator has nothing in flight (a recorded attempt without its pod would be burnt by the kill).
        maps = [
            p for p in task_pods(kube, namespace, "pi") if p["metadata"]["labels"].get(TYPE_LABEL) == "map"
        ]
        recorded = taskrecord.parse(get_job(kube, namespace, "pi").get("status") or {})["map"].attempts
        created = {int(p["metadata"]["labels"][INDEX_LABEL]) for p in maps}
        return (
            len(maps) >= 2
            and set(recorded) == created
            and all((p.get("status") or {}).get("phase") == "Running" for p in maps)
        )

    wait_for(first_wave_running, 60, "the first wave of maps to run")
    operator.kill()  # SIGKILL: no clean-up, no last status write
    assert (get_job(kube, namespace, "pi").get("status") or {}).get("phase") != "Succeeded"

    restarted = start_operator(kube, namespace, tmp_path / "logs")
    try:
        job = wait_phase(kube, namespace, "pi", ("Succeeded", "Failed"), 180)
    finally:
        restarted.stop()
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"] == {"total": 6, "pending": 0, "running": 0, "succeeded": 6, "failed": 0}
    names = sorted(p["metadata"]["name"] for p in task_pods(kube, namespace, "pi"))
    uid = job["metadata"]["uid"][:5]
    assert names == [
        f"pi-{uid}-c00000-a0",
        *(f"pi-{uid}-m{i:05d}-a0" for i in range(6)),
        f"pi-{uid}-r00000-a0",
    ], "one attempt per task, no orphan"
    values = dict(line.split("\t") for line in (data / "pi" / "part-r-00000").read_text().splitlines())
    assert int(values["samples"]) == 6 * samples, "every map counted exactly once"


def test_a_stopped_leader_hands_the_lease_over_at_once(
    kube: Kube, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    """A leader stopped cleanly (SIGTERM, as a rolling update does) releases the Lease: it has no holder the moment
    the process is gone, and the standby leads at its next try, well before the 15 s lease would expire."""

    def holder() -> str:
        lease = json.loads(
            kube.kubectl("get", "lease", "mrsched-leader", "-n", namespace, "-o", "json").stdout
        )
        return str(lease["spec"].get("holderIdentity") or "")

    wait_for(lambda: holder().endswith(f"-{operator.proc.pid}"), 30, "the first operator to lead")
    standby = start_operator(kube, namespace, tmp_path / "standby")
    try:
        time.sleep(2)  # the standby has tried and found the Lease held
        assert holder().endswith(f"-{operator.proc.pid}")
        operator.stop()
        stopped = time.monotonic()
        after = holder()
        assert after == "" or after.endswith(f"-{standby.proc.pid}"), after
        assert "released the leader Lease" in operator.logs()
        wait_for(lambda: holder().endswith(f"-{standby.proc.pid}"), 12, "the standby to lead")
        # The standby retries every 2 s: without the release it would wait out the 15 s lease.
        assert time.monotonic() - stopped < 8.0
    finally:
        standby.stop()
