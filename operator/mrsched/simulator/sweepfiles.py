"""A sweep's runs as files on a shared volume, so that each can run in a pod of its own (a sweep that
outgrows one machine goes to a cluster as an Indexed Job, ``mrsched.clustersweep``).

The sweep's directory holds ``plan.pkl`` (the planned runs, in the order the summary gathers them), a copy of
every input file the scenarios read (a pod sees the volume, not the machine that planned the sweep), and
``out/<index>.pkl``, each run's output, written by the pod whose completion index it is. Nothing here knows
Kubernetes: an index is a number, a volume a directory.
"""

from __future__ import annotations

import os
import pickle
import shutil
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mrsched.simulator.run import PlannedRun, RunOutput, run_one
from mrsched.simulator.scenario import Scenario

PLAN = "plan.pkl"
OUTPUTS = "out"


def write_plan(runs: list[PlannedRun], sweep_dir: Path) -> Path:
    """Write ``runs`` and their scenarios' input files into ``sweep_dir``; the plan's path."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / OUTPUTS).mkdir(exist_ok=True)
    copied: dict[Path, str] = {}

    def copy(path: Path) -> str:
        if path not in copied:
            copied[path] = f"input-{len(copied)}{path.suffix}"
            shutil.copyfile(path, sweep_dir / copied[path])
        return copied[path]

    rerooted: dict[int, Scenario] = {}  # one copy per scenario object, as the runs share them
    plan = []
    for run in runs:
        scenario = rerooted.get(id(run.scenario))
        if scenario is None:
            scenario = rerooted[id(run.scenario)] = _rerooted(run.scenario, copy)
        plan.append(replace(run, scenario=scenario))
    path = sweep_dir / PLAN
    _write_atomically(path, pickle.dumps(plan))
    return path


def _rerooted(scenario: Scenario, copy: Callable[[Path], str]) -> Scenario:
    """``scenario`` with its input files named by their copies' names, relative to the sweep's directory
    (:func:`read_plan` roots them there). ``model_copy``: every other field stays the very same value."""
    workload = scenario.workload
    if workload.trace is not None:
        trace = workload.trace.model_copy(update={"path": copy(scenario.resolve(workload.trace.path))})
        workload = workload.model_copy(update={"trace": trace})
    if workload.inter_arrival is not None and workload.inter_arrival.swim:
        gaps = workload.inter_arrival.model_copy(
            update={"swim": copy(scenario.resolve(workload.inter_arrival.swim))}
        )
        workload = workload.model_copy(update={"inter_arrival": gaps})
    return scenario.model_copy(update={"workload": workload, "base_dir": Path(".")})


def read_plan(path: Path) -> list[PlannedRun]:
    """The runs :func:`write_plan` wrote, their scenarios' files found beside the plan."""
    plan: list[PlannedRun] = pickle.loads(path.read_bytes())
    here: dict[int, Scenario] = {}
    runs = []
    for run in plan:
        scenario = here.get(id(run.scenario))
        if scenario is None:
            scenario = here[id(run.scenario)] = run.scenario.model_copy(update={"base_dir": path.parent})
        runs.append(replace(run, scenario=scenario))
    return runs


def output_path(sweep_dir: Path, index: int) -> Path:
    return sweep_dir / OUTPUTS / f"{index}.pkl"


def run_index(plan: Path, index: int) -> Path:
    """Run the plan's run number ``index`` and write its output beside the plan (atomically: a reader sees the
    whole output or none); the output's path. A run that fails writes its traceback instead, so the sweep
    reports why."""
    runs = read_plan(plan)
    if not 0 <= index < len(runs):
        raise IndexError(f"{plan} plans {len(runs)} runs: there is no run {index}")
    try:
        output: RunOutput | str = run_one(runs[index])
    except Exception:  # reported by the sweep with the run's name, then the index fails
        output = traceback.format_exc()
        _write_atomically(output_path(plan.parent, index), pickle.dumps(output))
        raise
    path = output_path(plan.parent, index)
    _write_atomically(path, pickle.dumps(output))
    return path


def read_output(sweep_dir: Path, index: int) -> RunOutput | None:
    """The output of run ``index``, None while it has none; a run that failed raises its traceback."""
    path = output_path(sweep_dir, index)
    if not path.exists():
        return None
    output: RunOutput | str = pickle.loads(path.read_bytes())
    if isinstance(output, str):
        raise RuntimeError(f"run {index} of the sweep in {sweep_dir} failed:\n{output}")
    return output


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(data)
    os.replace(partial, path)
