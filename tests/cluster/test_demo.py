"""`make demo`, as README.md types it, keeps working: a small job end to end on its own throw-away control plane
(e2e/test_journeys.py counts on this test for that README command)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_runs_a_job_end_to_end_and_prints_its_status_and_output() -> None:
    # make's own set-up targets (Debian packages, .venv, binaries) find everything there, as CI made it.
    proc = subprocess.run(
        ["make", "demo"], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"wordcount\s+Succeeded\s+4/4\s+2/2\s+fair", out), out[-3000:]
    assert "Type:                  Succeeded" in out  # kubectl describe's conditions
    assert '"policy": "fair"' in out  # each pod's placement explanation
    top = re.search(r"== output: (\d+) distinct words, (\d+) in all", out)
    assert top is not None and int(top.group(1)) > 100 and int(top.group(2)) > 100_000
    assert "cluster torn down" in out
