"""A job never succeeds with another job's output (issue 20, defect 1): real worker processes (process mode)
writing real files, through the operator on the local control plane.

Before: the output path was free text at the root of the volume, the first part file linked won, and the job
commit accepted an old ``_SUCCESS``; a second job writing where a first had written succeeded with the first's
parts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import EmulateFactory, delete_namespace
from tests.kubehelpers import Kube
from tests.operatorhelpers import (
    SMALL_TASKS,
    OperatorProcess,
    apply,
    job_manifest,
    start_operator,
    wait_phase,
)

DONE = ("Succeeded", "Failed")


def pi(name: str, samples: int, **output: Any) -> dict[str, Any]:
    return job_manifest(
        name,
        workload={"app": "pi", "parameters": {"samples": samples}},
        output={"path": "shared/pi", **output},
        maps=2,
        reduces=1,
        resources=SMALL_TASKS,
    )


def samples_in(output: Path) -> int:
    values = dict(line.split("\t") for line in (output / "part-r-00000").read_text().splitlines())
    return int(values["samples"])


def test_an_existing_output_is_refused_unless_the_job_says_overwrite(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    emulate({"medium": 1}, mode="process")
    output = tmp_path / "data" / "data" / "namespaces" / namespace / "shared" / "pi"

    apply(kube, namespace, pi("first", 1000))
    first = wait_phase(kube, namespace, "first", DONE, 120)
    assert first["status"]["phase"] == "Succeeded", first["status"]
    assert first["status"]["outputPath"] == f"namespaces/{namespace}/shared/pi"
    assert samples_in(output) == 2 * 1000
    assert (output / "_SUCCESS").read_text().strip() == first["metadata"]["uid"]
    before = {p.name: p.read_bytes() for p in output.iterdir()}

    # Another job into the same output: refused at once (no retries), the first job's output untouched.
    apply(kube, namespace, pi("second", 3000))
    second = wait_phase(kube, namespace, "second", DONE, 120)
    assert (second["status"]["phase"], second["status"]["reason"]) == ("Failed", "OutputExists"), second[
        "status"
    ]
    assert (
        "overwrite" in second["status"]["message"] and first["metadata"]["uid"] in second["status"]["message"]
    )
    assert second["status"]["maps"]["failed"] <= 2, "not retried up to the backoff limit"
    assert {p.name: p.read_bytes() for p in output.iterdir()} == before

    # The same job name again (a re-run: a new object, a new uid): refused too.
    kube.kubectl("delete", "mrj", "first", "-n", namespace, "--wait=true")
    apply(kube, namespace, pi("first", 5000))
    rerun = wait_phase(kube, namespace, "first", DONE, 120)
    assert rerun["status"]["reason"] == "OutputExists", rerun["status"]
    assert {p.name: p.read_bytes() for p in output.iterdir()} == before

    # overwrite: true replaces it, and the output is wholly the new job's.
    apply(kube, namespace, pi("third", 7000, overwrite=True))
    third = wait_phase(kube, namespace, "third", DONE, 120)
    assert third["status"]["phase"] == "Succeeded", third["status"]
    assert samples_in(output) == 2 * 7000
    assert (output / "_SUCCESS").read_text().strip() == third["metadata"]["uid"]
    assert sorted(p.name for p in output.iterdir()) == ["_JOB", "_SUCCESS", "part-r-00000"]


def test_two_namespaces_with_the_same_output_path_never_meet(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    emulate({"medium": 1}, mode="process")
    other = f"{namespace}-b"
    kube.core.create_namespace({"metadata": {"name": other}}, _preload_content=False).data  # noqa: B018
    second_operator = start_operator(kube, other, tmp_path / "logs-b")
    try:
        apply(kube, namespace, pi("pi", 1000))
        apply(kube, other, pi("pi", 4000))
        for ns, samples in ((namespace, 1000), (other, 4000)):
            job = wait_phase(kube, ns, "pi", DONE, 120)
            assert job["status"]["phase"] == "Succeeded", job["status"]
            output = tmp_path / "data" / "data" / "namespaces" / ns / "shared" / "pi"
            assert samples_in(output) == 2 * samples, f"{ns} has its own output"
    finally:
        second_operator.stop()
        delete_namespace(kube, other)
