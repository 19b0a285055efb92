"""Each task outcome is counted once across operator restarts, including those that ended while no operator ran
(issue 20, defect 7).

Before: a restarted operator counted every past attempt it found in ``mrsched_tasks_finished_total`` again, and
never fed the policies the outcomes that ended while it was down.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import OperatorProcess, apply, get_job, job_manifest, start_operator, wait_phase

MB = 1 << 20


def finished_maps(operator: OperatorProcess) -> float:
    match = re.search(
        r'^mrsched_tasks_finished_total\{outcome="succeeded",type="map"\} (\S+)$', operator.metrics(), re.M
    )
    return float(match.group(1)) if match else 0.0


def recorded_maps(kube: Kube, namespace: str, job: str) -> int:
    text = (
        ((get_job(kube, namespace, job).get("status") or {}).get("tasks") or {})
        .get("map", {})
        .get("succeeded", "")
    )
    count = 0
    for item in filter(None, text.split(",")):
        low, _, high = item.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def test_outcomes_are_counted_once_across_a_restart_and_downtime(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    emulate({"medium": 1})  # model mode, 2 map slots: eight maps of ~3 s in four waves
    apply(
        kube,
        namespace,
        job_manifest(
            "counted",
            workload={"app": "wordcount"},
            input={"paths": ["in"], "bytes": 8 * 12 * MB},
            output={"path": "out"},
            maps=8,
            reduces=1,
            reduceSlowStart=1.0,
            resources={"map": {"cpu": "1", "memory": "512Mi"}, "reduce": {"cpu": "1", "memory": "512Mi"}},
        ),
    )
    wait_for(lambda: recorded_maps(kube, namespace, "counted") >= 2, 90, "two maps recorded as succeeded")
    operator.kill()  # SIGKILL: its running maps go on and end while no operator runs
    recorded = recorded_maps(kube, namespace, "counted")
    restarted = start_operator(kube, namespace, tmp_path / "restarted")
    try:
        job = wait_phase(kube, namespace, "counted", ("Succeeded", "Failed"), 180)
        assert job["status"]["phase"] == "Succeeded", job["status"]
        # The restarted operator counts the maps the first one had not recorded, each once: those that ended
        # during the downtime and those it ran itself; none of the ones recorded before the kill.
        wait_for(lambda: finished_maps(restarted) == 8 - recorded, 10, f"{8 - recorded} maps counted")
    finally:
        restarted.stop()

    # A third operator, after the job finished: nothing left to count.
    third = start_operator(kube, namespace, tmp_path / "third")
    try:
        wait_for(
            lambda: "mrsched_jobs{" in third.metrics() and 'phase="Succeeded"} 1.0' in third.metrics(),
            30,
            "a round of the third operator",
        )
        assert finished_maps(third) == 0.0
    finally:
        third.stop()
