"""The admin's job policy in the operator (operator/jobs/jobpolicy.py), the task pods' Pod Security and resource
hygiene, and the data volume's settings (docs/security.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mrsched.operator.jobs import jobpolicy
from mrsched.operator.jobs.jobpolicy import NotAllowed
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.pods import task_pod


def spec(namespace: str = "team-a", **extra: Any) -> JobSpec:
    workload = {"app": "pi", **extra.pop("workload", {})}
    body = {
        "metadata": {"name": "j", "namespace": namespace, "uid": "0123456789"},
        "spec": {"workload": workload, "output": {"path": "out"}, "maps": 2, "reduces": 1, **extra},
    }
    return JobSpec.from_resource(body)


def refusal(job: JobSpec, **config: Any) -> str:
    try:
        jobpolicy.check(job, OperatorConfig(**config))
    except NotAllowed as err:
        assert err.reason == "NotAllowed"
        return str(err)
    return ""


def test_by_default_no_job_brings_its_own_image_or_command() -> None:
    assert refusal(spec()) == ""
    evil = spec(
        workload={"app": "custom", "image": "evil.example/miner:latest", "command": ["sh", "-c", "rm"]}
    )
    assert "evil.example/miner:latest" in refusal(evil) and "allowed image prefixes: none" in refusal(evil)
    assert "workload.command needs a workload.image" in refusal(spec(workload={"command": ["sh"]}))


def test_allowed_image_prefixes() -> None:
    allowed = {"allowed_images": ("registry.example/team/", "ghcr.io/mrsched/")}
    ok = spec(workload={"app": "custom", "image": "registry.example/team/mr:1", "command": ["mr"]})
    assert refusal(ok, **allowed) == ""
    # A prefix is a prefix of the whole reference: another registry that merely contains it is refused.
    other = spec(
        workload={"app": "custom", "image": "evil.example/registry.example/team/x", "command": ["x"]}
    )
    assert "not allowed" in refusal(other, **allowed)
    assert refusal(other, allowed_images=("*",)) == ""
    # A command still needs an explicit image, even when every image is allowed.
    assert "needs a workload.image" in refusal(spec(workload={"command": ["sh"]}), allowed_images=("*",))


def test_spec_user_is_the_namespace_unless_the_admin_allows_others() -> None:
    assert refusal(spec(user="team-a")) == ""
    assert "differs from the job's namespace" in refusal(spec(user="alice"))
    assert refusal(spec(user="alice"), allow_user_override=True) == ""
    assert spec().user == "team-a" and not spec().user_set


def test_spec_policy_is_one_of_the_allowed() -> None:
    assert refusal(spec(policy="fifo")) == ""  # empty: any
    assert "not allowed" in refusal(spec(policy="fifo"), allowed_policies=("fair", "dara"))
    assert refusal(spec(policy="dara"), allowed_policies=("fair", "dara")) == ""
    assert (
        refusal(spec(), allowed_policies=("fair",)) == ""
    )  # the operator's own default is the admin's choice
    with pytest.raises(ValidationError, match="unknown policies"):
        OperatorConfig(allowed_policies=("fair", "bogus"))


def test_the_job_policy_comes_from_the_charts_environment() -> None:
    config = OperatorConfig.from_env(
        {
            "MRSCHED_ALLOWED_IMAGES": "registry.example/a/,registry.example/b/",
            "MRSCHED_ALLOW_USER_OVERRIDE": "false",
            "MRSCHED_ALLOWED_POLICIES": "",
            "MRSCHED_MAX_TASKS_PER_NAMESPACE": "40",
        }
    )
    assert config.allowed_images == ("registry.example/a/", "registry.example/b/")
    assert not config.allow_user_override and config.allowed_policies == ()
    assert config.max_tasks_per_namespace == 40


def pod(namespace: str, name: str, phase: str = "Running") -> dict[str, Any]:
    labels = {"mrsched.dev/task-type": "map", "mrsched.dev/task-index": "0", "mrsched.dev/attempt": "0"}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": "n1"},
        "status": {"phase": phase},
    }


def test_a_namespace_cap_counts_live_task_pods_and_keeps_the_policies_order() -> None:
    live = [pod("a", "a1"), pod("a", "a2", "Pending"), pod("a", "done", "Succeeded"), pod("b", "b1")]
    wanted = [pod("a", "new1"), pod("b", "new2"), pod("a", "new3"), pod("c", "new4"), pod("b", "new5")]
    kept = jobpolicy.within_namespace_caps(wanted, live, cap=3)
    assert [p["metadata"]["name"] for p in kept] == ["new1", "new2", "new4", "new5"]
    assert jobpolicy.within_namespace_caps(wanted, live, cap=0) == wanted


def test_task_pods_meet_pod_security_restricted_with_limits_on_every_resource() -> None:
    job = spec(resources={"map": {"cpu": "500m", "memory": "1Gi", "ephemeralStorage": "1Gi"}})
    manifest = task_pod(job, "map", 0, 0, OperatorConfig(), node="n1", explanation=None)
    pod_spec = manifest["spec"]
    (container,) = pod_spec["containers"]
    context = container["securityContext"]
    # restricted: https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"] and "add" not in context["capabilities"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    assert context["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod_spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert [v for v in pod_spec["volumes"] if set(v) - {"name", "persistentVolumeClaim"}] == []
    assert pod_spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "mrsched-data"
    assert pod_spec["automountServiceAccountToken"] is False
    resources = container["resources"]
    assert (
        resources["requests"]
        == resources["limits"]
        == {
            "cpu": "500m",
            "memory": "1024Mi",
            "ephemeral-storage": "1024Mi",
        }
    )
    reduce = task_pod(job, "reduce", 0, 0, OperatorConfig(), node="n1", explanation=None)
    assert reduce["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] == "256Mi"


def test_a_host_path_data_volume_only_when_set_and_never_created_root_owned() -> None:
    hostpath = task_pod(
        spec(), "map", 0, 0, OperatorConfig(data_host_path="/srv/mr"), node="n", explanation=None
    )
    assert hostpath["spec"]["volumes"] == [
        {"name": "data", "hostPath": {"path": "/srv/mr", "type": "Directory"}}
    ]
    claim = task_pod(spec(), "map", 0, 0, OperatorConfig(data_claim="shared"), node="n", explanation=None)
    assert claim["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "shared"}
    with pytest.raises(ValidationError, match="not both"):
        OperatorConfig(data_claim="shared", data_host_path="/srv/mr")


def test_a_kube_default_pod_keeps_the_jobs_node_selector_and_gets_the_worker_selector_as_affinity() -> None:
    """A worker selector of several terms, or with ``!=``/``in``/``!key``, cannot be a nodeSelector map (it
    was split at the first '=' into a malformed one): kube-scheduler gets it as the same required affinity."""
    config = OperatorConfig(node_selector="pool in (mr, batch),!retiring,tier!=gpu")
    manifest = task_pod(spec(nodeSelector={"disk": "ssd"}), "map", 0, 0, config, node=None, explanation=None)
    pod_spec = manifest["spec"]
    assert pod_spec["nodeSelector"] == {"disk": "ssd"}
    (term,) = pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {"key": "pool", "operator": "In", "values": ["batch", "mr"]},
        {"key": "retiring", "operator": "DoesNotExist"},
        {"key": "tier", "operator": "NotIn", "values": ["gpu"]},
    ]
    placed = task_pod(spec(), "map", 0, 0, config, node="n1", explanation=None)["spec"]
    assert "affinity" not in placed and "nodeSelector" not in placed  # ours, bound by nodeName
