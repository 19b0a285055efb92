"""Commit semantics: killed, retried and duplicated attempts never corrupt or duplicate output."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.workers.data import input_lines, parts
from tests.workers.image import Worker, kill_when

JOB = ["--maps", "2", "--reduces", "2", "--input", "in", "--output", "out", "--sort-buffer-mb", "1"]


def _teragen(worker: Worker, rows: int) -> list[bytes]:
    worker.job("teragen", maps=1, reduces=0, output="in", args=["--rows", str(rows)])
    return input_lines(worker.data / "in")


def _intermediate(worker: Worker) -> Path:
    """The job directory by default, for the job uid a run by hand has ("manual")."""
    return worker.data / "out" / "_temporary" / "manual" / "intermediate"


def _work_dir(worker: Worker, task: str, attempt: int) -> Path:
    return _intermediate(worker) / "_temporary" / f"{task}.{task[0]}{task[-5:]}-a{attempt}"


def _finish(worker: Worker, skip_map: int | None = None) -> list[bytes]:
    for m in range(2):
        if m != skip_map:
            worker.run("map", "--app", "sort", "--index", str(m), *JOB)
    for r in range(2):
        worker.run("reduce", "--app", "sort", "--index", str(r), *JOB)
    worker.run("commit-job", "--app", "sort", *JOB)
    return sorted(line for p in parts(worker.data / "out") for line in p.read_bytes().split(b"\n")[:-1])


def test_map_killed_mid_write_then_retried_gives_exact_output(worker: Worker) -> None:
    records = _teragen(worker, 200_000)
    proc, _ = worker.start("map", "--app", "sort", "--index", "0", "--attempt", "0", *JOB)
    kill_when(proc, lambda: (_work_dir(worker, "map-00000", 0) / "spill-0003").exists())
    assert not (_intermediate(worker) / "map-00000").exists(), "a killed attempt commits nothing"
    assert _work_dir(worker, "map-00000", 0).exists(), "SIGKILL left the attempt's partial spills behind"

    retry = worker.run("map", "--app", "sort", "--index", "0", "--attempt", "1", *JOB)
    assert retry.report["status"] == "succeeded"
    # The retry leaves its predecessor's scratch alone (it may still be running on a lost node) ...
    assert _work_dir(worker, "map-00000", 0).exists(), "the retry never touches another attempt's scratch"
    assert _finish(worker, skip_map=0) == sorted(records)
    assert not _intermediate(worker).exists(), "... and the job commit removes it with the job directory"


def test_duplicate_map_attempt_after_commit_changes_nothing(worker: Worker) -> None:
    records = _teragen(worker, 20_000)
    worker.run("map", "--app", "sort", "--index", "1", "--attempt", "0", *JOB)
    committed = _intermediate(worker) / "map-00001" / "out"
    before = committed.stat()
    duplicate = worker.run("map", "--app", "sort", "--index", "1", "--attempt", "1", *JOB)
    assert duplicate.report["status"] == "succeeded"
    after = committed.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "the first commit stands"
    assert _finish(worker, skip_map=1) == sorted(records)


def test_reduce_killed_mid_write_then_retried(worker: Worker) -> None:
    records = _teragen(worker, 200_000)
    for m in range(2):
        worker.run("map", "--app", "sort", "--index", str(m), *JOB)
    staged = worker.data / "out" / "_temporary" / "manual" / "_attempts" / "part-r-00000.r00000-a0"
    proc, _ = worker.start("reduce", "--app", "sort", "--index", "0", "--attempt", "0", *JOB)
    kill_when(proc, lambda: staged.exists() and staged.stat().st_size > 1 << 20)
    assert not (worker.data / "out" / "part-r-00000").exists(), "a killed reduce publishes no part"
    assert not (worker.data / "out" / "_temporary" / "manual" / "part-r-00000").exists()

    worker.run("reduce", "--app", "sort", "--index", "0", "--attempt", "1", *JOB)
    worker.run("reduce", "--app", "sort", "--index", "1", *JOB)
    worker.run("reduce", "--app", "sort", "--index", "1", "--attempt", "1", *JOB)  # a duplicate: no-op
    worker.run("commit-job", "--app", "sort", *JOB)
    out = sorted(line for p in parts(worker.data / "out") for line in p.read_bytes().split(b"\n")[:-1])
    assert out == sorted(records)
    assert sorted(p.name for p in (worker.data / "out").iterdir()) == [
        "_JOB",
        "_SUCCESS",
        "part-r-00000",
        "part-r-00001",
    ]


def test_sigterm_ends_the_attempt_cleanly_with_a_report(worker: Worker) -> None:
    _teragen(worker, 200_000)
    proc, log = worker.start("map", "--app", "sort", "--index", "0", *JOB)
    kill_when(proc, lambda: (_work_dir(worker, "map-00000", 0) / "spill-0002").exists(), sig=signal.SIGTERM)
    assert proc.returncode == 143
    assert "SIGTERM" in log.read_text() and '"status":"failed"' in log.read_text()
    assert not _work_dir(worker, "map-00000", 0).exists(), "SIGTERM cleans the attempt's scratch space"
