"""The chart's operator Deployment runs in the local cluster (issue 25): the real helm installs it, the real
kube-scheduler places its pod on an emulated node, and process mode runs the image's program as that pod, with the
ServiceAccount token, CA and KUBERNETES_SERVICE_HOST a kubelet gives it and nothing else: it reaches the apiserver
through in-cluster config, with only the chart's RBAC, and places a job's pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrsched.localcluster.toolchain import Toolchain
from tests.cluster.test_chart import CHART, Helm
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
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
        (pod,) = json.loads(
            kube.kubectl(
                "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/name=mrsched", "-o", "json"
            ).stdout
        )["items"]
        assert pod["spec"]["serviceAccountName"] == release
        # It leads: the Lease names the process, and that process is the pod's (its kubelet-given environment).
        lease = wait_for(
            lambda: _holder(kube, namespace), timeout_s=60, what="the operator pod to take the leader Lease"
        )
        pid = int(lease.rsplit("-", 1)[1])
        environ = dict(
            item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item
        )
        assert environ["HOSTNAME"] == pod["metadata"]["name"]
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


def _holder(kube: Kube, namespace: str) -> str | None:
    found = kube.kubectl("get", "lease", "mrsched-leader", "-n", namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return None
    holder: str | None = json.loads(found.stdout)["spec"].get("holderIdentity")
    return holder
