"""The emulated kubelet: process mode runs real processes; chaos hooks behave as a failing machine would."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NODE_GRACE_S, EmulateFactory
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for

WRITER = textwrap.dedent("""
    import json, os, sys
    out_dir, termination_log = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, os.environ["PART"]), "w") as f:
        f.write(f"written by {os.environ['HOSTNAME']} for {os.environ['POD_NAMESPACE']}\\n")
    with open(termination_log, "w") as f:
        json.dump({"v": 1, "status": "succeeded", "recordsOut": 1}, f)
""")


def test_process_mode_runs_the_command_and_reports_its_file_and_message(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    (node,) = emulate({"medium": 1}, mode="process", data_dir=tmp_path / "volumes").nodes
    pod = task_pod(
        "writer",
        scheduler="mrsched",  # placed by us through pods/binding, as the operator will
        app=None,
        volumes={"shared": "/data"},
        command=[sys.executable, "-c", WRITER, "/data/out", "/dev/termination-log"],
        env={"PART": "part-00000"},
    )
    pod["spec"]["containers"][0]["env"].append(
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    )
    kube.create_pod(namespace, pod)
    kube.bind(namespace, "writer", node)

    done = kube.wait_pod(namespace, "writer", phase_in("Succeeded", "Failed"), timeout_s=60)
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert done["status"]["phase"] == "Succeeded", terminated
    # The file the process wrote, in the volume's local directory.
    written = tmp_path / "volumes" / "shared" / "out" / "part-00000"
    assert written.read_text() == f"written by writer for {namespace}\n"
    assert json.loads(terminated["message"]) == {"v": 1, "status": "succeeded", "recordsOut": 1}


def test_process_mode_failure_carries_exit_code_and_log_fallback(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"small": 1}, mode="process").nodes
    failing = task_pod(
        "fails",
        node=node,
        app=None,
        command=[sys.executable, "-c", "import sys; print('bad input line 7'); sys.exit(3)"],
    )
    failing["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError"
    kube.create_pod(namespace, failing)
    missing = task_pod("missing", node=node, app=None, command=["/nonexistent/worker"])
    kube.create_pod(namespace, missing)

    done = kube.wait_pod(namespace, "fails", phase_in("Succeeded", "Failed"))
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (done["status"]["phase"], terminated["exitCode"], terminated["reason"]) == ("Failed", 3, "Error")
    assert terminated["message"].strip() == "bad input line 7"

    gone = kube.wait_pod(namespace, "missing", phase_in("Succeeded", "Failed"))
    terminated = gone["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (127, "StartError")
    assert "/nonexistent/worker" in terminated["message"]


def test_model_mode_rejects_work_it_cannot_model_with_a_clear_message(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"small": 1}).nodes
    kube.create_pod(namespace, task_pod("typo", node=node, app="wordcont"))
    done = kube.wait_pod(namespace, "typo", phase_in("Succeeded", "Failed"))
    message = done["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
    assert done["status"]["phase"] == "Failed"
    assert "unknown application 'wordcont'" in json.loads(message)["error"]


def _duration(kube: Kube, namespace: str, name: str) -> float:
    pod = kube.wait_pod(namespace, name, phase_in("Succeeded", "Failed"), timeout_s=120)
    report = json.loads(pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"])
    return float(report["wallS"])


def test_cpu_hog_slows_cpu_bound_tasks_on_that_node_only(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    emulator = emulate({"medium": 2}, time_scale=20.0)  # 4 cores each
    healthy, hogged = emulator.nodes
    emulator.client.add_fault(hogged, "cpu-hog", intensity=1.0)

    def mean_duration(node: str, tag: str) -> float:
        names = [f"pi-{tag}-{i}" for i in range(4)]  # one CPU-bound task per core
        for name in names:
            kube.create_pod(namespace, task_pod(name, node=node, app="pi", cpu="1"))
        return sum(_duration(kube, namespace, name) for name in names) / len(names)

    fast, slow = mean_duration(healthy, "healthy"), mean_duration(hogged, "hogged")
    # One busy loop per core doubles the demand for CPU (seed 002 §5.2.6): each task gets half a core, and
    # pays the over-subscription cost on top, so CPU-bound tasks take a little more than twice as long.
    assert 1.8 < slow / fast < 2.9, (fast, slow)
    assert emulator.client.nodes()[1]["faults"][0]["kind"] == "cpu-hog"

    emulator.client.clear_faults(hogged)
    assert mean_duration(hogged, "after") < 1.2 * fast


def test_stopped_heartbeats_make_the_node_not_ready_and_resume(kube: Kube, emulate: EmulateFactory) -> None:
    emulator = emulate({"small": 1})
    (node,) = emulator.nodes

    def ready() -> str:
        obj = kube.node(node) or {}
        return next(
            (c["status"] for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"),
            "missing",
        )

    assert ready() == "True"
    emulator.client.set_heartbeats(node, False)
    started = time.monotonic()
    # The node lifecycle controller (kube-controller-manager) decides, from the stale Lease.
    wait_for(lambda: ready() == "Unknown", NODE_GRACE_S + 30, f"{node} to turn NotReady")
    assert time.monotonic() - started >= NODE_GRACE_S - 3

    def taints() -> set[str]:
        return {t["key"] for t in (kube.node(node) or {})["spec"].get("taints", [])}

    # The controller taints the node in a pass of its own after marking it Unknown (its tainting queues), so
    # the taint may follow the condition by a moment on a loaded machine (it failed once asserted at once).
    wait_for(lambda: "node.kubernetes.io/unreachable" in taints(), 30, f"{node} to be tainted unreachable")

    emulator.client.set_heartbeats(node, True)
    # The status is posted again with the next heartbeat once the node was marked Unknown.
    wait_for(lambda: ready() == "True", 60, f"{node} to be Ready again")


def test_deleted_node_disappears_and_its_running_tasks_die(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    emulator = emulate({"small": 2})
    doomed, other = emulator.nodes
    kube.create_pod(namespace, task_pod("victim", node=doomed, app=None))
    kube.wait_pod(namespace, "victim", phase_in("Running"))

    assert emulator.client.delete_node(doomed) == [f"{namespace}/victim"]
    wait_for(lambda: kube.node(doomed) is None, 30, f"Node {doomed} to be deleted")
    remaining = {n["name"]: n for n in emulator.client.nodes()}
    assert remaining[doomed]["removed"] and not remaining[other]["removed"]


def test_evicted_pod_is_stopped_and_removed(kube: Kube, namespace: str, emulate: EmulateFactory) -> None:
    emulator = emulate({"small": 1})
    (node,) = emulator.nodes
    kube.create_pod(namespace, task_pod("evictee", node=node, app=None))
    kube.wait_pod(namespace, "evictee", phase_in("Running"))
    emulator.client.evict(namespace, "evictee")
    wait_for(
        lambda: kube.kubectl("-n", namespace, "get", "pods", "-o", "name").stdout.strip() == "",
        30,
        "the evicted pod to be gone",
    )
    assert emulator.client.nodes()[0]["runningPods"] == []


def test_graceful_node_shutdown_ends_pods_as_disruptions_and_admits_none(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    """As the kubelet's node shutdown manager: running pods end within the grace, Failed with reason Terminated and
    a DisruptionTarget condition (TerminationByKubelet); a pod bound afterwards is rejected (NodeShutdown); the
    node stops heartbeating."""
    emulator = emulate({"small": 1})
    (node,) = emulator.nodes
    kube.create_pod(namespace, task_pod("running", node=node, app=None))
    kube.wait_pod(namespace, "running", phase_in("Running"))
    assert emulator.client.shut_down_node(node, grace_s=2) == [f"{namespace}/running"]
    ended = kube.wait_pod(namespace, "running", phase_in("Failed"))["status"]
    assert (ended["reason"], ended["message"]) == (
        "Terminated",
        "Pod was terminated in response to imminent node shutdown.",
    )
    disruption = next(c for c in ended["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")
    kube.create_pod(namespace, task_pod("late", node=node, app=None))
    late = kube.wait_pod(namespace, "late", phase_in("Failed"))["status"]
    assert late["reason"] == "NodeShutdown", late
    assert not next(n for n in emulator.client.nodes() if n["name"] == node)["heartbeats"]


def test_model_mode_reduce_waits_for_its_jobs_maps_and_fetches_remote_output_over_the_network(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    """As the worker does (MRSCHED_WAIT_FOR_MAPS), an emulated reduce holds its slot idle until every map of its
    job has succeeded, then fetches the map output held on other nodes over the network."""
    a, b = emulate({"medium": 2}, time_scale=4.0).nodes

    def labelled(pod: dict[str, Any], kind: str, index: int) -> dict[str, Any]:
        pod["metadata"]["labels"] = {
            "mrsched.dev/job-uid": "job-1",
            "mrsched.dev/task-type": kind,
            "mrsched.dev/task-index": str(index),
        }
        return pod

    # Map 0 (40 MB, on a) runs well past map 1 (10 MB, on b); map output follows the input (writePerInput).
    kube.create_pod(namespace, labelled(task_pod("m0", node=a, input_bytes=40_000_000), "map", 0))
    kube.create_pod(namespace, labelled(task_pod("m1", node=b, input_bytes=10_000_000), "map", 1))
    reduce_env = {"MRSCHED_TASK_TYPE": "reduce", "MRSCHED_MAPS": "2", "MRSCHED_WAIT_FOR_MAPS": "600"}
    kube.create_pod(
        namespace, labelled(task_pod("r0", node=b, input_bytes=20_000_000, env=reduce_env), "reduce", 0)
    )

    kube.wait_pod(namespace, "m1", phase_in("Succeeded"), timeout_s=60)
    # Alone, this reduce's work (1 CPU-s, 30 MB of disk) would be done by now; it waits for map 0 instead.
    assert kube.pod(namespace, "m0")["status"]["phase"] == "Running"
    assert kube.pod(namespace, "r0")["status"]["phase"] == "Running"

    m0 = kube.wait_pod(namespace, "m0", phase_in("Succeeded", "Failed"), timeout_s=60)
    r0 = kube.wait_pod(namespace, "r0", phase_in("Succeeded", "Failed"), timeout_s=60)
    assert (m0["status"]["phase"], r0["status"]["phase"]) == ("Succeeded", "Succeeded")
    map_done = m0["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    reduce_state = r0["status"]["containerStatuses"][0]["state"]["terminated"]
    assert reduce_state["finishedAt"] >= map_done  # RFC 3339 in UTC compares as text
    report = json.loads(reduce_state["message"])
    # Most of the map output is on a (about four fifths): that share of the 20 MB shuffle arrives over the network.
    written = {
        name: json.loads(
            kube.pod(namespace, name)["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
        )["writtenBytes"]
        for name in ("m0", "m1")
    }
    remote = written["m0"] / (written["m0"] + written["m1"])
    assert remote > 0.6, written
    # Each task's work carries the model's log-normal noise (σ 5 %): the map outputs' and the reduce's own.
    assert report["networkBytes"] == pytest.approx(remote * 20_000_000, rel=0.2), (report, written)


def _waiting(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    waiting: dict[str, Any] = statuses[0].get("state", {}).get("waiting") or {}
    return waiting


def test_failing_image_pulls_back_off_and_the_pod_starts_once_pulls_work(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    """As the kubelet does: ErrImagePull, then ImagePullBackOff between retries (the back-off doubling), Pending
    all along; the first retry after the registry recovers starts the container, and the task runs."""
    emulator = emulate({"medium": 1}, time_scale=10.0)
    (node,) = emulator.nodes
    cleared, expiring = f"registry.example:5000/mrsched/worker:{namespace}", f"mrsched/worker:{namespace}"
    # A half-second first back-off instead of the kubelet's 10 s keeps the test short.
    emulator.client.fail_image_pulls(cleared, 600, backoff_s=0.5)
    failing = emulator.client.fail_image_pulls(expiring, 3)
    assert failing == pytest.approx({cleared: 600, expiring: 3}, abs=5)
    for name, image in (("cleared", cleared), ("expiring", expiring)):
        pod = task_pod(name, node=node, input_bytes=1_000_000)
        pod["spec"]["containers"][0]["image"] = image
        kube.create_pod(namespace, pod)

    seen: dict[str, dict[str, Any]] = {}

    def both_reasons_seen() -> bool:
        pod = kube.pod(namespace, "cleared")
        waiting = _waiting(pod)
        if waiting:
            assert pod["status"]["phase"] == "Pending"
            seen.setdefault(waiting["reason"], pod)
        return {"ErrImagePull", "ImagePullBackOff"} <= set(seen)

    wait_for(both_reasons_seen, 30, "ErrImagePull and ImagePullBackOff", interval_s=0.05)
    pulled = _waiting(seen["ErrImagePull"])["message"]
    assert 'failed to pull and unpack image "registry.example:5000/mrsched/worker:' in pulled, pulled
    backoff = _waiting(seen["ImagePullBackOff"])["message"]
    assert backoff.startswith(f'Back-off pulling image "{cleared}": ErrImagePull: '), backoff
    pending = seen["ImagePullBackOff"]["status"]
    assert pending["startTime"] and pending["podIP"]
    assert {c["type"]: c["status"] for c in pending["conditions"]}["Ready"] == "False"
    assert f"{namespace}/cleared" in emulator.client.nodes()[0]["pendingPods"]

    # The failure of the other image expires on its own: its pod starts with its next retry.
    kube.wait_pod(namespace, "expiring", phase_in("Succeeded", "Failed"), timeout_s=60)
    assert kube.pod(namespace, "cleared")["status"]["phase"] == "Pending"

    time.sleep(2)  # a few more failed pulls: the back-off has grown past its first half second
    emulator.client.fail_image_pulls(cleared, 0)
    for name in ("cleared", "expiring"):
        done = kube.wait_pod(namespace, name, phase_in("Succeeded", "Failed"), timeout_s=60)
        terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (done["status"]["phase"], terminated["reason"]) == ("Succeeded", "Completed"), terminated
        # startTime is when the kubelet took the pod; its container started once the image was there.
        assert terminated["startedAt"] >= done["status"]["startTime"]
    cleared_pod = kube.pod(namespace, "cleared")
    assert cleared_pod["status"]["startTime"] == pending["startTime"]
    terminated = cleared_pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["startedAt"] > pending["startTime"]


def test_invalid_image_name_never_starts_and_its_deadline_or_deletion_ends_it(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    emulator = emulate({"small": 1})
    (node,) = emulator.nodes
    for name, deadline in (("invalid", None), ("invalid-deadline", 2)):
        pod = task_pod(name, node=node, app=None)
        pod["spec"]["containers"][0]["image"] = "mrsched/Worker:test"  # upper case: not a valid reference
        if deadline:
            pod["spec"]["activeDeadlineSeconds"] = deadline
        kube.create_pod(namespace, pod)

    invalid = kube.wait_pod(namespace, "invalid", lambda p: bool(_waiting(p)), timeout_s=30)
    waiting = _waiting(invalid)
    assert (invalid["status"]["phase"], waiting["reason"]) == ("Pending", "InvalidImageName")
    assert waiting["message"].startswith('Failed to apply default image tag "mrsched/Worker:test": '), waiting

    # Past its deadline, a pod whose container never started fails as the kubelet leaves it.
    failed = kube.wait_pod(namespace, "invalid-deadline", phase_in("Succeeded", "Failed"), timeout_s=30)
    assert (failed["status"]["reason"], failed["status"]["message"]) == (
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    )
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "ContainerStatusUnknown")

    # The one without a deadline waits on: no pull ever starts it.
    time.sleep(2)
    assert _waiting(kube.pod(namespace, "invalid"))["reason"] == "InvalidImageName"
    assert emulator.client.nodes()[0]["pendingPods"] == [f"{namespace}/invalid"]
    assert emulator.client.nodes()[0]["runningPods"] == []
    kube.kubectl("-n", namespace, "delete", "pod", "invalid", "--wait=false")
    wait_for(
        lambda: (
            "pod/invalid" not in kube.kubectl("-n", namespace, "get", "pods", "-o", "name").stdout.split()
        ),
        30,
        "the deleted pod to be gone",
    )
    assert emulator.client.nodes()[0]["pendingPods"] == []


def test_active_deadline_kills_a_long_task_in_model_mode(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    (node,) = emulate({"small": 1}).nodes
    pod = task_pod("bounded", node=node, input_bytes=10_000_000_000)  # many minutes of wordcount
    pod["spec"]["activeDeadlineSeconds"] = 2
    kube.create_pod(namespace, pod)
    created = time.monotonic()
    kube.wait_pod(namespace, "bounded", phase_in("Running"), timeout_s=30)

    done = kube.wait_pod(namespace, "bounded", phase_in("Succeeded", "Failed"), timeout_s=30)
    elapsed = time.monotonic() - created
    status = done["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    )
    assert 1.5 < elapsed < 10, elapsed
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    # The kubelet stops the container with SIGTERM; the worker reports what it did and exits 143.
    assert (terminated["exitCode"], terminated["reason"]) == (143, "Error")
    report = json.loads(terminated["message"])
    assert report["status"] == "failed" and "SIGTERM" in report["error"]
    assert 1.0 <= report["wallS"] < 10, report


def test_active_deadline_kills_the_process_after_its_grace_period(
    kube: Kube, namespace: str, emulate: EmulateFactory
) -> None:
    """A process that ignores SIGTERM is killed once the pod's grace period is over: exit 137, as runtimes say."""
    (node,) = emulate({"small": 1}, mode="process").nodes
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
    pod = task_pod("stubborn", node=node, app=None, command=[sys.executable, "-c", stubborn])
    pod["spec"]["activeDeadlineSeconds"] = 2
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    kube.create_pod(namespace, pod)
    created = time.monotonic()

    done = kube.wait_pod(namespace, "stubborn", phase_in("Succeeded", "Failed"), timeout_s=30)
    elapsed = time.monotonic() - created
    assert (done["status"]["phase"], done["status"]["reason"]) == ("Failed", "DeadlineExceeded")
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    assert 2.5 < elapsed < 12, elapsed  # the deadline, then the second of grace


CRASH_ONCE = textwrap.dedent("""
    import os, sys, time
    marker = sys.argv[1]
    if not os.path.exists(marker):
        open(marker, "w").close()
        sys.exit(3)
    time.sleep(600)
""")


def test_a_container_that_ends_in_a_restarting_pod_is_restarted_after_the_back_off(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    """As the kubelet does for restartPolicy Always: the pod stays Running, its container waits in
    CrashLoopBackOff with how it ended, then runs again with restartCount 1; OnFailure leaves a success alone."""
    (node,) = emulate({"medium": 1}, mode="process", data_dir=tmp_path / "volumes").nodes
    crashing = task_pod(
        "crashes-once",
        node=node,
        app=None,
        volumes={"scratch": "/scratch"},
        command=[sys.executable, "-c", CRASH_ONCE, "/scratch/marker"],
    )
    crashing["spec"]["restartPolicy"] = "Always"
    succeeding = task_pod("succeeds", node=node, app=None, command=[sys.executable, "-c", "pass"])
    succeeding["spec"]["restartPolicy"] = "OnFailure"
    kube.create_pod(namespace, crashing)
    kube.create_pod(namespace, succeeding)

    def container(name: str) -> tuple[str, dict[str, Any]]:
        pod = kube.pod(namespace, name)
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return pod["status"].get("phase", ""), statuses[0]

    backing_off = wait_for(
        lambda: (
            (c := container("crashes-once"))[1].get("state", {}).get("waiting", {}).get("reason")
            == "CrashLoopBackOff"
            and c
        ),
        30,
        "CrashLoopBackOff",
        interval_s=0.1,
    )
    phase, status = backing_off
    assert phase == "Running" and status["restartCount"] == 1 and not status["ready"]
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=task")

    phase, status = wait_for(
        lambda: (c := container("crashes-once"))[1].get("state", {}).get("running") and c,
        30,
        "the restarted container",
    )
    assert (phase, status["restartCount"], status["ready"]) == ("Running", 1, True)
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert kube.wait_pod(namespace, "succeeds", phase_in("Succeeded", "Failed"), timeout_s=30)["status"][
        "phase"
    ] == ("Succeeded")
