"""The Helm chart (charts/mrsched) with the real helm and no cluster: lint, the values schema, the rendered
manifests/ and the chart's CRD in step with their sources, the Deployment's environment a valid operator
configuration, every value documented, an example per application."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mrsched.operator.model.config import OperatorConfig
from mrsched.policies import policy_names
from tests.chart.helmtool import (
    CHART,
    CRD_FILE,
    HEADER,
    LEASE,
    MANIFESTS,
    RENDER_ARGS,
    SIMULATOR_ONLY,
    Helm,
    by_kind,
    env_of,
)
from tests.operatorhelpers import CRDS, REPO

# --- offline: lint, render, schema, generated files -------------------------------------------------------


def test_chart_lints_strictly_and_renders_a_least_privilege_operator(helm: Helm) -> None:
    for extra in ((), ("--set", "watchNamespaces={jobs-a,jobs-b}", "--set", "serviceMonitor.enabled=true")):
        result = helm("lint", "--strict", str(CHART), *extra)
        assert "0 chart(s) failed" in result.stdout, result.stdout

    docs = helm.render()
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",  # the Lease
            "RoleBinding",
            "Role",  # probe pods
            "RoleBinding",
            "Role",  # Node Events, in namespace default
            "RoleBinding",
            "Role",  # jobs and their pods in the one watched namespace, default
            "RoleBinding",
            "ValidatingAdmissionPolicy",  # the job policy (docs/security.md)
            "ValidatingAdmissionPolicyBinding",
            "Service",
            "Deployment",
        ]
    )
    (deploy,) = by_kind(docs, "Deployment")
    assert deploy["metadata"]["namespace"] == "mrsched-system"
    assert deploy["spec"]["replicas"] == 1
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/mrsched/mrsched:0.1.0"
    assert container["command"] == ["mrsched"] and container["args"][0] == "run"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 9090, "health": 8080}
    assert container["resources"]["limits"] and container["resources"]["requests"]
    env = env_of(deploy)
    assert env["MRSCHED_POLICY"] == "fair"
    assert env["MRSCHED_NODE_SELECTOR"] == "mrsched.dev/worker=true"
    assert env["MRSCHED_NAMESPACES"] == "default"
    assert env["MRSCHED_ALLOWED_IMAGES"] == "" and env["MRSCHED_ALLOW_USER_OVERRIDE"] == "false"
    assert env["MRSCHED_DATA_CLAIM"] == "mrsched-data" and env["MRSCHED_DATA_HOST_PATH"] == ""
    assert env["MRSCHED_WORKER_IMAGE"] == "ghcr.io/mrsched/worker:0.1.0"
    assert env["MRSCHED_BIND_ADDRESS"] == "0.0.0.0"
    assert env["MRSCHED_LEASE_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}

    # Namespaced by default: pods are created and deleted only in the watched namespace.
    (cluster_role,) = by_kind(docs, "ClusterRole")
    granted = {(r, v) for rule in cluster_role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {v for r, v in granted if r == "pods"} == {"list", "watch"}  # read-only, cluster-wide
    (binding,) = by_kind(docs, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "default"
    ]

    # Cluster-wide on request (watchNamespaces empty): the job rules in the ClusterRole, only the Lease in a Role.
    docs = helm.render("--set-json", "watchNamespaces=[]")
    assert env_of(by_kind(docs, "Deployment")[0])["MRSCHED_NAMESPACES"] == ""
    (binding,) = by_kind(docs, "ValidatingAdmissionPolicyBinding")
    assert "matchResources" not in binding["spec"], "the job policy holds in every namespace"
    (cluster_role,) = by_kind(docs, "ClusterRole")
    granted = {(r, v) for rule in cluster_role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("mapreducejobs/status", "patch") in granted and ("pods", "create") in granted
    assert not any(v in {"*", "get", "update", "patch"} for r, v in granted if r == "nodes")
    # Pods: patch only to remove the task-record finalizer; never get (pods are listed), update or exec.
    assert {v for r, v in granted if r == "pods"} == {"list", "watch", "create", "delete", "patch"}
    roles = {r["metadata"]["name"].rsplit("-", 1)[-1]: r for r in by_kind(docs, "Role")}
    assert sorted(roles) == ["events", "leader", "probes"]
    assert {r["metadata"]["namespace"] for n, r in roles.items() if n != "events"} == {"mrsched-system"}
    assert [rule.get("resourceNames") for rule in roles["leader"]["rules"]] == [None, [LEASE]]
    # Probe pods only in the release namespace: create, list, delete; never get, patch, exec.
    assert [(r["resources"], r["verbs"]) for r in roles["probes"]["rules"]] == [
        (["pods"], ["create", "list", "delete"])
    ]
    # Events about Nodes can only live in `default`: create there, nothing else.
    assert roles["events"]["metadata"]["namespace"] == "default"
    assert [(r["resources"], r["verbs"]) for r in roles["events"]["rules"]] == [(["events"], ["create"])]

    # Namespaced: the ClusterRole keeps only what is cluster-wide by nature; a Role in each watched namespace.
    docs = helm.render("--set", "watchNamespaces={jobs-a,jobs-b}", "--set", "serviceMonitor.enabled=true")
    (cluster_role,) = by_kind(docs, "ClusterRole")
    assert [(rule["resources"], rule["verbs"]) for rule in cluster_role["rules"]] == [
        (["nodes"], ["list", "watch"]),
        (["pods"], ["list", "watch"]),
        (["customresourcedefinitions"], ["list", "watch"]),
        (["nodeprofiles", "appprofiles", "policyprofiles"], ["list", "create"]),
        (["nodeprofiles/status", "appprofiles/status", "policyprofiles/status"], ["patch"]),
        (["namespaces"], ["list", "watch"]),
    ]
    job_roles = [r for r in by_kind(docs, "Role") if r["metadata"]["name"].endswith("-jobs")]
    assert sorted(r["metadata"]["namespace"] for r in job_roles) == ["jobs-a", "jobs-b"]
    assert env_of(by_kind(docs, "Deployment")[0])["MRSCHED_NAMESPACES"] == "jobs-a,jobs-b"
    (monitor,) = by_kind(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"


def test_the_deployments_environment_is_a_valid_operator_configuration(helm: Helm) -> None:
    """Every MRSCHED_* variable the chart sets is an operator setting (a renamed field fails here, not in a
    cluster), and values reach the operator's configuration as given."""
    docs = helm.render(
        "--set",
        "policy=capacity,heartbeatSeconds=2.5,nodeSelectorLabel=pool=mr,watchNamespaces={a,b}",
        "--set",
        "mapSlots=4,reduceSlots=1,pendingTimeoutSeconds=120,worker.command={python,-m,mrworker}",
        "--set",
        "worker.image=registry.example/worker:1,worker.pullPolicy=Always,data.claim=shared",
        "--set",
        "prometheus.url=http://prometheus:9090,prometheus.nodeLabel=instance,prometheus.maxAgeSeconds=45",
        "--set",
        "prometheus.rateWindow=2m,prometheus.queries.load1=node_load5,metrics.port=9100",
        "--set",
        "probes.mode=always,probes.scale=0.25,probes.repeats=3",
    )
    env = _downward(env_of(by_kind(docs, "Deployment")[0]))
    process_only = {"MRSCHED_BIND_ADDRESS", "MRSCHED_LEASE_NAMESPACE"}  # flags' defaults, not settings
    settings = {k: v for k, v in env.items() if k.startswith("MRSCHED_") and k not in process_only}
    unknown = {k for k in settings if k.removeprefix("MRSCHED_").lower() not in OperatorConfig.model_fields}
    assert unknown == set(), "the chart sets variables the operator does not read"
    config = OperatorConfig.from_env(settings)
    assert config.policy == "capacity" and config.heartbeat_s == 2.5
    assert config.node_selector == "pool=mr" and config.namespaces == ("a", "b")
    assert (config.map_slots, config.reduce_slots, config.pending_timeout_s) == (4, 1, 120.0)
    assert config.worker_command == ("python", "-m", "mrworker")
    assert config.worker_image == "registry.example/worker:1" and config.image_pull_policy == "Always"
    assert config.data_claim == "shared" and config.metrics_port == 9100
    assert config.prometheus_url == "http://prometheus:9090" and config.metrics_node_label == "instance"
    assert config.metrics_max_age_s == 45 and config.metrics_rate_window == "2m"
    assert config.metrics_queries == {"load1": "node_load5"}
    assert (config.probe_nodes, config.probe_scale, config.probe_repeats) == ("always", 0.25, 3)
    assert config.probes_namespace == "mrsched-system"  # probe pods where the probe Role allows them

    defaults = OperatorConfig.from_env(
        {
            k: v
            for k, v in _downward(env_of(by_kind(helm.render(), "Deployment")[0])).items()
            if k not in process_only
        }
    )
    # Apart from the image tag, the release namespace for probes and the watched namespaces (the chart installs
    # namespaced, watching `default`; the bare operator watches what --namespace names, else all), the chart's
    # defaults are the operator's.
    differ = {"worker_image", "probe_namespace", "namespaces"}
    assert defaults.model_dump(exclude=differ) == OperatorConfig().model_dump(exclude=differ)
    assert defaults.namespaces == ("default",)


def _downward(env: dict[str, Any]) -> dict[str, Any]:
    """What the downward API puts into the variables the chart fills from the pod's own namespace."""
    namespace = {"fieldRef": {"fieldPath": "metadata.namespace"}}
    return {k: "mrsched-system" if v == namespace else v for k, v in env.items()}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (("--set", "policy=bogus"), "/policy"),
        (("--set", "policy=greedy-informed"), "/policy"),
        (("--set", "heartbeatSeconds=0"), "/heartbeatSeconds"),
        (("--set", "heartbeatSeconds=600"), "/heartbeatSeconds"),
        (("--set-string", "heartbeatSeconds=fast"), "/heartbeatSeconds"),
        # helm --set keeps a fraction a string; the schema accepts decimal strings, the template checks them.
        (("--set", "heartbeatSeconds=75.5"), "heartbeatSeconds must be above 0 and at most 60, not 75.5"),
        (("--set", "image.pullPolicy=Sometimes"), "/image/pullPolicy"),
        (("--set", "watchNamespaces={Not_A_Namespace}"), "/watchNamespaces/0"),
        (("--set", "polcy=fifo"), "polcy"),
        (("--set", "data.hostPath=/srv/data"), "data.claim and data.hostPath are both set"),
        (("--set", "jobPolicy.allowedPolicies={bogus}"), "/jobPolicy/allowedPolicies/0"),
        (("--set", "jobPolicy.allowedImages={a b}"), "/jobPolicy/allowedImages/0"),
    ],
)
def test_values_schema_rejects_bad_values_with_a_message(
    helm: Helm, values: tuple[str, ...], message: str
) -> None:
    result = helm(*RENDER_ARGS, *values, check=False)
    assert result.returncode != 0, result.stdout[:500]
    if message.startswith("/") or message == "polcy":
        assert "values don't meet the specifications of the schema" in result.stderr, result.stderr
    assert message in result.stderr, result.stderr


def test_schema_policies_are_the_operators() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert sorted(schema["properties"]["policy"]["enum"]) == sorted(set(policy_names()) - SIMULATOR_ONLY)
    assert schema["additionalProperties"] is False
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(defaults) <= set(schema["properties"]), "every value is in the schema"


def test_every_value_is_documented() -> None:
    def paths(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
        for key, value in values.items():
            if isinstance(value, dict) and value and key not in ("resources", "queries"):
                yield from paths(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    docs = (REPO / "docs" / "helm.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert [p for p in paths(values) if f"`{p}`" not in docs] == []


def test_generated_files_are_up_to_date(helm: Helm) -> None:
    for crd in CRDS.glob("*.yaml"):
        chart_crd = CHART / "crds" / crd.name
        assert chart_crd.exists() and chart_crd.read_bytes() == crd.read_bytes(), (
            f"{chart_crd} differs from crds/{crd.name}: run `make manifests`"
        )
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(p.name for p in CRDS.glob("*.yaml"))
    rendered = HEADER + helm(*RENDER_ARGS).stdout
    committed = (MANIFESTS / "mrsched.yaml").read_text()
    assert committed == rendered, "manifests/mrsched.yaml is stale: run `make manifests` and commit it"


def test_there_is_an_example_per_built_in_application() -> None:
    crd = yaml.safe_load((CRDS / CRD_FILE).read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    apps = set(spec["properties"]["workload"]["properties"]["app"]["enum"]) - {"custom"}
    examples = {p.stem: yaml.safe_load(p.read_text()) for p in (MANIFESTS / "examples").glob("*.yaml")}
    assert set(examples) == apps
    for name, job in examples.items():
        assert job["kind"] == "MapReduceJob" and job["metadata"]["name"] == name
        assert job["spec"]["workload"]["app"] == name


# --- on the local control plane ---------------------------------------------------------------------------
