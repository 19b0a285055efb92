"""The control plane is the real thing: CEL validation, pods/binding, kube-scheduler, kubectl."""

from __future__ import annotations

import textwrap

from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for

WIDGET_CRD = textwrap.dedent("""
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.test.mrsched.dev}
    spec:
      group: test.mrsched.dev
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget}
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                x-kubernetes-validations:
                - rule: "self.minReplicas <= self.maxReplicas"
                  message: "minReplicas must not exceed maxReplicas: lower minReplicas or raise maxReplicas"
                properties:
                  minReplicas: {type: integer, minimum: 1}
                  maxReplicas: {type: integer}
""")


def widget(name: str, low: int, high: int) -> str:
    return textwrap.dedent(f"""
        apiVersion: test.mrsched.dev/v1
        kind: Widget
        metadata: {{name: {name}}}
        spec: {{minReplicas: {low}, maxReplicas: {high}}}
    """)


def test_crd_cel_rule_rejects_invalid_object_with_the_apiservers_message(kube: Kube, namespace: str) -> None:
    kube.kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    kube.kubectl("wait", "--for=condition=Established", "crd/widgets.test.mrsched.dev", "--timeout=30s")

    kube.kubectl("-n", namespace, "apply", "-f", "-", stdin=widget("good", 1, 3))
    bad = kube.kubectl("-n", namespace, "apply", "-f", "-", stdin=widget("bad", 5, 2), check=False)
    assert bad.returncode != 0
    assert "minReplicas must not exceed maxReplicas: lower minReplicas or raise maxReplicas" in bad.stderr
    assert bad.stderr.startswith('The Widget "bad" is invalid: spec: Invalid value: ')

    out_of_bounds = kube.kubectl("-n", namespace, "apply", "-f", "-", stdin=widget("zero", 0, 2), check=False)
    assert (
        "spec.minReplicas: Invalid value: 0: spec.minReplicas in body should be greater than or equal to 1"
        in out_of_bounds.stderr
    )
    listed = kube.kubectl("-n", namespace, "get", "widgets", "-o", "name").stdout.split()
    assert listed == ["widget.test.mrsched.dev/good"]


def test_pod_bound_through_binding_runs_to_succeeded_in_model_mode(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"medium": 1}).nodes
    # Another scheduler's pod, as the operator's are: kube-scheduler leaves it alone.
    kube.create_pod(namespace, task_pod("map-0", app="wordcount", input_bytes=5_000_000, scheduler="mrsched"))
    assert kube.pod(namespace, "map-0")["status"]["phase"] == "Pending"  # no node yet: nobody runs it

    kube.bind(namespace, "map-0", node)

    running = kube.wait_pod(namespace, "map-0", phase_in("Running", "Succeeded"))
    assert running["spec"]["nodeName"] == node
    done = kube.wait_pod(namespace, "map-0", phase_in("Succeeded", "Failed"))
    assert done["status"]["phase"] == "Succeeded"
    (container,) = done["status"]["containerStatuses"]
    terminated = container["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert terminated["startedAt"] <= terminated["finishedAt"]
    # The model mode's usage report, in the worker's termination-message format.
    assert '"status":"succeeded"' in terminated["message"] and '"readBytes":' in terminated["message"]
    conditions = {c["type"]: c["status"] for c in done["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True" and conditions["Ready"] == "False"


def test_oversized_pod_is_refused_with_the_kubelets_reason(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"small": 1}).nodes  # 2 cores
    kube.create_pod(namespace, task_pod("too-big", node=node, cpu="3"))
    pod = kube.wait_pod(namespace, "too-big", phase_in("Failed", "Running", "Succeeded"))
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["reason"] == "OutOfcpu"
    assert pod["status"]["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"
    )

    kube.create_pod(namespace, task_pod("too-much-memory", node=node, memory="64Gi"))
    pod = kube.wait_pod(namespace, "too-much-memory", phase_in("Failed", "Running", "Succeeded"))
    assert pod["status"]["reason"] == "OutOfmemory"


def test_admission_counts_what_already_runs_on_the_node(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"small": 1}).nodes  # 2 cores
    kube.create_pod(namespace, task_pod("server", node=node, app=None, cpu="1500m"))  # runs until deleted
    kube.wait_pod(namespace, "server", phase_in("Running"))
    kube.create_pod(namespace, task_pod("second", node=node, cpu="1"))
    pod = kube.wait_pod(namespace, "second", phase_in("Failed", "Running", "Succeeded"))
    assert pod["status"]["reason"] == "OutOfcpu"
    assert "requested: 1000, used: 1500, capacity: 2000" in pod["status"]["message"]


def test_kube_scheduler_places_a_default_scheduler_pod_on_an_emulated_node(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    nodes = emulate({"small": 1, "large": 1}).nodes
    kube.create_pod(namespace, task_pod("scheduled", app="pi"))  # no nodeName: kube-scheduler decides
    pod = kube.wait_pod(namespace, "scheduled", lambda p: bool(p["spec"].get("nodeName")))
    assert pod["spec"]["nodeName"] in nodes
    done = kube.wait_pod(namespace, "scheduled", phase_in("Succeeded", "Failed"), timeout_s=90)
    assert done["status"]["phase"] == "Succeeded"


def test_deleting_a_running_pod_stops_its_task_and_finishes_the_deletion(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    emulator = emulate({"small": 1})
    (node,) = emulator.nodes
    kube.create_pod(namespace, task_pod("long", node=node, app=None))
    kube.wait_pod(namespace, "long", phase_in("Running"))
    assert emulator.client.nodes()[0]["runningPods"] == [f"{namespace}/long"]

    # A graceful delete of a pod bound to a node completes only when its kubelet finishes it.
    kube.kubectl("-n", namespace, "delete", "pod", "long", "--wait=true", "--timeout=30s")
    assert kube.kubectl("-n", namespace, "get", "pods", "-o", "name").stdout.strip() == ""
    assert emulator.client.nodes()[0]["runningPods"] == []


def test_kwok_plays_the_kubelet_only_for_its_labelled_nodes(kube: Kube, emulate: EmulateFactory) -> None:
    """kwok's controller serves cheap scale-test nodes (label kwok.x-k8s.io/node=fake) and leaves ours alone."""
    (ours,) = emulate({"small": 1}).nodes
    fake = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kwok-fake-0", "labels": {"kwok.x-k8s.io/node": "fake"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    kube.core.create_node(fake, _preload_content=False).data  # noqa: B018
    try:

        def ready(name: str) -> str:
            node = kube.node(name) or {}
            conditions = node.get("status", {}).get("conditions", [])
            return next((c["status"] for c in conditions if c["type"] == "Ready"), "missing")

        wait_for(lambda: ready("kwok-fake-0") == "True", 30, "kwok to make its node Ready")
        our_node = kube.node(ours) or {}
        assert our_node["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.4-mrsched-emulator"
        assert ready(ours) == "True"
    finally:
        kube.core.delete_node("kwok-fake-0", _preload_content=False).data  # noqa: B018
