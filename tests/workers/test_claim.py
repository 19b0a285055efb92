"""The output claim and the job commit under concurrency: attempts of one job all find the output theirs, of
two jobs exactly one wins; concurrent commits of one job complete it once. Real files, real threads and
processes racing on the same directory."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mrworker.committer import OutputDir, commit_job
from mrworker.errors import OutputConflict
from mrworker.layout import Attempt

ROUNDS = 15
RACERS = 8


def _race(calls: list[Callable[[], None]]) -> list[BaseException | None]:
    """Run ``calls`` in threads released together; what each raised (None: it returned)."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            calls[i]()
        except BaseException as err:
            outcomes[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def _leftovers(output: Path) -> list[str]:
    return sorted(p.name for p in output.parent.iterdir() if p.name.startswith(f".{output.name}."))


def _old_output(output: Path) -> None:
    (output / "_temporary" / "old" / "_attempts").mkdir(parents=True)
    (output / "_JOB").write_text("old-job\n")
    (output / "_SUCCESS").write_text("old-job\n")
    for i in range(3):
        (output / f"part-r-{i:05d}").write_text(f"old {i}\n")


@pytest.mark.parametrize("existing", ["missing", "empty"])
def test_concurrent_attempts_of_one_job_all_claim(tmp_path: Path, existing: str) -> None:
    for n in range(ROUNDS):
        output = tmp_path / f"round-{n}" / "out"
        if existing == "empty":
            output.mkdir(parents=True)
        attempts = [OutputDir(output, "job-a", f"pod-{i}") for i in range(RACERS)]
        assert _race([lambda a=a: a.claim(overwrite=False) for a in attempts]) == [None] * RACERS
        assert sorted(p.name for p in output.iterdir()) == ["_JOB"]
        assert (output / "_JOB").read_text() == "job-a\n"
        assert _leftovers(output) == [], "every staged claim was renamed or removed"


def test_concurrent_claims_of_two_jobs_exactly_one_wins(tmp_path: Path) -> None:
    wins = set()
    for n in range(ROUNDS):
        output = tmp_path / f"round-{n}" / "out"
        attempts = [OutputDir(output, f"job-{i % 2}", f"pod-{i}") for i in range(RACERS)]
        outcomes = _race([lambda a=a: a.claim(overwrite=False) for a in attempts])
        winner = (output / "_JOB").read_text().strip()
        wins.add(winner)
        for attempt, outcome in zip(attempts, outcomes, strict=True):
            if attempt.job_uid == winner:
                assert outcome is None
            else:
                assert isinstance(outcome, OutputConflict) and f"written by job {winner}" in str(outcome)
        assert _leftovers(output) == []
    assert wins <= {"job-0", "job-1"}


def _claim_in_process(output: str, uid: str, attempt: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        OutputDir(Path(output), uid, attempt).claim(overwrite=False)
        results.put((uid, "claimed"))
    except OutputConflict:
        results.put((uid, "conflict"))


def test_concurrent_claims_of_two_jobs_in_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    for n in range(5):
        output = tmp_path / f"round-{n}" / "out"
        barrier, results = ctx.Barrier(RACERS), ctx.Queue()
        procs = [
            ctx.Process(
                target=_claim_in_process, args=(str(output), f"job-{i % 2}", f"p{i}", barrier, results)
            )
            for i in range(RACERS)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        outcomes = sorted(results.get(timeout=10) for _ in procs)
        winner = (output / "_JOB").read_text().strip()
        loser = "job-1" if winner == "job-0" else "job-0"
        assert outcomes == sorted([(winner, "claimed")] * 4 + [(loser, "conflict")] * 4)
        assert _leftovers(output) == []


def test_concurrent_overwrite_by_one_jobs_attempts_replaces_once(tmp_path: Path) -> None:
    for n in range(ROUNDS):
        output = tmp_path / f"round-{n}" / "out"
        _old_output(output)
        attempts = [OutputDir(output, "job-a", f"pod-{i}") for i in range(RACERS)]
        assert _race([lambda a=a: a.claim(overwrite=True) for a in attempts]) == [None] * RACERS
        assert sorted(p.name for p in output.iterdir()) == ["_JOB"], "nothing of the old output is left"
        assert (output / "_JOB").read_text() == "job-a\n"
        assert _leftovers(output) == [], "the set-aside old output is deleted"


def test_overwrite_never_replaces_a_claim_of_the_same_job(tmp_path: Path) -> None:
    output = tmp_path / "out"
    first = OutputDir(output, "job-a", "pod-0")
    first.claim(overwrite=True)
    (output / "part-r-00000").write_text("committed\n")
    OutputDir(output, "job-a", "pod-1").claim(overwrite=True)
    assert (output / "part-r-00000").read_text() == "committed\n"


def test_a_started_job_does_not_take_back_its_output_even_with_overwrite(tmp_path: Path) -> None:
    output = tmp_path / "out"
    OutputDir(output, "job-a", "pod-0").claim(overwrite=False)
    OutputDir(output, "job-b", "pod-1").claim(overwrite=True)
    with pytest.raises(OutputConflict, match="was taken over by job job-b while this job ran"):
        OutputDir(output, "job-a", "pod-2").claim(overwrite=True, started=lambda: True)
    assert (output / "_JOB").read_text() == "job-b\n"


def test_concurrent_commits_of_one_job_complete_it_once(tmp_path: Path) -> None:
    names = [f"part-r-{i:05d}" for i in range(20)]
    for n in range(ROUNDS):
        output, job_dir = tmp_path / f"round-{n}" / "out", tmp_path / f"round-{n}" / "job"
        OutputDir(output, "job-a", "task").claim(overwrite=False)
        area = output / "_temporary" / "job-a"
        area.mkdir(parents=True)
        (job_dir / "map-00000").mkdir(parents=True)
        for name in names:
            (area / name).write_text(f"{name}\n")
        committers = [OutputDir(output, "job-a", f"commit-{i}") for i in range(RACERS)]
        outcomes = _race(
            [lambda c=c, d=job_dir: commit_job(c, d, names, overwrite=False) for c in committers]
        )
        assert outcomes == [None] * RACERS
        assert sorted(p.name for p in output.iterdir()) == ["_JOB", "_SUCCESS", *names]
        assert all((output / name).read_text() == f"{name}\n" for name in names)
        assert (output / "_SUCCESS").read_text() == "job-a\n"
        assert not job_dir.exists()


def test_prepare_leaves_another_attempts_scratch_alone(tmp_path: Path) -> None:
    def attempt(attempt_id: str) -> Attempt:
        return Attempt(tmp_path / "job", tmp_path / "out", "map", 3, "job-a", attempt_id)

    old, new = attempt("pod-a"), attempt("pod-b")
    old.prepare()
    (old.work_dir / "spill-0000").write_bytes(b"still being written")
    new.prepare()
    assert old.work_dir != new.work_dir and old.work_dir.name == "map-00003.pod-a"
    assert (old.work_dir / "spill-0000").read_bytes() == b"still being written"
    new.cleanup()
    assert old.work_dir.exists() and not new.work_dir.exists()
    assert old.temporary_part(False).name == "part-r-00003.pod-a" != new.temporary_part(False).name
