"""Placement on the live control plane (emulated nodes, model mode): allocatable and the worker label are
respected, a large node takes as many tasks as requests fit, a deleted node's tasks run again elsewhere, and the
same job mix runs on three node sizes under the recommended policy and under the real kube-scheduler
(``kube-default``)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from mrsched.operator.model.jobspec import parse_cpu, parse_memory_mb
from mrsched.operator.model.pods import parse_time
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, phase_in, task_pod, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    get_job,
    job_manifest,
    task_pods,
    wait_phase,
)

MB = 2**20
REQUESTS = {"map": {"cpu": "500m", "memory": "512Mi"}, "reduce": {"cpu": "500m", "memory": "512Mi"}}


def wordcount(name: str, maps: int, mb_per_map: int, **extra: Any) -> dict[str, Any]:
    """Model mode: the emulator times each map from its input size (wordcount: 0.234 CPU-s per MB)."""
    return job_manifest(
        name,
        workload={"app": "wordcount"},
        input={"paths": ["in"], "bytes": maps * mb_per_map * MB},
        output={"path": f"out/{name}"},
        maps=maps,
        reduces=1,
        resources=REQUESTS,
        **extra,
    )


def pi(name: str, maps: int, **extra: Any) -> dict[str, Any]:
    extra.setdefault("resources", REQUESTS)
    return job_manifest(
        name,
        workload={"app": "pi", "parameters": {"samples": 1000}},
        output={"path": f"out/{name}"},
        maps=maps,
        reduces=1,
        **extra,
    )


class AllocationWatch:
    """Polls every pod in the cluster while jobs run and records, per node, the highest sum of CPU and memory
    requests of pods that were bound there and unfinished at the same time."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.peak: dict[str, tuple[float, float]] = defaultdict(lambda: (0.0, 0.0))
        self.rejected: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> AllocationWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            used: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
            for pod in self.kube.list_all_pods():
                status, spec = pod.get("status") or {}, pod["spec"]
                if status.get("reason") in ("OutOfcpu", "OutOfmemory", "OutOfpods"):
                    self.rejected.append(f"{pod['metadata']['name']}: {status['reason']}")
                if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
                    continue
                req = spec["containers"][0].get("resources", {}).get("requests", {})
                used[spec["nodeName"]][0] += parse_cpu(req.get("cpu", "0"))
                used[spec["nodeName"]][1] += parse_memory_mb(req.get("memory", "0"))
            for node, (cpu, mem) in used.items():
                old = self.peak[node]
                self.peak[node] = (max(old[0], cpu), max(old[1], mem))
            time.sleep(0.2)


def allocatable(kube: Kube, node: str) -> tuple[float, float]:
    alloc = (kube.node(node) or {})["status"]["allocatable"]
    return parse_cpu(alloc["cpu"]), parse_memory_mb(alloc["memory"])


def test_pods_go_only_to_worker_nodes_within_allocatable(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    small_a, small_b, medium = emulate({"small": 2, "medium": 1}).nodes
    # Not a worker any more: nothing of ours may land there.
    kube.kubectl("label", "node", medium, "mrsched.dev/worker-")
    # Somebody else's pod holds 1.5 of small_a's 2 cores: at most one of our 0.5-CPU pods fits beside it
    # (no slot label: requests alone bound what a node takes, so without the tenant four would).
    kube.create_pod(namespace, task_pod("tenant", node=small_a, app=None, cpu="1500m", memory="1Gi"))
    kube.wait_pod(namespace, "tenant", phase_in("Running"))

    with AllocationWatch(kube) as watch:
        apply(kube, namespace, wordcount("packed", maps=6, mb_per_map=8))
        apply(kube, namespace, pi("pi", maps=4))
        for name in ("packed", "pi"):
            job = wait_phase(kube, namespace, name, ("Succeeded", "Failed"), 180)
            assert job["status"]["phase"] == "Succeeded", job["status"]

    assert watch.rejected == [], "the operator placed pods the kubelet had to reject"
    for node in (small_a, small_b):
        cpu, mem = allocatable(kube, node)
        assert watch.peak[node][0] <= cpu + 1e-9 and watch.peak[node][1] <= mem + 1e-9, (
            node,
            watch.peak[node],
        )
    assert watch.peak[small_a][0] == pytest.approx(2.0), "small_a was filled up to its allocatable CPU"
    placed = [p["spec"]["nodeName"] for n in ("packed", "pi") for p in task_pods(kube, namespace, n)]
    assert medium not in placed and set(placed) <= {small_a, small_b}
    assert placed.count(small_a) >= 1


def test_a_job_tolerating_every_no_execute_taint_stays_off_a_degraded_node_and_on_its_selected_ones(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    """``{operator: Exists, effect: NoExecute}`` tolerates NoExecute taints only (ToleratesTaint): the node we
    judged degraded (``mrsched.dev/degraded:NoSchedule``) is refused, as the node the job's selector does not
    name. Our task pods carry spec.nodeName, so no kube-scheduler checks this after the operator: it was bound
    there before the operator's filters followed Kubernetes' rule."""
    degraded, ssd, hdd = emulate({"small": 3}).nodes
    kube.kubectl("label", "node", degraded, ssd, "disk=ssd")
    kube.kubectl("label", "node", hdd, "disk=hdd")
    kube.kubectl("taint", "node", degraded, "mrsched.dev/degraded=disk:NoSchedule")
    tolerant = pi(
        "tolerant",
        maps=6,
        nodeSelector={"disk": "ssd"},
        tolerations=[{"operator": "Exists", "effect": "NoExecute"}],
    )
    apply(kube, namespace, tolerant)
    job = wait_phase(kube, namespace, "tolerant", ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    placed = {p["spec"]["nodeName"] for p in task_pods(kube, namespace, "tolerant")}
    assert placed == {ssd}, placed


def test_a_large_node_runs_as_many_maps_as_requests_fit(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    """No slot label, no configured cap (the operator's default): an 8-core node takes as many 0.5-CPU maps as
    its allocatable holds (16), not Hadoop's 2 map slots."""
    (large,) = emulate({"large": 1}).nodes
    cpu, mem = allocatable(kube, large)
    running: set[str] = set()
    peak = 0
    with AllocationWatch(kube) as watch:
        # Twelve maps of ~5 s each (100 MB at 0.234 CPU-s/MB on a 5x core), all placed in the first rounds.
        apply(kube, namespace, wordcount("wide", maps=12, mb_per_map=100, policy="fair"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            now_running = {
                p["metadata"]["name"]
                for p in task_pods(kube, namespace, "wide")
                if p["metadata"]["labels"].get("mrsched.dev/task-type") == "map"
                and (p.get("status") or {}).get("phase") == "Running"
            }
            running |= now_running
            peak = max(peak, len(now_running))
            if get_job(kube, namespace, "wide").get("status", {}).get("phase") in ("Succeeded", "Failed"):
                break
            time.sleep(0.2)
        job = wait_phase(kube, namespace, "wide", ("Succeeded", "Failed"), 60)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    print(f"at most {peak} maps ran at once on {large} ({cpu:g} CPU allocatable)")
    assert peak > 2, f"at most {peak} maps ran at once: a slot count, not the node's requests, bound them"
    assert watch.peak[large][0] <= cpu + 1e-9 and watch.peak[large][1] <= mem + 1e-9
    assert watch.rejected == []


def test_a_deleted_nodes_tasks_run_again_elsewhere(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulator = emulate({"small": 2})
    doomed, survivor = emulator.nodes
    # Four maps of ~7 s each (30 MB at 0.234 CPU-s/MB on a 1x core): two start on each node.
    apply(kube, namespace, wordcount("survives", maps=4, mb_per_map=30))

    def running_on_doomed() -> list[str] | None:
        names = [
            p["metadata"]["name"]
            for p in task_pods(kube, namespace, "survives")
            if p["spec"].get("nodeName") == doomed and (p.get("status") or {}).get("phase") == "Running"
        ]
        return names or None

    victims = wait_for(running_on_doomed, 60, f"a map running on {doomed}")
    emulator.client.delete_node(doomed)

    job = wait_phase(kube, namespace, "survives", ("Succeeded", "Failed"), 180)
    assert job["status"]["phase"] == "Succeeded", job["status"]
    assert job["status"]["maps"]["succeeded"] == 4 and job["status"]["maps"]["failed"] == 0
    pods = task_pods(kube, namespace, "survives")
    assert {p["spec"]["nodeName"] for p in pods} == {survivor}, "every task finished on the surviving node"
    assert all(p["status"]["phase"] == "Succeeded" for p in pods), "no attempt left over"
    events = kube.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=survives"
    ).stdout
    assert "TaskRescheduled" in events and doomed in events
    for victim in victims:  # the lost attempt's task ran again
        task = victim.rsplit("-a", 1)[0]
        assert any(p["metadata"]["name"].startswith(task) for p in pods)


#: The policy docs/results.md recommends for heterogeneous clusters (bench/kubernetes_contest.py's RECOMMENDED).
RECOMMENDED = "diagnosis"


def _job_seconds(kube: Kube, namespace: str, name: str) -> float:
    """The job's time from its submission (creationTimestamp) to its completion, as its status says."""
    job = get_job(kube, namespace, name)
    created = parse_time(job["metadata"]["creationTimestamp"])
    done = parse_time(job["status"]["completionTime"])
    assert created is not None and done is not None
    return done - created


def test_the_same_job_mix_under_the_recommended_policy_and_under_the_real_kube_scheduler(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    """On nodes of three sizes (small, medium, large: 2, 4 and 8 cores), the same mix of a CPU-heavy wordcount
    and a pi runs under the recommended policy, placed by mrsched, and under kube-default, placed by the real
    kube-scheduler; each job's time is printed side by side (one run each: a comparison, not a statistic; the
    statistic is bench/results/kubernetes-mode.md)."""
    nodes = set(emulate({"small": 1, "medium": 1, "large": 1}).nodes)
    times: dict[str, dict[str, float]] = {}
    for policy in (RECOMMENDED, "kube-default"):
        names = [f"wc-{policy}", f"pi-{policy}"]
        apply(kube, namespace, wordcount(names[0], maps=12, mb_per_map=40, policy=policy))
        apply(kube, namespace, pi(names[1], maps=8, policy=policy))
        for name in names:
            job = wait_phase(kube, namespace, name, ("Succeeded", "Failed"), 240)
            assert job["status"]["phase"] == "Succeeded", job["status"]
            assert job["status"]["policy"] == policy
        times[policy] = {name.split("-")[0]: _job_seconds(kube, namespace, name) for name in names}
        for name in names:
            for pod in task_pods(kube, namespace, name):
                assert pod["spec"]["nodeName"] in nodes
                placement = pod["metadata"]["annotations"]["mrsched.dev/placement"]
                if policy == "kube-default":
                    # Left to kube-scheduler: default schedulerName, bound by it (its Scheduled event).
                    assert pod["spec"]["schedulerName"] == "default-scheduler"
                    assert '"policy": "kube-default"' in placement
                else:
                    assert pod["spec"]["schedulerName"] == "mrsched"
                    assert f'"policy": "{RECOMMENDED}"' in placement
    scheduled_by = kube.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "reason=Scheduled", "-o", "name"
    ).stdout.split()
    kube_default_pods = [
        p for n in ("wc-kube-default", "pi-kube-default") for p in task_pods(kube, namespace, n)
    ]
    assert len(kube_default_pods) >= 12 + 1 + 8 + 1
    assert len(scheduled_by) == len(kube_default_pods), (
        "kube-scheduler bound the kube-default pods, only them"
    )
    jobs = {n: get_job(kube, namespace, n)["status"] for n in (f"wc-{RECOMMENDED}", "wc-kube-default")}
    assert jobs[f"wc-{RECOMMENDED}"]["maps"] == jobs["wc-kube-default"]["maps"]
    for policy, by_job in times.items():
        mean = sum(by_job.values()) / len(by_job)
        print(
            f"{policy}: job times {', '.join(f'{j} {t:.1f} s' for j, t in by_job.items())}; mean {mean:.1f} s"
        )


def test_a_pod_kube_scheduler_cannot_place_is_explained_on_the_job(
    kube: Kube, namespace: str, emulate: EmulateFactory, operator: OperatorProcess
) -> None:
    emulate({"small": 1})
    too_big = {"map": {"cpu": "64", "memory": "256Mi"}, "reduce": {"cpu": "500m", "memory": "256Mi"}}
    apply(kube, namespace, pi("greedy", maps=1, policy="kube-default", resources=too_big))

    def warned() -> str | None:
        events = kube.kubectl(
            "get",
            "events",
            "-n",
            namespace,
            "--field-selector",
            "involvedObject.name=greedy,reason=TaskUnschedulable",
        ).stdout
        # kube-scheduler's own words. Its first verdict may be a transient one (the data volume's claim not yet
        # bound): the operator announces each new verdict, so the lasting one arrives too.
        return events if "-m00000-a0: " in events and "Insufficient cpu" in events else None

    wait_for(warned, 60, "a TaskUnschedulable event on the job with kube-scheduler's reason", interval_s=1)
    assert get_job(kube, namespace, "greedy")["status"]["phase"] in ("Pending", "Running")
