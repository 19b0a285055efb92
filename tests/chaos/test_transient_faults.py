"""Transient faults are waited out, permanent ones end the job with the reason, and a job no node can run says
why (issue 20, defect 6), through the operator on the local control plane with the node emulator's kubelet
behaviours (image pulls that fail for a while, activeDeadlineSeconds).

Before: the first ErrImagePull failed the whole job; nothing bounded a hung task; a job whose node selector
matched no node stayed Pending forever, visible only in a debug log.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import OperatorProcess, apply, get_job, job_manifest, task_pods, wait_phase

DONE = ("Succeeded", "Failed")
MB = 1 << 20
REQUESTS = {"map": {"cpu": "500m", "memory": "256Mi"}, "reduce": {"cpu": "500m", "memory": "256Mi"}}


def pi(name: str, **spec: Any) -> dict[str, Any]:
    return job_manifest(
        name,
        workload={"app": "pi", "parameters": {"samples": 1000}, **spec.pop("workload", {})},
        output={"path": f"out/{name}"},
        maps=2,
        reduces=1,
        **{"resources": REQUESTS, **spec},
    )


def condition(job: dict[str, Any], kind: str) -> dict[str, Any]:
    return {c["type"]: c for c in (job.get("status") or {}).get("conditions") or []}.get(kind, {})


def unplaceable_job(kube: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    job = get_job(kube, namespace, name)
    return job if condition(job, "Unplaceable").get("status") == "True" else None


def events(kube: Kube, namespace: str, name: str) -> str:
    return kube.kubectl(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}", "-o", "json"
    ).stdout


def test_a_job_no_node_can_run_says_why_and_runs_once_one_can(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    (node,) = emulate({"medium": 1}).nodes
    apply(kube, namespace, pi("picky", nodeSelector={"disk": "nvme"}))
    apply(kube, namespace, pi("greedy", resources={"map": {"cpu": "64", "memory": "1Gi"}}))
    apply(kube, namespace, pi("plain"))

    picky = wait_for(lambda: unplaceable_job(kube, namespace, "picky"), 30, "picky's Unplaceable condition")
    assert condition(picky, "Unplaceable")["reason"] == "NoMatchingNode"
    assert "disk=nvme" in condition(picky, "Unplaceable")["message"]
    assert picky["status"]["phase"] == "Pending"
    assert "NoMatchingNode" in events(kube, namespace, "picky")
    greedy = wait_for(
        lambda: unplaceable_job(kube, namespace, "greedy"), 30, "greedy's Unplaceable condition"
    )
    assert condition(greedy, "Unplaceable")["reason"] == "RequestsExceedAllocatable"
    assert "Insufficient cpu" in condition(greedy, "Unplaceable")["message"]
    # The others were never in the way.
    assert wait_phase(kube, namespace, "plain", DONE, 120)["status"]["phase"] == "Succeeded"

    kube.kubectl("label", "node", node, "disk=nvme")  # a node that fits joins
    job = wait_phase(kube, namespace, "picky", DONE, 120)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert condition(job, "Unplaceable")["status"] == "False"


def test_an_image_that_fails_to_pull_for_a_while_is_waited_out(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulator = emulate({"medium": 1})
    flaky = "registry.example/mrsched/worker:flaky"
    emulator.client.fail_image_pulls(flaky, 12.0, backoff_s=1.0)
    apply(kube, namespace, pi("patient", workload={"image": flaky}))

    def backing_off() -> list[str] | None:
        reasons = [
            ((cs.get("state") or {}).get("waiting") or {}).get("reason", "")
            for p in task_pods(kube, namespace, "patient")
            for cs in (p.get("status") or {}).get("containerStatuses") or []
        ]
        return reasons if any(r in ("ErrImagePull", "ImagePullBackOff") for r in reasons) else None

    wait_for(backing_off, 30, "the pull to fail")
    assert (get_job(kube, namespace, "patient").get("status") or {}).get("phase") != "Failed"
    job = wait_phase(kube, namespace, "patient", DONE, 120)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"]["failed"] == 0

    # A name that can never be pulled fails its job at once, saying why.
    apply(kube, namespace, pi("hopeless", workload={"image": "Registry.Example/NO SUCH:image"}))
    job = wait_phase(kube, namespace, "hopeless", DONE, 60)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "PodCannotStart"), job["status"]
    assert "InvalidImageName" in job["status"]["message"]


def test_a_task_past_its_deadline_is_killed_and_counted_as_a_failure(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"medium": 1})
    # Model mode: one map of ~70 s (300 MB of wordcount on a 1x core) under a 3 s deadline, twice.
    apply(
        kube,
        namespace,
        job_manifest(
            "hung",
            workload={"app": "wordcount"},
            input={"paths": ["in"], "bytes": 300 * MB},
            output={"path": "out"},
            maps=1,
            reduces=1,
            backoffLimit=1,
            taskDeadlineSeconds=3,
            resources=REQUESTS,
        ),
    )
    job = wait_phase(kube, namespace, "hung", DONE, 90)
    assert (job["status"]["phase"], job["status"]["reason"]) == ("Failed", "BackoffLimitExceeded"), job[
        "status"
    ]
    assert "failed 2 times" in job["status"]["message"]
    assert "(DeadlineExceeded)" in job["status"]["message"], job["status"]["message"]
    pods = json.loads(
        kube.kubectl("get", "pods", "-n", namespace, "-l", "mrsched.dev/job=hung", "-o", "json").stdout
    )
    assert {p["status"].get("reason") for p in pods["items"]} == {"DeadlineExceeded"}
