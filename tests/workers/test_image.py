"""The container image: non-root, standard library only, writes nothing outside its data volume."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.workers.data import input_bytes, read_counts, text_corpus
from tests.workers.image import WORKERS, Worker, image_spec


def test_image_runs_as_non_root_from_a_slim_python() -> None:
    spec = image_spec()
    text = (WORKERS / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text
    assert spec.user.split(":")[0].isdigit() and int(spec.user.split(":")[0]) != 0, "numeric non-root user"
    assert spec.entrypoint == ["python", "-m", "mrworker"]
    assert spec.env["PYTHONDONTWRITEBYTECODE"] == "1", "no .pyc written on a read-only root filesystem"


def test_worker_needs_only_the_standard_library() -> None:
    # -S: no site-packages, so only the standard library and PYTHONPATH (the image's /opt/mrworker) remain.
    probe = "import mrworker.cli, mrworker.apps, sys; print(sorted(sys.modules))"
    env = {"PYTHONPATH": str(WORKERS), "PATH": os.environ["PATH"]}
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    third_party = (
        {m.split(".")[0] for m in eval(out.stdout)} - set(sys.stdlib_module_names) - {"mrworker", "__main__"}
    )
    assert third_party == set()


def test_a_job_writes_only_to_the_data_volume_and_termination_log(tmp_path: Path) -> None:
    image_root = tmp_path / "image"
    shutil.copytree(WORKERS, image_root, ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(p.relative_to(image_root) for p in image_root.rglob("*"))
    worker = Worker(tmp_path / "data", tmp_path / "scratch", workers=image_root)
    corpus = text_corpus(worker.data / "text", files=2, lines=300)

    worker.job("wordcount", maps=2, reduces=2, output="counts", args=["--input", "text"])

    assert read_counts(worker.data / "counts") == Counter(input_bytes(corpus).split())
    assert sorted(p.relative_to(image_root) for p in image_root.rglob("*")) == before, "image files untouched"
