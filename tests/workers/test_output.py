"""Output ownership, as real worker processes see it: a job never succeeds with another job's or an older run's
output, and attempts of one task never share files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from mrworker.cli import main
from tests.workers.data import input_bytes, input_lines, parts, read_counts, text_corpus
from tests.workers.image import Worker


def _tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` with its inode and a hash of its content: what "untouched" means."""
    return {
        str(p.relative_to(root)): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _wordcount(
    worker: Worker, uid: str, *, output: str = "counts", reduces: int = 2, extra: tuple[str, ...] = ()
) -> list[str]:
    """The arguments of a wordcount job over ``text`` with job uid ``uid`` and its own job directory."""
    return [
        "--app",
        "wordcount",
        "--maps",
        "2",
        "--reduces",
        str(reduces),
        "--input",
        "text",
        "--output",
        output,
        "--job-uid",
        uid,
        "--job-dir",
        f".mrsched/jobs/{uid}",
        *extra,
    ]


def _run_job(
    worker: Worker,
    args: list[str],
    *,
    maps: int = 2,
    reduces: int = 2,
    commit: bool = True,
    env: dict[str, str] | None = None,
) -> None:
    for m in range(maps):
        worker.run("map", "--index", str(m), *args, env=env)
    for r in range(reduces):
        worker.run("reduce", "--index", str(r), *args, env=env)
    if commit:
        worker.run("commit-job", *args, env=env)


def _stop_when(proc: subprocess.Popen[str], ready: Callable[[], bool], timeout: float = 60.0) -> None:
    """Freeze ``proc`` (SIGSTOP, as a node that stops responding) as soon as ``ready()`` holds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the worker finished before it could be stopped: {proc.communicate()}"
        assert time.monotonic() < deadline, "the worker never reached the point to stop it at"
        time.sleep(0.002)
    proc.send_signal(signal.SIGSTOP)


def _siblings(worker: Worker, name: str) -> list[str]:
    """Claim staging and set-aside directories an output left beside itself."""
    return sorted(p.name for p in worker.data.iterdir() if p.name.startswith(f".{name}."))


def test_rerun_into_an_existing_output_is_refused_and_leaves_it_untouched(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=2, lines=300)
    first = _wordcount(worker, "job-1")
    _run_job(worker, first)
    before = _tree(worker.data / "counts")
    assert (worker.data / "counts" / "_SUCCESS").read_text() == "job-1\n"

    second = _wordcount(worker, "job-2")
    for command in (["map", "--index", "0"], ["reduce", "--index", "0"], ["commit-job"]):
        result = worker.run(*command, *second, expect=3)
        assert result.report["status"] == "failed"
        message = "output counts already exists (written by job job-1); set spec.output.overwrite: true"
        assert message in result.report["error"] and message in result.stderr
    assert _tree(worker.data / "counts") == before, "nothing of the old output is touched"
    assert not (worker.data / ".mrsched" / "jobs" / "job-2").exists(), "the refused job wrote nothing"
    assert _siblings(worker, "counts") == []


def test_overwrite_replaces_the_old_output_entirely(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=2, lines=300, seed=1)
    _run_job(worker, _wordcount(worker, "job-1", reduces=3), reduces=3)
    assert len(parts(worker.data / "counts")) == 3

    new = text_corpus(worker.data / "text", files=2, lines=200, seed=2)  # same names, other words
    _run_job(worker, _wordcount(worker, "job-2"), env={"MRSCHED_OVERWRITE": "TRUE"})

    assert [p.name for p in parts(worker.data / "counts")] == ["part-r-00000", "part-r-00001"]
    assert read_counts(worker.data / "counts") == Counter(input_bytes(new).split()), "no old part survives"
    assert (worker.data / "counts" / "_SUCCESS").read_text() == "job-2\n"
    assert (worker.data / "counts" / "_JOB").read_text() == "job-2\n"
    assert _siblings(worker, "counts") == [], "the set-aside old output is deleted"


def test_overwrite_from_the_environment_replaces_output_written_by_hand(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=1, lines=100)
    old = worker.data / "counts"
    old.mkdir()
    (old / "part-r-00000").write_text("stale\t1\n")
    (old / "part-r-00001").write_text("stale\t2\n")
    (old / "_SUCCESS").write_text("")  # what the old worker wrote: it once let any job succeed here

    args = _wordcount(worker, "job-1")
    refused = worker.run("map", "--index", "0", *args, expect=3)
    assert "output counts already exists (not written by a mrsched job)" in refused.report["error"]
    assert (old / "part-r-00000").read_text() == "stale\t1\n"

    for m in range(2):
        worker.run("map", "--index", str(m), *args, env={"MRSCHED_OVERWRITE": "yes"})
    for r in range(2):
        worker.run("reduce", "--index", str(r), *args)
    worker.run("commit-job", *args)
    assert b"stale" not in b"".join(p.read_bytes() for p in parts(old))
    assert (old / "_SUCCESS").read_text() == "job-1\n"


def test_a_file_at_the_output_path_is_refused_unless_overwrite(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=1, lines=100)
    (worker.data / "counts").write_text("not a directory\n")
    args = _wordcount(worker, "job-1")
    assert "not written by a mrsched job" in worker.run("map", *args, expect=3).report["error"]
    assert (worker.data / "counts").read_text() == "not a directory\n"
    worker.run("map", *args, "--overwrite")
    assert (worker.data / "counts" / "_JOB").read_text() == "job-1\n"


def test_a_second_job_cannot_commit_into_the_first_jobs_output(worker: Worker) -> None:
    corpus = text_corpus(worker.data / "text", files=2, lines=300)
    first, second = _wordcount(worker, "job-1"), _wordcount(worker, "job-2")
    _run_job(worker, first, commit=False)  # job 1 has claimed the output and committed its tasks
    claimed = _tree(worker.data / "counts")

    for command in (["map", "--index", "1"], ["reduce", "--index", "1"], ["commit-job"]):
        result = worker.run(*command, *second, expect=3)
        assert "written by job job-1" in result.report["error"]
    assert _tree(worker.data / "counts") == claimed

    worker.run("commit-job", *first)
    assert read_counts(worker.data / "counts") == Counter(input_bytes(corpus).split())
    assert (worker.data / "counts" / "_SUCCESS").read_text() == "job-1\n"


def test_a_job_whose_output_was_taken_over_cannot_publish_or_commit(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=2, lines=300)
    first, second = _wordcount(worker, "job-1"), _wordcount(worker, "job-2", extra=("--overwrite",))
    for m in range(2):
        worker.run("map", "--index", str(m), *first)
    worker.run("reduce", "--index", "0", *first)
    _run_job(worker, second)  # job 2 replaces job 1's output while job 1 still runs

    replaced = _tree(worker.data / "counts")

    taken = "output counts was taken over by job job-2 while this job ran"
    assert taken in worker.run("reduce", "--index", "1", *first, expect=3).report["error"]
    assert taken in worker.run("commit-job", *first, expect=3).report["error"]
    # Overwrite replaces an output only before a job's first task: job 1 cannot take it back.
    again = worker.run("reduce", "--index", "1", *first, "--overwrite", expect=3)
    assert taken in again.report["error"]
    assert _tree(worker.data / "counts") == replaced, "job 1 left job 2's output alone"
    assert (worker.data / "counts" / "_SUCCESS").read_text() == "job-2\n"


def test_commit_with_a_part_missing_fails_even_beside_an_old_success(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=2, lines=300)
    args = _wordcount(worker, "job-1")
    for m in range(2):
        worker.run("map", "--index", str(m), *args)
    worker.run("reduce", "--index", "0", *args)
    (worker.data / "counts" / "_SUCCESS").write_text("job-0\n")  # left by someone else: never counts

    failed = worker.run("commit-job", *args, expect=1)
    assert "cannot commit the job: 1 part(s) missing, e.g. part-r-00001" in failed.report["error"]
    assert (worker.data / "counts" / "_SUCCESS").read_text() == "job-0\n"
    assert (worker.data / "counts" / "_temporary").exists(), "a failed commit keeps the committed tasks"


def test_commit_job_completes_an_interrupted_commit_and_can_run_twice(worker: Worker) -> None:
    corpus = text_corpus(worker.data / "text", files=2, lines=300)
    args = _wordcount(worker, "job-1", reduces=3)
    _run_job(worker, args, reduces=3, commit=False)
    out = worker.data / "counts"
    # An earlier commit attempt moved one part into place, then its pod died.
    os.rename(out / "_temporary" / "job-1" / "part-r-00001", out / "part-r-00001")

    worker.run("commit-job", *args)
    done = _tree(out)
    assert sorted(done) == ["_JOB", "_SUCCESS", "part-r-00000", "part-r-00001", "part-r-00002"]
    assert read_counts(out) == Counter(input_bytes(corpus).split())
    assert not (worker.data / ".mrsched" / "jobs" / "job-1").exists(), "the job directory is removed"

    again = worker.run("commit-job", *args)
    assert again.report["status"] == "succeeded" and _tree(out) == done, "a second commit changes nothing"

    (out / "part-r-00002").unlink()
    gone = worker.run("commit-job", *args, expect=1)
    assert "the job was committed but 1 part(s) are gone from the output" in gone.report["error"]


def test_map_only_parts_appear_only_when_the_job_commits(worker: Worker) -> None:
    args = ["--app", "teragen", "--maps", "2", "--reduces", "0", "--rows", "1000", "--output", "gen"]
    for m in range(2):
        worker.run("map", "--index", str(m), *args)
    assert parts(worker.data / "gen", "m") == [], "committed tasks wait in the job's own area"
    worker.run("commit-job", *args)
    assert [p.name for p in parts(worker.data / "gen", "m")] == ["part-m-00000", "part-m-00001"]
    assert len(input_lines(worker.data / "gen")) == 2000
    assert (worker.data / "gen" / "_SUCCESS").read_text() == "manual\n"


def test_duplicated_reduce_attempts_publish_exactly_one_correct_part(worker: Worker) -> None:
    corpus = text_corpus(worker.data / "text", files=2, lines=2000)
    args = _wordcount(worker, "job-1", reduces=1, extra=("--sort-buffer-mb", "1"))
    for m in range(2):
        worker.run("map", "--index", str(m), *args)
    # Two attempts of reduce 0 at once (a NotReady node's container still running beside its replacement).
    procs = [
        worker.start("reduce", "--index", "0", "--attempt", "0", "--attempt-id", pod, *args)[0]
        for pod in ("pod-a", "pod-b")
    ]
    for proc in procs:
        proc.communicate(timeout=120)
        assert proc.returncode == 0
    committed = worker.data / "counts" / "_temporary" / "job-1"
    assert sorted(p.name for p in committed.iterdir()) == ["_attempts", "part-r-00000"]
    assert list((committed / "_attempts").iterdir()) == [], "the loser discarded its copy"
    worker.run("commit-job", *args)
    assert read_counts(worker.data / "counts") == Counter(input_bytes(corpus).split())


def test_a_replacement_attempt_leaves_its_frozen_predecessor_alone(worker: Worker) -> None:
    worker.job("teragen", maps=1, reduces=0, output="in", args=["--rows", "200000"])
    records = input_lines(worker.data / "in")
    args = ["--app", "sort", "--maps", "1", "--reduces", "2", "--input", "in", "--output", "out"]
    args += ["--sort-buffer-mb", "1", "--job-uid", "job-1", "--job-dir", "jobs/job-1"]
    scratch = worker.data / "jobs" / "job-1" / "_temporary"

    first, _ = worker.start("map", "--attempt", "0", "--attempt-id", "pod-a", *args)
    _stop_when(first, lambda: (scratch / "map-00000.pod-a" / "spill-0002").exists())
    spills = sorted(p.name for p in (scratch / "map-00000.pod-a").iterdir())
    try:
        worker.run("map", "--attempt", "1", "--attempt-id", "pod-b", *args)
        assert sorted(p.name for p in (scratch / "map-00000.pod-a").iterdir()) == spills, (
            "the replacement never touched its predecessor's scratch"
        )
        assert not (scratch / "map-00000.pod-b").exists(), "the replacement cleaned up only its own"
    finally:
        first.send_signal(signal.SIGCONT)
    first.communicate(timeout=120)
    assert first.returncode == 0, "the predecessor, undisturbed, finishes and discards its duplicate output"
    for r in range(2):
        worker.run("reduce", "--index", str(r), *args)
    worker.run("commit-job", *args)
    out = sorted(line for p in parts(worker.data / "out") for line in p.read_bytes().split(b"\n")[:-1])
    assert out == sorted(records)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--attempt-id", "../x"], {}, "--attempt-id '../x' must be one path component"),
        (["--attempt-id", ".."], {}, "--attempt-id '..' must be one path component"),
        (["--attempt-id", ""], {}, "--attempt-id '' must be one path component"),
        ([], {"MRSCHED_ATTEMPT_ID": "."}, "--attempt-id '.' must be one path component"),
        (["--job-uid", "a/b"], {}, "--job-uid 'a/b' must be one path component"),
        ([], {"MRSCHED_JOB_UID": "x\ny"}, "--job-uid 'x\\ny' must be one path component"),
        ([], {"MRSCHED_OVERWRITE": "maybe"}, "MRSCHED_OVERWRITE='maybe' is not a boolean"),
    ],
)
def test_unsafe_ids_are_usage_errors(
    worker: Worker, args: list[str], env: dict[str, str], message: str
) -> None:
    text_corpus(worker.data / "text", files=1, lines=10)
    result = worker.run(
        "map", "--app", "wordcount", "--input", "text", "--output", "o", *args, env=env, expect=2
    )
    assert message in result.report["error"]
    assert not (worker.data / "o").exists(), "nothing is claimed on a usage error"


def test_job_uid_and_attempt_id_from_the_environment(worker: Worker) -> None:
    text_corpus(worker.data / "text", files=1, lines=50)
    env = {"MRSCHED_JOB_UID": "0b6f-uid", "MRSCHED_ATTEMPT_ID": "pod-uid-7", "MRSCHED_REDUCES": "1"}
    worker.run("map", "--app", "wordcount", "--input", "text", "--output", "o", env=env)
    worker.run("reduce", "--app", "wordcount", "--output", "o", env=env)
    assert (worker.data / "o" / "_JOB").read_text() == "0b6f-uid\n"
    assert (worker.data / "o" / "_temporary" / "0b6f-uid" / "part-r-00000").exists()
    worker.run("commit-job", "--app", "wordcount", "--output", "o", env=env)
    assert (worker.data / "o" / "_SUCCESS").read_text() == "0b6f-uid\n"


def test_main_maps_an_output_conflict_to_exit_3(tmp_path: Path) -> None:
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "notes.txt").write_text("written by hand\n")
    log = tmp_path / "termination-log"
    previous = signal.getsignal(signal.SIGTERM)  # main installs its own handler
    try:
        args = ["map", "--app", "pi", "--samples", "10", "--output", "o", "--termination-log", str(log)]
        code = main([*args, "--data-dir", str(tmp_path)])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 3
    report = json.loads(log.read_text())
    assert report["status"] == "failed"
    assert report["error"].startswith("output o already exists (not written by a mrsched job)")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["notes.txt"]
