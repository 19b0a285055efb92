"""A user's journeys end to end (issue 25), in order, as typed: README.md's commands exactly as written, then
every example job, a policy switch by ``helm upgrade``, a leader failover, ``helm uninstall``, and the rendered
manifests without Helm.

The operator is never started by the test: the real helm installs the chart, the real kube-scheduler places its
Deployment's pod on a process-mode node, and the emulated kubelet runs it with what a kubelet gives a pod (its
ServiceAccount token, the cluster's CA, KUBERNETES_SERVICE_HOST; no kubeconfig), so it reaches the apiserver
with the chart's RBAC alone. The jobs' tasks run as real worker processes on real data, and each output is
checked by recomputing it (e2e/outputs.py). The tests share one cluster set-up and run in file order, each
building on the last, as a user's session does."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import HEARTBEAT_S
from tests.unit.emulator.test_dashboard import dashboard_queries

from e2e import outputs
from e2e.journey import (
    JOBS_NAMESPACE,
    RELEASE,
    RELEASE_NAMESPACE,
    REPO,
    Shell,
    eventually,
    process_environment,
)
from e2e.readme import readme_commands
from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.emulator.podstate import loopback_twin
from mrsched.localcluster.cluster import EmulatorHandle, LocalCluster
from mrsched.localcluster.dataclaim import DATA_CLAIM, data_claim_manifests
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.model.pods import PLACEMENT_ANNOTATION, TRACKING_FINALIZER

EXAMPLES = REPO / "manifests" / "examples"
README_COMMANDS = readme_commands(REPO / "README.md")
#: README commands another test runs, and which (a command README gains must be run by some test).
RUN_ELSEWHERE = {
    "make demo": "tests/cluster/test_demo.py",
    "make test": "CI's .ci/run: it runs make test, this test among the rest",
    "make images": "tests/cluster/test_images.py (with a stand-in engine: none runs here)",
}
#: The path without Helm: run once Helm's release is gone (the last test).
WITHOUT_HELM = "kubectl apply -f manifests/"
#: README's nodes that run tasks (its `kubectl label node` command names them).
WORKERS = {"worker-1": "medium", "worker-2": "small"}
WORKER_LABEL = "mrsched.dev/worker"
#: Who the operator is to the apiserver: the chart's ServiceAccount (release mrsched in mrsched-system).
SERVICE_ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:{RELEASE}"
#: The operator's metrics endpoint as the local cluster's Prometheus scrapes it.
OPERATOR_TARGET = "e2e-operator"


@dataclass
class User:
    shell: Shell
    data: Path  # what the task pods see at /data: the data claim's volume on this machine
    home: Path
    cluster: LocalCluster


@pytest.fixture(scope="module")
def user(
    local_cluster: LocalCluster, toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[User]:
    """The cluster README's reader starts from: two nodes that run no tasks yet, and the data claim README says
    each job namespace needs."""
    home = tmp_path_factory.mktemp("user")
    shell = Shell.with_tools(toolchain.helm, toolchain.kubectl, local_cluster.kubeconfig, home)
    groups = [
        NodeGroup.model_validate({"class": cls, "count": 1, "names": [name]}) for name, cls in WORKERS.items()
    ]
    emulator = local_cluster.emulate(
        ClusterLayout(name="e2e", nodes=groups),
        mode="process",
        data_dir=home / "volumes",
        heartbeat_interval_s=HEARTBEAT_S,
    )
    try:
        # The emulator labels its nodes as workers; README's own command is what labels these.
        shell(f"kubectl label node {' '.join(WORKERS)} {WORKER_LABEL}-")
        claim = home / "data-claim.yaml"
        claim.write_text(yaml.safe_dump_all(data_claim_manifests(JOBS_NAMESPACE)))
        shell(f"kubectl apply -f {claim}")
        # A job namespace sees its own directory of the claim (mrsched.operator.model.pods: subPath namespaces/<ns>).
        yield User(shell, home / "volumes" / "data" / "namespaces" / JOBS_NAMESPACE, home, local_cluster)
    finally:
        _clean_up(shell, local_cluster, emulator)


def _clean_up(shell: Shell, cluster: LocalCluster, emulator: EmulatorHandle) -> None:
    cluster.prometheus.remove_target(OPERATOR_TARGET)
    shell(f"helm uninstall {RELEASE} -n {RELEASE_NAMESPACE} --wait --timeout 60s", check=False)
    # What kubectl apply -f manifests/ made, but the CRDs (other tests' jobs are of those kinds).
    shell(
        "kubectl delete clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding"
        f" -l app.kubernetes.io/instance={RELEASE} --ignore-not-found",
        check=False,
    )
    shell(f"kubectl delete namespace {RELEASE_NAMESPACE} --ignore-not-found --wait=false", check=False)
    shell(f"kubectl delete mrj --all -n {JOBS_NAMESPACE} --wait=false", check=False)
    for pod in json.loads(
        shell(f"kubectl get pods -n {JOBS_NAMESPACE} -o json", check=False) or '{"items": []}'
    )["items"]:
        if TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
            shell(
                f"kubectl patch pod {pod['metadata']['name']} -n {JOBS_NAMESPACE} --type=json"
                ' -p \'[{"op": "remove", "path": "/metadata/finalizers"}]\'',
                check=False,
            )
    shell(f"kubectl delete pods -n {JOBS_NAMESPACE} -l mrsched.dev/job --wait=false", check=False)
    shell(f"kubectl delete pvc {DATA_CLAIM} -n {JOBS_NAMESPACE} --wait=false", check=False)
    shell(f"kubectl delete pv data-{JOBS_NAMESPACE} --wait=false", check=False)
    if emulator.emulator_id in cluster.emulators:
        cluster.stop_emulator(emulator.emulator_id)


def _example(name: str) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return job


def _parameters(name: str) -> dict[str, Any]:
    parameters: dict[str, Any] = _example(name)["spec"]["workload"]["parameters"]
    return parameters


def _apply_renamed(user: User, example: str, name: str) -> dict[str, Any]:
    """An example under another name, writing its own output: a second run a user would make."""
    job = _example(example)
    job["metadata"]["name"] = name
    job["spec"]["output"]["path"] = f"examples/{name}"
    path = user.home / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    user.shell(f"kubectl apply -f {path}")
    return job


def _running(user: User, name: str) -> bool:
    status = user.shell.job(name).get("status") or {}
    return status.get("phase") == "Running" and status.get("maps", {}).get("running", 0) > 0


def _leader(user: User) -> tuple[str, int]:
    holder = eventually(user.shell.leader, 120, "an operator pod to take the leader Lease")
    pod, pid = str(holder).rsplit("-", 1)
    return pod, int(pid)


def _managers(pods: list[dict[str, Any]]) -> set[str]:
    return {entry["manager"] for pod in pods for entry in pod["metadata"].get("managedFields") or []}


def _creators(user: User, pods: list[dict[str, Any]]) -> set[str]:
    """Who the apiserver authenticated each of ``pods``' creation as (its audit log: AUDIT_POLICY)."""
    wanted = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
    found: dict[tuple[str, str], str] = {}
    for line in user.cluster.plane.audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        key = (ref.get("namespace", ""), ref.get("name", ""))
        created = event.get("responseStatus", {}).get("code") == 201
        pod = event["verb"] == "create" and ref.get("resource") == "pods" and not ref.get("subresource")
        if pod and created and key in wanted:
            found[key] = event["user"]["username"]
    assert set(found) == wanted, f"no audited creation of {sorted(wanted - set(found))}"
    return set(found.values())


def _placement_policies(pods: list[dict[str, Any]]) -> set[str]:
    placed = [json.loads(p["metadata"]["annotations"][PLACEMENT_ANNOTATION]) for p in pods]
    return {p["policy"] for p in placed}


@pytest.mark.timeout(1200)
def test_readme_commands_run_as_written_and_the_operator_pod_runs_the_jobs(user: User) -> None:
    texts = [c.text for c in README_COMMANDS]
    assert WITHOUT_HELM in texts and set(RUN_ELSEWHERE) <= set(texts)
    for command in README_COMMANDS:
        if command.text in RUN_ELSEWHERE or command.text == WITHOUT_HELM:
            continue
        out = user.shell(command.text)
        if command.shown:
            # What README shows is what a reader sees: the same columns, and each job it names.
            assert out.splitlines()[0].split() == command.shown[0].split(), (command.text, out)
            for row in command.shown[1:]:
                assert row.split()[0] in out, (command.text, out)

    user.shell.wait_succeeded("wordcount")
    text = _example("randomtextwriter")["spec"]
    outputs.check_randomtextwriter(
        user.data / "examples" / "text", text["maps"], text["workload"]["parameters"]["bytesPerMap"]
    )
    reduces = _example("wordcount")["spec"]["reduces"]
    outputs.check_wordcount(user.data / "examples" / "text", user.data / "examples" / "wordcount", reduces)
    simulated = json.loads(Path("/tmp/tan/results.json").read_text())
    assert {"fifo", "fair", "coupling"} <= set(json.dumps(simulated).split('"')), "the simulation's policies"

    # The operator ran in the cluster: the Lease holder is a process of the chart's pod, started by the kubelet
    # with the pod's ServiceAccount and no kubeconfig, and it made the jobs' pods.
    pod_name, pid = _leader(user)
    (pod,) = [p for p in user.shell.operator_pods() if p["metadata"]["name"] == pod_name]
    assert pod["spec"]["serviceAccountName"] == RELEASE
    environ = process_environment(pid)
    assert environ["HOSTNAME"] == pod_name and "KUBECONFIG" not in environ
    assert environ["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    tasks = user.shell.task_pods("wordcount") + user.shell.task_pods("randomtextwriter")
    assert len(tasks) >= 4 + 8 + 2
    assert f"mrsched-{pod_name}-{pid}" in _managers(tasks)
    # ... authenticated as the chart's ServiceAccount: the apiserver's audit log names who created each pod.
    assert _creators(user, tasks) == {SERVICE_ACCOUNT}
    assert {t["spec"]["nodeName"] for t in tasks} <= set(WORKERS)
    assert _placement_policies(tasks) == {"fair"}


@pytest.mark.timeout(1500)
def test_every_example_runs_and_its_output_is_right(user: User) -> None:
    first = ("grep", "jio", "pi", "randomwriter", "teragen")
    user.shell(" ".join(["kubectl apply", *(f"-f manifests/examples/{name}.yaml" for name in first)]))
    user.shell.wait_succeeded("randomwriter", "teragen", timeout_s=900)
    user.shell("kubectl apply -f manifests/examples/sort.yaml -f manifests/examples/terasort.yaml")
    user.shell.wait_succeeded("grep", "jio", "pi", "sort", "terasort", timeout_s=900)

    examples = user.data / "examples"
    outputs.check_grep(examples / "text", examples / "grep", pattern=_parameters("grep")["pattern"])
    outputs.check_jio(examples / "text", examples / "jio", output_factor=_parameters("jio")["outputFactor"])
    outputs.check_pi(
        examples / "pi", maps=_example("pi")["spec"]["maps"], samples=_parameters("pi")["samples"]
    )
    random = _example("randomwriter")["spec"]
    outputs.check_randomwriter(
        examples / "random", random["maps"], random["workload"]["parameters"]["bytesPerMap"]
    )
    tera = _example("teragen")["spec"]
    outputs.check_teragen(
        examples / "tera-in", rows=tera["workload"]["parameters"]["rows"], maps=tera["maps"]
    )
    outputs.check_sort(examples / "random", examples / "sorted", reduces=_example("sort")["spec"]["reduces"])
    terasort = _example("terasort")["spec"]
    outputs.check_terasort(examples / "tera-in", examples / "tera-out", reduces=terasort["reduces"])
    listed = user.shell("kubectl get mrj,nodeprofiles,appprofiles")
    for name in ("grep", "jio", "pi", "sort", "terasort"):
        assert f"mapreducejob.mrsched.dev/{name} " in listed, listed

    # The chart's dashboard shows it, through the metrics Service's endpoint (the pod's own address, from the
    # real EndpointSlice controller) scraped by the real Prometheus.
    (endpoint,) = [
        f"{loopback_twin(address)}:{port['port']}"  # where the pod's IP is served on this machine
        for slice_ in user.shell.json(
            f"kubectl get endpointslices -n {RELEASE_NAMESPACE} -l kubernetes.io/service-name={RELEASE}-metrics"
        )["items"]
        for ep in slice_.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready")
        for address in ep["addresses"]
        for port in slice_["ports"]
    ]
    user.cluster.prometheus.add_target(OPERATOR_TARGET, endpoint)
    queries = dict(dashboard_queries())

    def succeeded_jobs_shown() -> float:
        result = user.cluster.prometheus.query(queries["Jobs by phase"])
        return sum(float(r["value"][1]) for r in result if r["metric"].get("phase") == "Succeeded")

    eventually(
        lambda: succeeded_jobs_shown() >= 7, 60, "the dashboard's jobs panel to count the succeeded jobs"
    )
    loads = {r["metric"].get("node") for r in user.cluster.prometheus.query(queries["Load per node"])}
    assert set(WORKERS) <= loads


@pytest.mark.timeout(900)
def test_helm_upgrade_switches_the_policy_for_new_jobs_while_a_running_job_finishes(user: User) -> None:
    _apply_renamed(user, "grep", "grep-during")
    eventually(lambda: _running(user, "grep-during"), 120, "grep-during to run")
    before, _ = _leader(user)
    user.shell(
        f"helm upgrade {RELEASE} charts/mrsched -n {RELEASE_NAMESPACE} --reuse-values --set policy=dara"
    )
    user.shell(f"kubectl rollout status deployment/{RELEASE} -n {RELEASE_NAMESPACE} --timeout=180s")
    eventually(lambda: _leader(user)[0] != before, 120, "the upgraded pod to lead")
    user.shell.wait_succeeded("grep-during")
    examples = user.data / "examples"
    pattern = _example("grep")["spec"]["workload"]["parameters"]["pattern"]
    outputs.check_grep(examples / "text", examples / "grep-during", pattern=pattern)

    _apply_renamed(user, "grep", "grep-after")
    user.shell.wait_succeeded("grep-after")
    outputs.check_grep(examples / "text", examples / "grep-after", pattern=pattern)
    assert user.shell.job("grep-after")["status"]["policy"] == "dara"
    assert _placement_policies(user.shell.task_pods("grep-after")) == {"dara"}


@pytest.mark.timeout(900)
def test_a_leader_killed_mid_job_hands_over_and_the_job_finishes_right(user: User) -> None:
    user.shell(
        f"helm upgrade {RELEASE} charts/mrsched -n {RELEASE_NAMESPACE} --reuse-values --set replicas=2"
    )
    user.shell(f"kubectl rollout status deployment/{RELEASE} -n {RELEASE_NAMESPACE} --timeout=180s")
    assert len([p for p in user.shell.operator_pods() if p["status"].get("phase") == "Running"]) >= 2
    _apply_renamed(user, "wordcount", "wordcount-failover")
    eventually(lambda: _running(user, "wordcount-failover"), 120, "wordcount-failover to run")
    killed, pid = _leader(user)
    os.kill(pid, signal.SIGKILL)  # no goodbye: the standby must wait the Lease out
    eventually(lambda: _leader(user)[0] != killed, 120, "the standby to take the Lease")
    # The kubelet restarts the killed container in its pod (restartPolicy Always), which now stands by.
    eventually(
        lambda: (
            [
                s["restartCount"]
                for p in user.shell.operator_pods()
                if p["metadata"]["name"] == killed
                for s in p["status"].get("containerStatuses") or []
                if "running" in s["state"]
            ]
            == [1]
        ),
        120,
        "the killed operator container to run again",
    )
    user.shell.wait_succeeded("wordcount-failover")
    examples = user.data / "examples"
    reduces = _example("wordcount")["spec"]["reduces"]
    outputs.check_wordcount(examples / "text", examples / "wordcount-failover", reduces)
    # The successor finished it: its field manager wrote the job's status after the handover.
    successor, successor_pid = _leader(user)
    job = user.shell.json(f"kubectl get mrj wordcount-failover -n {JOBS_NAMESPACE} --show-managed-fields")
    assert f"mrsched-{successor}-{successor_pid}" in _managers([job])


@pytest.mark.timeout(600)
def test_helm_uninstall_leaves_no_task_pod_running_or_held(user: User) -> None:
    user.shell(f"helm uninstall {RELEASE} -n {RELEASE_NAMESPACE} --wait --timeout 120s")
    eventually(lambda: not user.shell.operator_pods(), 120, "the operator pods to go")
    pods = user.shell.task_pods()
    assert pods, "the finished jobs' pods stay, with their jobs, for kubectl logs"
    assert all(p["status"]["phase"] in ("Succeeded", "Failed") for p in pods)
    assert not [p for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])]
    # Nothing holds them: deleting the jobs deletes their pods (owner references), with no operator running.
    user.shell(f"kubectl delete mrj --all -n {JOBS_NAMESPACE} --timeout=120s")
    eventually(lambda: not user.shell.task_pods(), 120, "the task pods to be garbage-collected")


@pytest.mark.timeout(600)
def test_the_rendered_manifests_install_the_operator_without_helm(user: User) -> None:
    user.shell(WITHOUT_HELM)
    user.shell(f"kubectl rollout status deployment/{RELEASE} -n {RELEASE_NAMESPACE} --timeout=180s")
    _apply_renamed(user, "pi", "pi-without-helm")
    user.shell.wait_succeeded("pi-without-helm")
    pi = _example("pi")
    outputs.check_pi(
        user.data / "examples" / "pi-without-helm",
        maps=pi["spec"]["maps"],
        samples=_parameters("pi")["samples"],
    )
    # Placed by the operator the manifests installed (the Lease outlives a release: it names the last leader).
    pod_name, pid = eventually(
        lambda: (
            (lead := _leader(user))[0] in {p["metadata"]["name"] for p in user.shell.operator_pods()} and lead
        ),
        120,
        "the manifests' operator pod to lead",
    )
    tasks = user.shell.task_pods("pi-without-helm")
    assert f"mrsched-{pod_name}-{pid}" in _managers(tasks)
    assert _creators(user, tasks) == {SERVICE_ACCOUNT}
