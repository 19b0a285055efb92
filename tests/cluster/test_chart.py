"""The Helm chart (charts/mrsched) on the local control plane: its examples and manifests accepted by the API
server, install and uninstall, and RBAC that is enough for the operator (a job run to the end as the chart's
ServiceAccount) and no more (what it lacks is refused). What needs helm alone is tests/chart/."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mrsched.localcluster.toolchain import Toolchain
from tests.chart.helmtool import (
    CHART,
    DATA_CLAIM,
    LEASE,
    MANIFESTS,
    MODES,
    Helm,
)
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    SMALL_TASKS,
    apply,
    apply_crds,
    job_manifest,
    start_operator,
    task_pods,
    wait_phase,
)
from tests.workers.data import input_bytes, read_counts, text_corpus


def test_examples_and_manifests_are_accepted_by_the_api_server(kube: Kube, namespace: str) -> None:
    apply_crds(kube)
    result = kube.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(MANIFESTS / "examples"))
    assert result.stdout.count("created (server dry run)") == len(
        list((MANIFESTS / "examples").glob("*.yaml"))
    )
    # manifests/ as `kubectl apply -f manifests/` would install it: the namespace for real (it is first), the
    # rest through the server's validation and admission without persisting anything.
    kube.kubectl("apply", "-f", str(MANIFESTS / "00-namespace.yaml"))
    try:
        result = kube.kubectl(
            "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", str(MANIFESTS)
        )
        for obj in (
            "deployment.apps/mrsched",
            "clusterrole.rbac.authorization.k8s.io/mrsched-mrsched-system",
        ):
            assert obj in result.stdout, result.stdout
        # The namespace warns of any pod template short of the restricted Pod Security Standard.
        assert "PodSecurity" not in result.stderr, result.stderr
    finally:
        kube.kubectl("delete", "namespace", "mrsched-system", "--wait=false")


@pytest.fixture
def account(kube: Kube, namespace: str, helm: Helm) -> Iterator[str]:
    """The chart installed in the test's namespace, watching only that namespace, with no operator pod (no
    kubelet here would run its image: the tests run the operator as a process with the pod's identity).
    Yields the name of its ServiceAccount."""
    apply_crds(kube)
    name = f"mrsched-{namespace}"
    helm(
        "install",
        name,
        str(CHART),
        "--kubeconfig",
        str(kube.kubeconfig),
        "--namespace",
        namespace,
        "--set",
        f"watchNamespaces={{{namespace}}}",
        "--set",
        "replicas=0",
    )
    yield name  # the ServiceAccount is named after the release
    helm("uninstall", name, "--kubeconfig", str(kube.kubeconfig), "--namespace", namespace, check=False)


def test_install_and_uninstall(kube: Kube, namespace: str, helm: Helm) -> None:
    apply_crds(kube)
    name = f"mrsched-{namespace}"
    common = ("--kubeconfig", str(kube.kubeconfig), "--namespace", namespace)
    refused = helm("install", name, str(CHART), *common, "--set", "policy=bogus", check=False)
    assert refused.returncode != 0 and "/policy" in refused.stderr, refused.stderr

    # No node matches the operator pod's selector: nothing may run it here, the objects are what is checked.
    helm("install", name, str(CHART), *common, "--set-string", "nodeSelector.mrsched\\.dev/no-such-node=true")
    status = json.loads(helm("status", name, *common, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed"
    assert "kubectl apply -n default" in status["info"]["notes"]
    namespaced = [
        f"serviceaccount/{name}",
        f"deployment.apps/{name}",
        f"service/{name}-metrics",
        f"role.rbac.authorization.k8s.io/{name}-leader",
        f"rolebinding.rbac.authorization.k8s.io/{name}-leader",
        f"role.rbac.authorization.k8s.io/{name}-probes",
        f"rolebinding.rbac.authorization.k8s.io/{name}-probes",
    ]
    cluster = [
        f"clusterrole.rbac.authorization.k8s.io/{name}-{namespace}",
        f"clusterrolebinding.rbac.authorization.k8s.io/{name}-{namespace}",
    ]
    for obj in namespaced:
        kube.kubectl("get", "-n", namespace, obj)
    for obj in cluster:
        kube.kubectl("get", obj)
    deploy = json.loads(kube.kubectl("get", "-n", namespace, f"deployment/{name}", "-o", "json").stdout)
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == name
    assert deploy["spec"]["replicas"] == 1

    helm("uninstall", name, *common)
    for obj in namespaced:
        result = kube.kubectl("get", "-n", namespace, obj, "--ignore-not-found", "-o", "name")
        assert result.stdout.strip() == "", f"{obj} survived the uninstall"
    for obj in cluster:
        assert kube.kubectl("get", obj, "--ignore-not-found", "-o", "name").stdout.strip() == ""
    # Helm never deletes the CRDs of a chart's crds/ directory: other releases' jobs keep their kind.
    kube.kubectl("get", "crd", "mapreducejobs.mrsched.dev")


def service_account_kubeconfig(kube: Kube, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig with the API server and CA of ``kube``'s and a token of the ServiceAccount."""
    token = kube.kubectl("create", "token", account, "-n", namespace, "--duration=1h").stdout.strip()
    assert token.count(".") == 2, "a JWT from the TokenRequest API"
    admin = yaml.safe_load(kube.kubeconfig.read_text())
    current = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    cluster = next(c for c in admin["clusters"] if c["name"] == current["cluster"])["cluster"]
    cluster = {
        k: v
        for k, v in cluster.items()
        if k in ("server", "certificate-authority", "certificate-authority-data")
    }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [
            {"name": account, "context": {"cluster": "local", "user": account, "namespace": namespace}}
        ],
        "current-context": account,
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def evil_job() -> dict[str, Any]:
    """The security review's job: a custom image and command that would wipe every tenant's data."""
    return job_manifest(
        "evil",
        workload={
            "app": "custom",
            "image": "evil.example/miner:latest",
            "command": ["sh", "-c", "rm -rf /data/*"],
        },
        output={"path": "out/evil"},
        maps=1,
        reduces=1,
    )


def restrict(kube: Kube, namespace: str) -> None:
    """Make ``namespace`` enforce Pod Security "restricted", as docs/security.md tells tenants to; its data claim
    (the chart's default task volume, made by the ``namespace`` fixture) is bound by the real
    kube-controller-manager."""
    kube.kubectl(
        "label", "namespace", namespace, *(f"pod-security.kubernetes.io/{m}=restricted" for m in MODES)
    )
    wait_for(
        lambda: (
            kube.kubectl("get", "pvc", DATA_CLAIM, "-n", namespace, "-o", "jsonpath={.status.phase}").stdout
            == "Bound"
        ),
        30,
        "the data claim bound",
    )
    # What the namespace now refuses: a pod with the old defaults (no seccomp profile, a hostPath volume).
    old = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old-task", "namespace": namespace},
        "spec": {
            "containers": [{"name": "task", "image": "w", "securityContext": {"runAsNonRoot": True}}],
            "volumes": [{"name": "data", "hostPath": {"path": "/var/lib/mrsched/data"}}],
        },
    }
    refused = kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(old), check=False)
    assert refused.returncode != 0 and 'violates PodSecurity "restricted' in refused.stderr, refused.stderr


def test_operator_runs_a_job_in_a_restricted_namespace_with_only_the_charts_permissions(
    kube: Kube,
    namespace: str,
    account: str,
    emulate: EmulateFactory,
    toolchain: Toolchain,
    tmp_path: Path,
) -> None:
    restrict(kube, namespace)
    config = service_account_kubeconfig(kube, namespace, account, tmp_path / "sa.kubeconfig")
    whoami = Kube(config, toolchain.kubectl)
    try:
        me = whoami.kubectl("auth", "whoami", "-o", "json").stdout
        assert (
            json.loads(me)["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:{account}"
        )
    finally:
        whoami.close()

    nodes = emulate({"small": 1, "medium": 1}, mode="process")
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    corpus = text_corpus(data / "text", files=2, lines=500)
    operator = start_operator(kube, namespace, tmp_path / "logs", kubeconfig=config)
    try:
        apply(
            kube,
            namespace,
            job_manifest(
                "wordcount",
                workload={"app": "wordcount"},
                input={"paths": ["text"]},
                output={"path": "out/wc"},
                maps=2,
                reduces=1,
                resources=SMALL_TASKS,
            ),
        )
        job = wait_phase(kube, namespace, "wordcount", ("Succeeded", "Failed"), 90)
        assert job["status"]["phase"] == "Succeeded", (job["status"], operator.logs()[-4000:])
        assert read_counts(data / "out" / "wc") == Counter(input_bytes(corpus).split())
        pods = task_pods(kube, namespace, "wordcount")
        assert len(pods) == 4, "two maps, a reduce and the job commit, all admitted as restricted"
        for pod in pods:
            assert pod["spec"]["nodeName"] in nodes.nodes
            assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == DATA_CLAIM

        # The operator checks the job policy itself: with the admission policy gone, a job with an image the
        # admin did not allow is refused by the operator, and none of its pods is created.
        kube.kubectl("delete", "validatingadmissionpolicybinding", f"{account}-{namespace}-jobs")
        evil = evil_job()
        wait_for(lambda: apply(kube, namespace, evil, check=False).returncode == 0, 30, "the binding gone")
        job = wait_phase(kube, namespace, "evil", ("Succeeded", "Failed"), 30)
        assert job["status"]["reason"] == "NotAllowed", job["status"]
        assert "evil.example/miner:latest" in job["status"]["message"]
        assert task_pods(kube, namespace, "evil") == []
        lease = json.loads(kube.kubectl("get", "lease", LEASE, "-n", namespace, "-o", "json").stdout)
        assert lease["spec"]["holderIdentity"]
        events = json.loads(
            kube.kubectl(
                "get",
                "events",
                "-n",
                namespace,
                "--field-selector",
                "involvedObject.name=wordcount",
                "-o",
                "json",
            ).stdout
        )["items"]
        assert {e["reason"] for e in events}, "the operator's Events were written"
    finally:
        operator.stop()
    log = operator.logs()
    assert "Forbidden" not in log and " 403" not in log, log[-4000:]


def test_what_the_chart_does_not_grant_is_refused(
    kube: Kube, namespace: str, account: str, toolchain: Toolchain, tmp_path: Path
) -> None:
    sa = Kube(
        service_account_kubeconfig(kube, namespace, account, tmp_path / "sa.kubeconfig"), toolchain.kubectl
    )
    try:

        def can(*args: str) -> bool:
            result = sa.kubectl("auth", "can-i", *args, check=False)
            assert result.stdout.strip() in ("yes", "no"), result.stderr
            return result.stdout.strip() == "yes"

        granted = [
            ("list", "nodes"),
            ("list", "pods", "--all-namespaces"),
            ("watch", "pods", "--all-namespaces"),  # read-only: what takes each worker's capacity
            ("watch", "nodes"),
            ("watch", "customresourcedefinitions.apiextensions.k8s.io"),
            ("watch", "namespaces"),
            ("create", "pods", "-n", namespace),
            ("delete", "pods", "-n", namespace),
            ("patch", "pods", "-n", namespace),  # the task-record finalizer, once recorded
            ("watch", "mapreducejobs.mrsched.dev", "-n", namespace),
            ("patch", "mapreducejobs.mrsched.dev", "--subresource=status", "-n", namespace),
            ("create", "events", "-n", namespace),
            ("create", "leases.coordination.k8s.io", "-n", namespace),
            ("update", f"leases.coordination.k8s.io/{LEASE}", "-n", namespace),
        ]
        refused = [
            ("delete", "nodes"),
            ("patch", "nodes"),
            ("get", "secrets", "-n", namespace),
            ("create", "pods", "-n", "default"),  # only the watched namespace
            ("create", "pods", "-n", "kube-system"),
            ("list", "secrets", "--all-namespaces"),
            ("patch", "pods", "-n", "default"),  # only the watched namespace
            ("get", "pods", "-n", namespace),
            ("create", "pods", "--subresource=exec", "-n", namespace),
            ("patch", "mapreducejobs.mrsched.dev", "-n", namespace),  # spec: only the status subresource
            ("create", "mapreducejobs.mrsched.dev", "-n", namespace),
            ("update", "leases.coordination.k8s.io/someone-elses", "-n", namespace),
            ("create", "leases.coordination.k8s.io", "-n", "default"),
            ("create", "clusterrolebindings"),
            ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
        ]
        assert [g for g in granted if not can(*g)] == []
        assert [r for r in refused if can(*r)] == []

        nodes = json.loads(kube.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        # Authorization comes before the lookup: a real node or not, the delete is refused.
        node = nodes[0]["metadata"]["name"] if nodes else "no-such-node"
        for attempt in (
            ("run", "escalate", "-n", "kube-system", "--image=registry.k8s.io/pause:3.10", "--restart=Never"),
            ("get", "secrets", "-n", "kube-system"),
            ("delete", "node", node, "--wait=false"),
            ("create", "secret", "generic", "stolen", "-n", namespace, "--from-literal=k=v"),
            ("get", "secrets", "-n", namespace),
        ):
            result = sa.kubectl(*attempt, check=False)
            assert result.returncode != 0 and "forbidden" in result.stderr.lower(), (attempt, result.stderr)
        if nodes:
            assert kube.node(node) is not None, "the node is still there"
        assert kube.kubectl("get", "pod", "escalate", "-n", "kube-system", "--ignore-not-found").stdout == ""
    finally:
        sa.close()


def test_a_job_outside_the_admins_job_policy_is_refused_at_admission(
    kube: Kube, namespace: str, account: str
) -> None:
    """The chart's ValidatingAdmissionPolicy, with its defaults: no job brings its own image or command, and
    spec.user is the namespace. Whoever submits (here the cluster admin), the apiserver refuses and says why."""
    evil = evil_job()

    # The apiserver loads a new policy asynchronously: a create just after the install may still pass. A
    # server-side dry run goes through admission and stores nothing.
    def refused() -> bool:
        dry = ("create", "--dry-run=server", "-n", namespace, "-f", "-")
        return kube.kubectl(*dry, stdin=yaml.safe_dump(evil), check=False).returncode != 0

    wait_for(refused, 30, "the job policy in force")
    refusals = {
        "evil.example/miner:latest is not allowed on this cluster": evil,
        "workload.command needs a workload.image": job_manifest(
            "cmd", workload={"app": "pi", "command": ["sh"]}, output={"path": "o"}, maps=1, reduces=1
        ),
        "spec.user alice differs from the job namespace": job_manifest(
            "alice", workload={"app": "pi"}, output={"path": "o"}, maps=1, reduces=1, user="alice"
        ),
    }
    for message, manifest in refusals.items():
        result = apply(kube, namespace, manifest, check=False)
        assert result.returncode != 0 and message in result.stderr, (message, result.stderr)
        assert "ValidatingAdmissionPolicy" in result.stderr
    allowed = job_manifest(
        "mine", workload={"app": "pi"}, output={"path": "o"}, maps=1, reduces=1, user=namespace
    )
    apply(kube, namespace, allowed)
    assert kube.kubectl("get", "mrj", "-n", namespace, "-o", "name").stdout.split() == [
        "mapreducejob.mrsched.dev/mine"
    ]
