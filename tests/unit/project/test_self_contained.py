"""The repository is self-contained: a fresh clone, with nothing beside it, has every file it reads.

The SWIM traces the scenarios and tests replay are kept in ``bench/data/traces/swim/`` (copied unchanged from
the SWIM project's published workload samples; see the PROVENANCE note there), not in a sibling directory.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mrsched.simulator.scenario import Scenario, load_scenario

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "bench" / "scenarios"
SWIM_DATA = REPO / "bench" / "data" / "traces" / "swim"
SWIM_FILES = (
    "FB-2009_samples_24_times_1hr_0.tsv",
    "FB-2010_samples_24_times_1hr_0.tsv",
    "LICENSE",
    "README.md",
)

# Spelled in two pieces so that this file does not match itself.
FORBIDDEN = ("../" + "shared", "shared/" + "data/")
# Generated results (bench/results/) may still name the old sibling paths until they are regenerated: they are
# outputs of runs, not inputs any run reads.
EXCLUDED_PREFIXES = ("bench/results/",)


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True, timeout=60
    ).stdout
    return [name for name in out.decode("utf-8").split("\0") if name]


def test_no_tracked_file_names_a_directory_beside_the_repository() -> None:
    offenders = []
    for name in _tracked_files():
        if name.startswith(EXCLUDED_PREFIXES):
            continue
        path = REPO / name
        if not path.is_file():  # deleted in the working tree, or a submodule
            continue
        text = path.read_bytes()
        offenders += [f"{name}: {word}" for word in FORBIDDEN if word.encode() in text]
    assert not offenders, "files outside the repository named in:\n" + "\n".join(offenders)


def test_the_swim_traces_and_their_licence_are_in_the_repository() -> None:
    for name in (*SWIM_FILES, "PROVENANCE.md"):
        assert (SWIM_DATA / name).is_file(), f"{name} missing from {SWIM_DATA}"


def _named_files(scenario: Scenario) -> list[str]:
    """The files a scenario reads: its trace and the SWIM trace its inter-arrival gaps come from."""
    workload = scenario.workload
    named = []
    if workload.trace is not None:
        named.append(workload.trace.path)
    if workload.inter_arrival is not None:
        named.append(workload.inter_arrival.swim)
    return named


WITH_FILES = [path for path in sorted(SCENARIOS.glob("*.yaml")) if _named_files(load_scenario(path))]


def test_some_scenarios_read_trace_files() -> None:
    assert len(WITH_FILES) >= 2, "expected the SWIM-day and DARA scenarios among those reading a trace"


@pytest.mark.parametrize("path", WITH_FILES, ids=[p.stem for p in WITH_FILES])
def test_scenario_trace_files_exist_inside_the_repository(path: Path) -> None:
    scenario = load_scenario(path)
    for relative in _named_files(scenario):
        resolved = scenario.resolve(relative)
        assert resolved.is_relative_to(REPO), f"{relative} resolves to {resolved}, outside {REPO}"
        assert resolved.is_file(), f"{relative} resolves to {resolved}, which does not exist"
