"""A pod stream on the real kube-scheduler: a fresh local control plane, this process playing the operator and
the pods' runs (peer.py's module docstring)."""

from __future__ import annotations

import heapq
import itertools
import re
import statistics
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from replay import Placed, Real, _created_at, _groups

from mrsched.localcluster.controlplane import start_control_plane, stop_control_plane
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.kube.kubeclient import api_client

NAMESPACE = "peer"


def _node(spec: dict[str, Any]) -> dict[str, Any]:
    capacity = {"cpu": str(spec["cpu"]), "memory": f"{spec['memoryMiB']}Mi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec["name"],
            "labels": {"kwok.x-k8s.io/node": "fake", "kubernetes.io/hostname": spec["name"]},
        },
        "status": {"allocatable": capacity, "capacity": capacity},
    }


def _pod(spec: dict[str, Any], stream: dict[str, Any]) -> dict[str, Any]:
    classes = {v: k for k, v in stream.get("priorityClasses", {}).items()}
    requests = {"cpu": f"{round(spec['cpu'] * 1000)}m", "memory": f"{spec['memoryMiB']}Mi"}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "task",
                "image": "mrsched/peer:none",
                "resources": {"requests": requests, "limits": requests},
            }
        ],
    }
    if spec.get("priority"):
        pod_spec["priorityClassName"] = classes[spec["priority"]]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": spec["name"],
            "labels": {"app": "peer", "group": spec["group"].replace("/", "-")},
        },
        "spec": pod_spec,
    }


class RealRun:
    """One stream on the real kube-scheduler (module docstring)."""

    def __init__(self, core: client.CoreV1Api, stream: dict[str, Any]) -> None:
        self.core, self.stream = core, stream
        self.pods = {p["name"]: p for p in stream["pods"]}
        self.groups = _groups(stream)
        self.waiting_for: dict[str, list[str]] = defaultdict(list)
        for p in stream["pods"]:
            if p.get("after"):
                self.waiting_for[p["after"]].append(p["name"])
        self.unbound = {g: len(names) for g, names in self.groups.items()}
        self.placed: dict[str, Placed] = {}
        self.deleted: set[str] = set()
        self.lock = threading.Lock()
        self.ends: list[tuple[float, str]] = []  # (monotonic due, pod)
        self.creates: list[tuple[float, int, str]] = []
        self._position = {p["name"]: i for i, p in enumerate(stream["pods"])}
        self.t0 = 0.0
        self.wall0 = 0.0
        self.created: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.lost: set[str] = set()

    def _create(self, name: str) -> None:
        sent = time.monotonic()
        body = _pod(self.pods[name], self.stream)
        _read(self.core.create_namespaced_pod(NAMESPACE, body, _preload_content=False))
        self.created[name] = (sent + time.monotonic()) / 2 - self.t0

    def _delete(self, name: str) -> None:
        """The pod's run is over: delete it (grace 0: no kubelet to wait for), as its end leaves the scheduler's
        informer; a pod already gone was deleted by another (kube-scheduler preempting it), which is reported."""
        sent = time.monotonic()
        try:
            _read(
                self.core.delete_namespaced_pod(
                    name, NAMESPACE, grace_period_seconds=0, _preload_content=False
                )
            )
        except client.ApiException as err:
            if err.status != 404:
                raise
            self.lost.add(name)
        self.ended[name] = (sent + time.monotonic()) / 2 - self.t0

    def _watch(self, stop: threading.Event) -> None:
        try:
            self._follow(stop)
        except Exception:
            if not stop.is_set():  # the control plane stopping ends the watch: only a failure before is one
                raise

    def _follow(self, stop: threading.Event) -> None:
        w = watch.Watch()
        for event in w.stream(
            self.core.list_namespaced_pod, NAMESPACE, label_selector="app=peer", timeout_seconds=0
        ):
            if stop.is_set():
                w.stop()
                return
            pod = event["object"]
            name = pod.metadata.name
            now = time.monotonic() - self.t0
            with self.lock:
                if event["type"] in ("ADDED", "MODIFIED") and pod.spec.node_name and name not in self.placed:
                    self.placed[name] = Placed(pod.spec.node_name, now, len(self.placed))
                    heapq.heappush(self.ends, (self.t0 + now + self.pods[name]["durationS"], name))
                    group = self.pods[name]["group"]
                    self.unbound[group] -= 1
                    if self.unbound[group] == 0:
                        for dependent in self.waiting_for.get(group, ()):
                            heapq.heappush(self.creates, (0.0, self._position[dependent], dependent))
                elif event["type"] == "DELETED":
                    self.deleted.add(name)

    def run(self, timeout_s: float = 900.0) -> dict[str, Placed]:
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        watcher.start()
        time.sleep(1.0)  # the watch is open before the first pod
        self.t0, self.wall0 = time.monotonic(), time.time()
        with self.lock:  # in the stream's order: a heap of (time, position), never of names
            for name, at in _created_at(self.stream).items():
                heapq.heappush(self.creates, (self.t0 + at, self._position[name], name))
        total = len(self.pods)
        deadline = self.t0 + timeout_s
        while len(self.deleted) < total:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.stream['name']}: {len(self.deleted)} of {total} pods ran in {timeout_s} s"
                )
            now = time.monotonic()
            with self.lock:
                creates = []
                while self.creates and self.creates[0][0] <= now:
                    creates.append(heapq.heappop(self.creates)[2])
                ends = []
                while self.ends and self.ends[0][0] <= now:
                    ends.append(heapq.heappop(self.ends)[1])
            for name in creates:
                self._create(name)
            for name in ends:
                self._delete(name)
            time.sleep(0.005)
        stop.set()
        return self.placed


def run_real(tool: Toolchain, stream: dict[str, Any], workdir: Path) -> Real:
    """The stream on a fresh control plane."""
    plane = start_control_plane(tool, f"peer-{stream['name'][:20]}", workdir, scheduler_verbosity=5)
    try:
        api = api_client(plane.kubeconfig)
        core = client.CoreV1Api(api)
        scheduling = client.SchedulingV1Api(api)
        _read(core.create_namespace({"metadata": {"name": NAMESPACE}}, _preload_content=False))
        for name, value in stream.get("priorityClasses", {}).items():
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                # Priority orders the queue (PrioritySort) but preempts nothing: mrsched's pods carry no
                # priority the operator would give them, and the simulator's kube-default does not preempt.
                "preemptionPolicy": "Never",
            }
            _read(scheduling.create_priority_class(body, _preload_content=False))
        for spec in stream["nodes"]:
            _read(core.create_node(_node(spec), _preload_content=False))
        _wait(
            lambda: _ready(core, stream) and _service_account(core),
            60.0,
            "the nodes Ready and the namespace's ServiceAccount",
        )
        run = RealRun(core, stream)
        placed = run.run()
        if run.lost:
            raise RuntimeError(f"{stream['name']}: pods deleted by another than this run: {sorted(run.lost)}")
        return Real(placed, run.created, run.ended, run.wall0 % 1.0, scheduler_attempts(plane.scheduler_log))
    finally:
        stop_control_plane(tool, plane)


_KLOG_TIME = re.compile(r"^[IWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+)")
_POD = re.compile(r'pod="peer/([^"]+)"')


def scheduler_attempts(log: Path) -> dict[str, float]:
    """From kube-scheduler's log at -v=5: how many attempts it made, how long an attempt's own work took (from
    "About to try" to the pod's failure or binding, ms), and the interval from one attempt to the next while pods
    waited (consecutive "About to try" lines under 0.5 s apart: a failed attempt also writes the pod's
    Unschedulable condition and an event through the apiserver before the next one starts)."""
    started: dict[str, float] = {}
    took: list[float] = []
    tries: list[float] = []
    for line in log.read_text(errors="replace").splitlines():
        at, pod = _KLOG_TIME.match(line), _POD.search(line)
        if not at or not pod:
            continue
        h, m, sec = at.groups()
        now = int(h) * 3600 + int(m) * 60 + float(sec)
        if '"About to try and schedule pod"' in line:
            started[pod.group(1)] = now
            tries.append(now)
        elif ('"Unable to schedule pod' in line or '"Successfully bound pod' in line) and pod.group(
            1
        ) in started:
            took.append(now - started.pop(pod.group(1)))
    intervals = [b - a for a, b in itertools.pairwise(tries) if b - a < 0.5]
    if not took or not intervals:
        return {"attempts": float(len(took))}
    return {
        "attempts": float(len(took)),
        "meanMs": 1000 * statistics.fmean(took),
        "intervalMs": 1000 * statistics.fmean(intervals),
        "intervalMedianMs": 1000 * statistics.median(intervals),
    }


def _read(response: Any) -> None:
    """Read a raw response to its end, so that its connection goes back to the pool clean."""
    response.data  # noqa: B018


def _ready(core: client.CoreV1Api, stream: dict[str, Any]) -> bool:
    names = {n["name"] for n in stream["nodes"]}
    ready = {
        n.metadata.name
        for n in core.list_node().items
        if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
    }
    return names <= ready


def _service_account(core: client.CoreV1Api) -> bool:
    return any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(NAMESPACE).items)


def _wait(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} in {timeout_s} s")
        time.sleep(0.2)
