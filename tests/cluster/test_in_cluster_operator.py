"""The chart's operator Deployment runs in the local cluster (issue 25): the real helm installs it, the real
kube-scheduler places its pod on an emulated node, and process mode runs the image's program as that pod, with the
ServiceAccount token, CA and KUBERNETES_SERVICE_HOST a kubelet gives it and nothing else: it reaches the apiserver
through in-cluster config, with only the chart's RBAC, and places a job's pods."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from mrsched.localcluster.toolchain import Toolchain
from tests.chart.helmtool import CHART, Helm
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for
from tests.operatorhelpers import apply_crds

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def helm(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(toolchain.helm, tmp_path_factory.mktemp("helm"))


def test_the_charts_operator_runs_as_a_pod_with_its_service_account_and_places_a_jobs_pods(
    kube: Kube, namespace: str, emulate: EmulateFactory, helm: Helm, tmp_path: Path
) -> None:
    emulate({"medium": 2}, mode="process", data_dir=tmp_path / "volumes")
    apply_crds(kube)
    release = f"mrsched-{namespace}"
    common = ("--kubeconfig", str(kube.kubeconfig), "--namespace", namespace)
    # Defaults, but for the namespace it serves: the test's, where the data claim is.
    helm("install", release, str(CHART), *common, "--set", f"watchNamespaces={{{namespace}}}")
    try:
        kube.kubectl("rollout", "status", f"deployment/{release}", "-n", namespace, "--timeout=90s")
        pods = json.loads(
            kube.kubectl(
                "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/name=mrsched", "-o", "json"
            ).stdout
        )["items"]
        # It leads: the Lease names the process (<pod>-<pid>), and that process is a pod of the Deployment, run
        # with the kubelet-given environment and nothing else.
        lease = wait_for(
            lambda: _holder(kube, namespace), timeout_s=60, what="the operator pod to take the leader Lease"
        )
        hostname, pid = lease.rsplit("-", 1)
        names = [p["metadata"]["name"] for p in pods]
        assert hostname in names, (lease, names)
        (pod,) = [p for p in pods if p["metadata"]["name"] == hostname]
        assert pod["spec"]["serviceAccountName"] == release
        environ = dict(
            item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item
        )
        assert environ["HOSTNAME"] == hostname
        assert environ["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and "KUBECONFIG" not in environ

        kube.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "examples" / "pi.yaml"))
        kube.kubectl("wait", "-n", namespace, "--for=condition=Succeeded", "mrj/pi", "--timeout=180s")
        tasks = json.loads(
            kube.kubectl(
                "get",
                "pods",
                "-n",
                namespace,
                "-l",
                "mrsched.dev/job=pi",
                "-o",
                "json",
                "--show-managed-fields",
            ).stdout
        )["items"]
        assert tasks
        # Created by that process, through the chart's ServiceAccount (it holds no other credential).
        managers = {entry["manager"] for task in tasks for entry in task["metadata"]["managedFields"]}
        assert f"mrsched-{lease}" in managers
    finally:
        helm("uninstall", release, *common, check=False)


def test_a_pod_whose_token_volume_projects_a_config_map_not_yet_there_waits_for_it(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    """As a kubelet does when a new namespace's ``kube-root-ca.crt`` is not published yet: the mount fails, the
    pod stays Pending (ContainerCreating) and the volume manager retries; once the ConfigMap is there the
    container starts and reads it."""
    (node,) = emulate({"medium": 1}, mode="process", data_dir=tmp_path / "volumes").nodes
    mount = "/var/run/secrets/kubernetes.io/serviceaccount"
    copy = "import sys; open(sys.argv[2], 'w').write(open(sys.argv[1]).read())"
    pod = task_pod(
        "reader",
        node=node,
        app=None,
        command=[sys.executable, "-c", copy, f"{mount}/ca.crt", "/dev/termination-log"],
    )
    pod["spec"]["automountServiceAccountToken"] = False  # only the volume below, projecting a late ConfigMap
    pod["spec"]["volumes"] = [
        {
            "name": "kube-api-access-late",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                    {"configMap": {"name": "late-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                ]
            },
        }
    ]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "kube-api-access-late", "mountPath": mount}]
    kube.create_pod(namespace, pod)

    def container_creating() -> bool:
        status = kube.pod(namespace, "reader").get("status") or {}
        waiting = ((status.get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting") or {}
        return waiting.get("reason") == "ContainerCreating"

    wait_for(container_creating, 30, "the pod to wait in ContainerCreating")
    time.sleep(2)  # several mount retries fail meanwhile, and the pod stays Pending
    assert kube.pod(namespace, "reader")["status"]["phase"] == "Pending"
    kube.kubectl("create", "configmap", "late-ca", "-n", namespace, "--from-literal=ca.crt=the cluster's CA")
    done = kube.wait_pod(namespace, "reader", phase_in("Succeeded", "Failed"), timeout_s=60)
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (done["status"]["phase"], terminated["message"]) == ("Succeeded", "the cluster's CA"), terminated


def _holder(kube: Kube, namespace: str) -> str | None:
    found = kube.kubectl("get", "lease", "mrsched-leader", "-n", namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return None
    holder: str | None = json.loads(found.stdout)["spec"].get("holderIdentity")
    return holder
