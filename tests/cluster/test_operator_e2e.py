"""End to end through the operator: real worker processes on emulated nodes (process mode), outputs checked
against independent computations."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    CRDS,
    SMALL_TASKS,
    OperatorProcess,
    apply,
    apply_crds,
    get_job,
    job_manifest,
    start_operator,
    task_pods,
    wait_phase,
)
from tests.workers.data import input_bytes, input_lines, read_counts, text_corpus


def test_wordcount_and_terasort_through_the_operator(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    nodes = emulate({"small": 1, "large": 1}, mode="process")
    # Process mode maps the pod's "data" volume to <data_dir>/data; a job's paths are in its namespace's home.
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    corpus = text_corpus(data / "text", files=2, lines=2000)

    apply(
        kube,
        namespace,
        job_manifest(
            "wordcount",
            workload={"app": "wordcount"},
            input={"paths": ["text"]},
            output={"path": "out/wc"},
            maps=3,
            reduces=2,
            reduceSlowStart=0.5,
            resources=SMALL_TASKS,
        ),
    )
    apply(
        kube,
        namespace,
        job_manifest(
            "teragen",
            workload={"app": "teragen", "parameters": {"rows": 20000}},
            output={"path": "tera-in"},
            maps=2,
            reduces=0,
            resources={"map": {"cpu": "500m", "memory": "256Mi"}},
        ),
    )
    job = wait_phase(kube, namespace, "wordcount", ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert read_counts(data / "out" / "wc") == Counter(input_bytes(corpus).split())
    # The job commit ran after the last reduce: _SUCCESS written, map outputs and scratch removed.
    assert (data / "out" / "wc" / "_SUCCESS").exists()
    assert sorted(p.name for p in (data / "out" / "wc").iterdir()) == [
        "_JOB",
        "_SUCCESS",
        "part-r-00000",
        "part-r-00001",
    ]
    assert job["status"]["maps"] == {"total": 3, "pending": 0, "running": 0, "succeeded": 3, "failed": 0}
    assert job["status"]["reducesCompleted"] == "2/2"
    # No spec.user: the namespace. Input by paths, no split hosts: every map's locality is unknown.
    assert job["status"]["user"] == namespace
    assert job["status"]["locality"] == {
        "nodeLocal": 0.0,
        "rackLocal": 0.0,
        "offRack": 0.0,
        "unknown": 1.0,
        "mapAttempts": 3,
    }
    assert job["status"]["starvationSeconds"] >= 0 and job["status"]["reduceIdleSeconds"] >= 0
    conditions = {c["type"]: c["status"] for c in job["status"]["conditions"]}
    assert conditions == {
        "Scheduled": "True",
        "MapsCompleted": "True",
        "Succeeded": "True",
        "Failed": "False",
    }
    for pod in task_pods(kube, namespace, "wordcount"):
        assert pod["spec"]["nodeName"] in nodes.nodes, "bound only to worker nodes"
        assert '"policy": "fair"' in pod["metadata"]["annotations"]["mrsched.dev/placement"]

    assert (
        wait_phase(kube, namespace, "teragen", ("Succeeded", "Failed"), 180)["status"]["phase"] == "Succeeded"
    )
    apply(
        kube,
        namespace,
        job_manifest(
            "terasort",
            workload={"app": "terasort"},
            input={"paths": ["tera-in"]},
            output={"path": "tera-out"},
            maps=3,
            reduces=3,
            sortBufferMB=1,
            resources=SMALL_TASKS,
        ),
    )
    job = wait_phase(kube, namespace, "terasort", ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    records = input_lines(data / "tera-in")
    out = b"".join(p.read_bytes() for p in sorted((data / "tera-out").glob("part-r-*"))).split(b"\n")[:-1]
    assert len(records) == 40000 and out == sorted(records)


def test_invalid_jobs_are_rejected_with_the_schemas_message(kube: Kube, namespace: str) -> None:
    apply_crds(kube)
    cases = [
        (
            dict(workload={"app": "teragen", "parameters": {"rows": 10}}, output={"path": "o"}, reduces=2),
            "map-only: set reduces to 0",
        ),
        (dict(workload={"app": "wordcount"}, output={"path": "o"}), "set input.paths"),
        (dict(workload={"app": "grep"}, input={"paths": ["x"]}, output={"path": "o"}), "grep needs"),
        (
            dict(workload={"app": "wordcount"}, input={"paths": ["x"]}, output={"path": "o"}, maps=0),
            "spec.maps: Invalid value: 0",
        ),
        (dict(workload={"app": "nosuch"}, output={"path": "o"}), 'Unsupported value: "nosuch"'),
    ]
    # Quantities the apiserver's CEL quantity library refuses (each once stopped every job's scheduling).
    pi: dict[str, Any] = dict(workload={"app": "pi", "parameters": {"samples": 10}}, output={"path": "o"})
    for kind, field, value in [
        ("map", "cpu", "abc"),
        ("reduce", "memory", "12xyz"),
        ("map", "cpu", "0"),
        ("map", "memory", "-1Gi"),
        ("reduce", "cpu", 0),
    ]:
        message = f"spec.resources.{kind}.{field}: Invalid value"
        cases.append(({**pi, "resources": {kind: {field: value}}}, message))
    # Paths that would leave the data volume (another tenant's output, /etc).
    relative = "must be a path relative to the data volume, without '..'"
    cases += [
        (
            {**pi, "output": {"path": "../other-namespace/out"}},
            f'spec.output.path: Invalid value: "../other-namespace/out": {relative}',
        ),
        ({**pi, "output": {"path": "/etc"}}, relative),
        ({**pi, "output": {"path": "a/../../b"}}, relative),
        (
            dict(workload={"app": "wordcount"}, input={"paths": ["ok", "../x"]}, output={"path": "o"}),
            'spec.input.paths[1]: Invalid value: "../x"',
        ),
        (
            dict(
                workload={"app": "wordcount"},
                input={"splits": [{"path": "/etc/passwd", "length": 9}]},
                output={"path": "o"},
            ),
            'spec.input.splits[0].path: Invalid value: "/etc/passwd"',
        ),
    ]
    for spec, message in cases:
        result = apply(kube, namespace, job_manifest("bad", **spec), check=False)
        assert result.returncode != 0 and message in result.stderr, (spec, result.stderr)

    apply(
        kube,
        namespace,
        job_manifest("good", workload={"app": "pi", "parameters": {"samples": 10}}, output={"path": "o"}),
    )
    changed = job_manifest(
        "good", workload={"app": "pi", "parameters": {"samples": 20}}, output={"path": "o"}
    )
    result = apply(kube, namespace, changed, check=False)
    assert result.returncode != 0 and "spec is immutable" in result.stderr


def _without_quantity_rules(schema: object) -> object:
    """The CRD as an older chart shipped it: no CEL rule on the CPU and memory quantities."""
    if isinstance(schema, dict):
        return {
            k: _without_quantity_rules(v)
            for k, v in schema.items()
            if not (k == "x-kubernetes-validations" and "x-kubernetes-int-or-string" in schema)
        }
    if isinstance(schema, list):
        return [_without_quantity_rules(v) for v in schema]
    return schema


def test_a_job_the_operator_cannot_read_fails_alone_and_the_others_run(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    """A job with a malformed quantity (created while the CRD had no rule for it, as before an upgrade) and
    another tenant's pod with a legal but unusual one (memory 100m: a tenth of a byte) used to make every round
    fail with ValueError, so that no job got a phase. Now the bad job alone fails, saying why, and a valid job
    applied next runs to the end."""
    emulate({"medium": 1}, mode="process")
    crd = yaml.safe_load((CRDS / "mrsched.dev_mapreducejobs.yaml").read_text())
    kube.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=yaml.safe_dump(_without_quantity_rules(crd)),
    )
    try:
        bad = job_manifest(
            "bad-cpu",
            workload={"app": "pi", "parameters": {"samples": 10}},
            output={"path": "bad"},
            resources={"map": {"cpu": "abc"}},
        )
        wait_for(lambda: apply(kube, namespace, bad, check=False).returncode == 0, 30, "the old CRD to serve")
    finally:
        apply_crds(kube)
    kube.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "another-tenant"},
                "spec": {
                    "nodeName": "a-node-that-is-not-ours",
                    "containers": [
                        {
                            "name": "c",
                            "image": "app",
                            "resources": {"requests": {"cpu": "100m", "memory": "100m"}},
                        }
                    ],
                },
            }
        ),
    )
    apply(
        kube,
        namespace,
        job_manifest("good", workload={"app": "pi", "parameters": {"samples": 10}}, output={"path": "good"}),
    )
    job = wait_phase(kube, namespace, "bad-cpu", ("Succeeded", "Failed"), 60)
    assert job["status"]["phase"] == "Failed" and job["status"]["reason"] == "InvalidSpec", job["status"]
    assert "spec.resources.map.cpu: 'abc' is not a Kubernetes quantity" in job["status"]["message"]
    failed = {c["type"]: c for c in job["status"]["conditions"]}["Failed"]
    assert failed["status"] == "True" and failed["reason"] == "InvalidSpec"
    assert not task_pods(kube, namespace, "bad-cpu")
    job = wait_phase(kube, namespace, "good", ("Succeeded", "Failed"), 120)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    events = kube.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=bad-cpu"
    ).stdout
    assert "InvalidSpec" in events
    assert 'mrsched_job_errors_total{stage="spec"} 1.0' in operator.metrics()


def test_failed_task_is_retried_and_exhausted_backoff_fails_the_job(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess, tmp_path: Path
) -> None:
    emulate({"medium": 1}, mode="process")
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    apply(
        kube,
        namespace,
        job_manifest(
            "late-input",
            workload={"app": "wordcount"},
            input={"paths": ["arrives-later"]},
            output={"path": "late"},
            maps=1,
            reduces=1,
            backoffLimit=5,
        ),
    )
    apply(
        kube,
        namespace,
        job_manifest(
            "bad-regex",
            workload={"app": "grep", "parameters": {"pattern": "a("}},
            input={"paths": ["x"]},
            output={"path": "never"},
            maps=1,
            reduces=1,
            backoffLimit=1,
        ),
    )

    def failed_once() -> bool:
        return (get_job(kube, namespace, "late-input").get("status") or {}).get("maps", {}).get(
            "failed", 0
        ) >= 1

    wait_for(failed_once, 60, "the first map attempt to fail")
    text_corpus(data / "arrives-later", files=1, lines=100)
    job = wait_phase(kube, namespace, "late-input", ("Succeeded", "Failed"), 120)
    assert job["status"]["phase"] == "Succeeded" and job["status"]["maps"]["failed"] >= 1

    job = wait_phase(kube, namespace, "bad-regex", ("Succeeded", "Failed"), 120)
    assert job["status"]["reason"] == "BackoffLimitExceeded"
    assert "task map-00000 failed 2 times" in job["status"]["message"]
    assert "not a valid regular expression" in job["status"]["message"]
    failed = {c["type"]: c for c in job["status"]["conditions"]}["Failed"]
    assert failed["status"] == "True" and "map-00000" in failed["message"]
    assert len(task_pods(kube, namespace, "bad-regex")) == 2, "two attempts, then no more"
    events = kube.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=bad-regex"
    ).stdout
    assert "TaskFailed" in events and "BackoffLimitExceeded" in events

    table = kube.kubectl("get", "mrj", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "MAPS", "REDUCES", "POLICY", "USER", "LOCAL", "AGE"]
    # No spec.user: the job's owner is its namespace (seed 004's users).
    assert any(
        line.split()[:6] == ["late-input", "Succeeded", "1/1", "1/1", "fair", namespace] for line in table[1:]
    )

    kube.kubectl("delete", "mrj", "late-input", "-n", namespace, "--wait=true")
    wait_for(lambda: not task_pods(kube, namespace, "late-input"), 60, "the deleted job's pods to go")


def test_a_namespace_quota_and_the_operators_task_cap_bound_a_tenant_without_failing_its_jobs(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    """A ResourceQuota of 2 pods: the apiserver refuses the operator's third pod, the task waits and runs later,
    the job succeeds. Then, the quota gone, the operator's own cap (3 per namespace) holds on nodes with room for
    many more: never more than 3 of the namespace's task pods live at once."""
    apply_crds(kube)
    emulate({"large": 2}, mode="process")
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "tasks", "namespace": namespace},
        "spec": {"hard": {"pods": "2"}},
    }
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(quota))
    operator = start_operator(kube, namespace, tmp_path / "logs", extra=("--max-tasks-per-namespace", "3"))
    pi: dict[str, Any] = dict(workload={"app": "pi", "parameters": {"samples": 1000000}}, reduces=1)
    most = 0

    def live_tasks() -> int:
        pods = task_pods(kube, namespace, "capped")
        return sum(p["status"].get("phase") in ("Pending", "Running") for p in pods)

    try:
        apply(
            kube, namespace, job_manifest("quota", maps=6, output={"path": "q"}, resources=SMALL_TASKS, **pi)
        )
        job = wait_phase(kube, namespace, "quota", ("Succeeded", "Failed"), 180)
        assert job["status"]["phase"] == "Succeeded", (job["status"], operator.logs()[-3000:])
        assert 'mrsched_binding_errors_total{reason="ResourceQuota"}' in operator.metrics()
        kube.kubectl("delete", "resourcequota", "tasks", "-n", namespace)

        apply(
            kube,
            namespace,
            job_manifest("capped", maps=10, output={"path": "c"}, resources=SMALL_TASKS, **pi),
        )
        deadline = time.monotonic() + 180
        while (get_job(kube, namespace, "capped").get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            assert time.monotonic() < deadline, "the capped job did not finish"
            most = max(most, live_tasks())
            time.sleep(0.2)
        status = get_job(kube, namespace, "capped")["status"]
        assert status["phase"] == "Succeeded", status
    finally:
        operator.stop()
    assert most == 3, f"at most 3 live task pods, and the cap was reached: saw {most}"
