"""A large run's per-job records go to jobs.json.gz beside results.json (issue 24: committed results stay small),
and read back whole; a small run keeps them inline."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from mrsched.simulator import report
from mrsched.simulator.report import JOBS_FILE, load_results, write_results


def _summary(jobs: int) -> dict[str, Any]:
    records = [{"id": f"j{i}", "user": "u", "submit_s": float(i), "finish_s": i + 2.5} for i in range(jobs)]
    return {
        "scenario": "s",
        "policies": {
            "fifo": {"makespan_s": 10.0, "jobs": records},
            "fair": {"makespan_s": 11.0, "jobs": [dict(r, finish_s=r["finish_s"] + 1) for r in records]},
        },
    }


def test_a_large_runs_job_records_leave_results_json_and_read_back_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "JOBS_INLINE_MAX", 5)
    summary = _summary(6)
    kept = copy.deepcopy(summary)
    write_results(summary, tmp_path)
    assert summary == kept, "the caller's summary (plots read it next) is left as it was"
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert all("jobs" not in p and p["jobs_file"] == JOBS_FILE for p in on_disk["policies"].values())
    assert on_disk["policies"]["fair"]["makespan_s"] == 11.0, "the aggregates stay in results.json"
    assert load_results(tmp_path) == kept
    first = (tmp_path / JOBS_FILE).read_bytes()
    assert first[4:8] == bytes(4), (
        "no timestamp in the gzip header (MTIME, RFC 1952): a re-run, the same bytes"
    )
    write_results(summary, tmp_path)
    assert (tmp_path / JOBS_FILE).read_bytes() == first
    assert json.loads(gzip.decompress(first))["fifo"][5]["id"] == "j5"


def test_a_small_run_keeps_its_job_records_inline_and_drops_a_stale_jobs_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "JOBS_INLINE_MAX", 5)
    write_results(_summary(6), tmp_path)
    assert (tmp_path / JOBS_FILE).exists()
    small = _summary(5)
    write_results(small, tmp_path)
    assert not (tmp_path / JOBS_FILE).exists()
    assert json.loads((tmp_path / "results.json").read_text()) == small == load_results(tmp_path)
