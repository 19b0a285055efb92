"""The job the chaos scenarios run on real data (process mode), and what its end must look like whatever the
faults cost: the output byte for byte, committed by this job, each task recorded succeeded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tests.operatorhelpers import SMALL_TASKS, job_manifest
from tests.workers.data import input_bytes, read_counts

REDUCES = 2


def wordcount(name: str, maps: int) -> dict[str, Any]:
    """wordcount over ``text`` in the job's namespace, into ``out/<name>``; reduces start after every map."""
    return job_manifest(
        name,
        workload={"app": "wordcount"},
        input={"paths": ["text"]},
        output={"path": f"out/{name}"},
        maps=maps,
        reduces=REDUCES,
        reduceSlowStart=1.0,
        resources=SMALL_TASKS,
    )


def expect_correct_output(job: dict[str, Any], data: Path, corpus: Path) -> None:
    """Succeeded; the counts equal an independent count of the corpus; the output holds exactly the job's claim,
    its parts and a ``_SUCCESS`` naming this job's uid; every task recorded succeeded in ``status.tasks``."""
    name, maps = job["metadata"]["name"], job["spec"]["maps"]
    assert job["status"]["phase"] == "Succeeded", job["status"]
    output = data / "out" / name
    assert read_counts(output) == Counter(input_bytes(corpus).split())
    assert sorted(p.name for p in output.iterdir()) == [
        "_JOB",
        "_SUCCESS",
        *(f"part-r-{i:05d}" for i in range(REDUCES)),
    ]
    assert (output / "_SUCCESS").read_text().strip() == job["metadata"]["uid"]
    tasks = job["status"]["tasks"]
    assert tasks["map"]["succeeded"] == f"0-{maps - 1}", tasks
    assert tasks["reduce"]["succeeded"] == f"0-{REDUCES - 1}", tasks
    assert (
        job["status"]["maps"]["succeeded"] == maps
        and job["status"]["reducesCompleted"] == f"{REDUCES}/{REDUCES}"
    )
