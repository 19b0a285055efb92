"""A sweep run index by index from its files on a shared volume (mrsched.simulator.sweepfiles), as each pod of an
``mrsched simulate --on-cluster`` Indexed Job runs it, and the Job's manifest (mrsched.clustersweep)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mrsched.clustersweep import indexes, job_manifest, sweep_name
from mrsched.emulator.workload import container_env
from mrsched.simulator.run import PlannedRun, RunOutput, run_scenario
from mrsched.simulator.scenario import load_scenario
from mrsched.simulator.sweepfiles import output_path, read_output, read_plan, run_index, write_plan
from tests.sweephelpers import write_swim_small


def _traced(tmp_path: Path) -> Path:
    """The scenario's directory (its file and its trace), as on the machine that plans the sweep."""
    return write_swim_small(tmp_path / "planner").parent


def test_a_sweep_run_index_by_index_from_its_files_gives_the_local_results_byte_for_byte(
    tmp_path: Path,
) -> None:
    """Each index in its own process (``mrsched simulate-run``, the index from $JOB_COMPLETION_INDEX, as an Indexed
    Job's pod gets it), from a volume holding only the plan and its copied inputs (the planning machine's
    scenario directory is gone by then): the gathered summary is the local run's, byte for byte."""
    source = _traced(tmp_path)
    scenario = load_scenario(source / "s.yaml")
    local, _ = run_scenario(scenario)
    sweep_dir = tmp_path / "volume" / "sweeps" / "s1"
    reported: list[str] = []

    def on_the_volume(runs: list[PlannedRun], report: Any) -> list[RunOutput]:
        plan = write_plan(runs, sweep_dir)
        shutil.rmtree(source)  # a pod sees the volume only
        for index in reversed(range(len(runs))):  # in any order: gathered in the plan's
            env = {**os.environ, "JOB_COMPLETION_INDEX": str(index)}
            subprocess.run([sys.executable, "-m", "mrsched", "simulate-run", str(plan)], check=True, env=env)
        outputs = []
        for index, run in enumerate(runs):
            output = read_output(sweep_dir, index)
            assert output is not None
            report(run, output)
            outputs.append(output)
        return outputs

    remote, _ = run_scenario(scenario, progress=reported.append, executor=on_the_volume)
    assert json.dumps(remote, indent=1) == json.dumps(local, indent=1)
    assert len(reported) == 4 and sorted(p.name for p in sweep_dir.iterdir()) == [
        "input-0.tsv",
        "out",
        "plan.pkl",
    ]


def test_a_failed_run_leaves_its_traceback_for_the_sweep_to_report(tmp_path: Path) -> None:
    source = _traced(tmp_path)
    scenario = load_scenario(source / "s.yaml")
    runs = [PlannedRun(scenario, "no-such-policy", 1, "hadoop", None, False, False)]
    plan = write_plan(runs, tmp_path / "sweep")
    with pytest.raises(Exception, match="no-such-policy"):
        run_index(plan, 0)
    with pytest.raises(RuntimeError, match=r"run 0 of the sweep .* failed:(.|\n)*no-such-policy"):
        read_output(tmp_path / "sweep", 0)
    with pytest.raises(IndexError, match="plans 1 runs: there is no run 1"):
        run_index(plan, 1)
    assert read_output(tmp_path / "sweep", 5) is None  # not run yet
    assert not output_path(tmp_path / "sweep", 1).exists()


def test_the_plan_reads_back_with_its_inputs_beside_it(tmp_path: Path) -> None:
    source = _traced(tmp_path)
    scenario = load_scenario(source / "s.yaml")
    runs = [
        PlannedRun(scenario, p, s, "hadoop", None, False, False) for s in (1, 2) for p in ("fifo", "fair")
    ]
    write_plan(runs, tmp_path / "moved-from")
    shutil.move(tmp_path / "moved-from", tmp_path / "moved-to")  # mounted elsewhere in the pod
    back = read_plan(tmp_path / "moved-to" / "plan.pkl")
    assert [(r.name, r.seed) for r in back] == [(r.name, r.seed) for r in runs]
    assert len({id(r.scenario) for r in back}) == 1  # one scenario object, as planned
    trace = back[0].scenario.workload.trace
    assert trace is not None and back[0].scenario.resolve(trace.path) == tmp_path / "moved-to" / "input-0.tsv"
    # As written: the inputs named relative to wherever the volume is mounted.
    assert pickle.loads((tmp_path / "moved-to" / "plan.pkl").read_bytes())[0].scenario.base_dir == Path(".")


def test_the_indexed_job_runs_each_plan_entry_once_with_the_claim_at_data() -> None:
    job = job_manifest(
        "sweep-x-1",
        60,
        8,
        image="img:1",
        command=["mrsched"],
        claim="c",
        plan="/data/sweeps/x/plan.pkl",
        node_selector={"pool": "sim"},
    )
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 60, 8)
    assert spec["backoffLimitPerIndex"] == 1  # a run retried once, then its index fails the sweep
    assert spec["maxFailedIndexes"] == 0  # and the Job controller stops the others
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] + container["args"] == ["mrsched", "simulate-run", "/data/sweeps/x/plan.pkl"]
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]
    assert pod["restartPolicy"] == "Never" and pod["nodeSelector"] == {"pool": "sim"}
    assert pod["automountServiceAccountToken"] is False  # a run needs the claim, not the API
    assert job_manifest("s", 3, 8, image="i", command=["m"], claim="c", plan="p")["spec"]["parallelism"] == 3
    name = sweep_name("SWIM day_100 nodes" * 5)
    assert len(name) <= 63 and name.startswith("sweep-swim-day-100-nodes") and name == name.lower()


def test_job_status_index_lists() -> None:
    assert indexes("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert indexes(None) == set() and indexes("") == set()


def test_the_emulated_kubelet_gives_a_pod_its_completion_index_from_the_annotation() -> None:
    """The Job controller sets JOB_COMPLETION_INDEX from the pod's annotation by the downward API."""
    ref = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    pod = {
        "metadata": {
            "name": "p",
            "annotations": {"batch.kubernetes.io/job-completion-index": "7"},
            "labels": {},
        },
        "spec": {
            "containers": [
                {
                    "env": [
                        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": ref}}},
                        {
                            "name": "MISSING",
                            "valueFrom": {"fieldRef": {"fieldPath": 'metadata.labels["absent"]'}},
                        },
                    ]
                }
            ]
        },
    }
    assert container_env(pod) == {"JOB_COMPLETION_INDEX": "7", "MISSING": ""}
