"""The node emulator: registers emulated Nodes and plays their kubelet.

It keeps each node's Lease renewed and its status posted, watches pods bound to its nodes, admits them as the
kubelet does (refusing what does not fit allocatable), runs them with a :class:`TaskRunner` and writes their
statuses through Pending → Running → Succeeded/Failed, and finishes their deletion. Chaos hooks (delete a
node, stop its heartbeats, evict a pod, inject a fault) serve the tests and the CLI through the control
endpoint (:mod:`mrsched.emulator.control`).

All API writes for pods happen on one loop thread, in the order the kubelet would make them; heartbeats run
on their own thread so that a busy loop never lets a node go NotReady.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from kubernetes.client.exceptions import ApiException

from mrsched.core.catalog import ClusterLayout
from mrsched.core.physics import Fault
from mrsched.core.report import TaskReport
from mrsched.emulator.kube import KubeClient
from mrsched.emulator.metrics import LOAD_SAMPLE_S, NodeInfo, NodeMetricsCollector
from mrsched.emulator.nodes import EmulatedNode, lease_object, nodes_from_layout, now_micro
from mrsched.emulator.podstatus import (
    Requests,
    admit,
    now_rfc3339,
    pod_requests,
    rejected_status,
    running_status,
    terminated_status,
)
from mrsched.emulator.runners import ModelRunner, ProcessRunner, TaskExit, TaskRunner
from mrsched.emulator.workload import container_env, job_of, map_output_weight, map_task, reduce_wait

log = logging.getLogger("mrsched.emulator")
Mode = Literal["model", "process"]
T = TypeVar("T")
#: Exit code of a task stopped because its pod was deleted (SIGTERM, as container runtimes report it).
DELETED_EXIT_CODE = 143


@dataclass(frozen=True)
class EmulatorConfig:
    kubeconfig: Path
    layout: ClusterLayout
    mode: Mode = "model"
    emulator_id: str = "emulator"
    name_prefix: str = ""
    data_dir: Path = Path("/tmp/mrsched-data")
    run_dir: Path = Path("/tmp/mrsched-run")
    seed: int = 0
    time_scale: float = 1.0
    lease_duration_s: int = 40
    heartbeat_interval_s: float = 10.0
    node_status_interval_s: float = 60.0
    watch_timeout_s: int = 300


@dataclass
class _PodState:
    uid: str
    node: str
    requests: Requests
    started_at: str = ""
    running: bool = False
    done: bool = False


@dataclass
class _WaitingReduce:
    """A reduce pod holding its slot, idle, until every map of its job has succeeded (model mode)."""

    job: str  # namespace/job uid
    node: str
    maps: int
    since: float  # monotonic
    deadline: float  # monotonic: the worker gives up waiting then


@dataclass
class _MapPod:
    index: int
    node: str
    succeeded: bool
    output: float  # bytes written (or an estimate), once succeeded


@dataclass
class _NodeState:
    node: EmulatedNode
    uid: str = ""
    heartbeats: bool = True
    removed: bool = False
    last_status: float = 0.0
    pods: set[str] = field(default_factory=set)


class Emulator:
    def __init__(self, cfg: EmulatorConfig) -> None:
        self.cfg = cfg
        self.kube = KubeClient(cfg.kubeconfig)
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        nodes = nodes_from_layout(cfg.layout, cfg.emulator_id, cfg.name_prefix)
        self.nodes: dict[str, _NodeState] = {n.name: _NodeState(n) for n in nodes}
        self.runner: TaskRunner
        if cfg.mode == "model":
            caps = {n.name: n.node_class.capability() for n in nodes}
            self.runner = ModelRunner(caps, seed=cfg.seed, time_scale=cfg.time_scale)
        else:
            self.runner = ProcessRunner(cfg.data_dir, cfg.run_dir, wake=self.wake)
        self.pods: dict[str, _PodState] = {}
        self._pod_objects: dict[str, dict[str, Any]] = {}  # running pods as admitted, for their final status
        # Model mode: reduces waiting for their maps (by pod key), and every job's map pods, on any node, as the
        # pod watch shows them (by job, then pod key).
        self._waiting: dict[str, _WaitingReduce] = {}
        self._map_pods: dict[str, dict[str, _MapPod]] = {}
        self.metrics = NodeMetricsCollector(self._live_nodes, self.runner.usage)
        self._threads: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> None:
        for state in self.nodes.values():
            self._register(state)
        for target, name in (
            (self._heartbeat_loop, "heartbeats"),
            (self._watch_loop, "pod-watch"),
            (self._load_loop, "load-average"),
            (self._run_loop, "kubelet"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("emulating %d %s-mode nodes: %s", len(self.nodes), self.cfg.mode, ", ".join(self.nodes))

    def stop(self, *, remove_nodes: bool = True) -> None:
        """Stop every task; with ``remove_nodes``, delete this emulator's pods and Nodes from the cluster."""
        self._stop.set()
        self.wake()
        for thread in self._threads:
            # The pod watch may sit in a blocking read until its timeout: it is a daemon and dies with us.
            if thread.name != "pod-watch":
                thread.join(timeout=10)
        self.runner.close()
        if remove_nodes:
            for key, pod in list(self.pods.items()):
                namespace, name = key.split("/", 1)
                self._quietly(partial(self.kube.delete_pod_now, namespace, name, pod.uid))
            for state in self.nodes.values():
                if not state.removed:
                    self._quietly(partial(self.kube.delete_node, state.node.name))
        self.kube.close()

    def wake(self) -> None:
        self._events.put(("wake", None))

    def _quietly(self, call: Callable[[], object]) -> None:
        try:
            call()
        except ApiException as err:
            if err.status != 404:
                log.warning("cleanup call failed: %s", err.reason)

    def _live_nodes(self) -> list[NodeInfo]:
        return [
            NodeInfo(s.node.name, s.node.node_class.cores, s.node.node_class.memory_mib * 2**20)
            for s in self.nodes.values()
            if not s.removed
        ]

    # --- nodes and heartbeats ------------------------------------------------------------------------------

    def _register(self, state: _NodeState) -> None:
        node = state.node
        try:
            created = self.kube.create_node(node.node_object())
        except ApiException as err:
            if err.status != 409:
                raise
            # A node of ours from an earlier run: take it over with our labels.
            created = self.kube.patch_node(node.name, {"metadata": {"labels": node.labels}})
        state.uid = created["metadata"]["uid"]
        self.kube.patch_node_status(node.name, node.status(ready=True))
        state.last_status = time.monotonic()
        try:
            self.kube.create_lease(lease_object(node.name, state.uid, self.cfg.lease_duration_s))
        except ApiException as err:
            if err.status != 409:
                raise
            self.kube.renew_lease(node.name, now_micro())

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.cfg.heartbeat_interval_s):
            for state in list(self.nodes.values()):
                if state.removed or not state.heartbeats:
                    continue
                try:
                    self.kube.renew_lease(state.node.name, now_micro())
                    if time.monotonic() - state.last_status >= self.cfg.node_status_interval_s:
                        self.kube.patch_node_status(state.node.name, state.node.status(ready=True))
                        state.last_status = time.monotonic()
                except ApiException as err:
                    if (
                        err.status == 404
                    ):  # someone deleted the Node or its Lease: register again, as a kubelet
                        self._safely(partial(self._register, state))
                    else:
                        log.warning("heartbeat of %s failed: %s", state.node.name, err.reason)
                except Exception as err:
                    log.warning("heartbeat of %s failed: %s", state.node.name, err)

    def _safely(self, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception as err:
            log.warning("%s", err)

    def _load_loop(self) -> None:
        while not self._stop.wait(LOAD_SAMPLE_S):
            self._safely(self.metrics.sample_load)

    # --- pods ------------------------------------------------------------------------------------------------

    def _watch_loop(self) -> None:
        """List, then watch from the list's resourceVersion; list again when the watch expires (410)."""
        while not self._stop.is_set():
            try:
                items, version = self.kube.list_pods_on_nodes()
                listed = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in items}
                self._events.put(("relist", listed))
                for pod in items:
                    self._events.put(("pod", ("ADDED", pod)))
                for event in self.kube.watch_pods_on_nodes(version, self.cfg.watch_timeout_s):
                    if self._stop.is_set():
                        return
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self._events.put(("pod", (event["type"], event["object"])))
                    elif event["type"] == "ERROR":
                        break
            except Exception as err:
                if self._stop.is_set():
                    return
                log.warning("pod watch broke (%s); listing again", err)
                self._stop.wait(1.0)

    def _run_loop(self) -> None:
        while not self._stop.is_set():
            deadline = self.runner.next_deadline()
            timeout = 1.0 if math.isinf(deadline) else min(1.0, max(0.0, deadline - time.monotonic()))
            try:
                kind, payload = self._events.get(timeout=timeout)
                self._dispatch(kind, payload)
                while True:  # drain what else is queued before polling the runner
                    kind, payload = self._events.get_nowait()
                    self._dispatch(kind, payload)
            except queue.Empty:
                pass
            for done in self.runner.poll():
                self._safely(partial(self._finish, done))
            if self._waiting:
                self._expire_waiting()

    def _dispatch(self, kind: str, payload: Any) -> None:
        if kind == "pod":
            event, pod = payload
            self._safely(lambda: self._on_pod(event, pod))
        elif kind == "relist":
            # Pods deleted while no watch was open sent no DELETED event: stop and forget them now.
            for key in [k for k in self.pods if k not in payload]:
                self.runner.kill(key)
                self._forget(key)
            for job, maps in list(self._map_pods.items()):
                for key in [k for k in maps if k not in payload]:
                    del maps[key]
                if not maps:
                    del self._map_pods[job]
        elif kind == "call":
            fn, future = payload
            try:
                future.set_result(fn())
            except Exception as err:
                future.set_exception(err)

    def call(self, fn: Callable[[], T], timeout_s: float = 30.0) -> T:
        """Run ``fn`` on the loop thread (so that chaos never races a status write) and return its result."""
        future: Future[T] = Future()
        self._events.put(("call", (fn, future)))
        return future.result(timeout=timeout_s)

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node = spec.get("nodeName")
        if isinstance(self.runner, ModelRunner):
            self._track_map(event, pod)
        state_of_node = self.nodes.get(node or "")
        if state_of_node is None or state_of_node.removed:
            return
        key = f"{meta['namespace']}/{meta['name']}"
        known = self.pods.get(key)
        if known is not None and known.uid != meta["uid"]:
            self._forget(key)  # a new pod under an old name
            known = None
        if event == "DELETED":
            if known is not None:
                self.runner.kill(key)
                self._forget(key)
            return
        if meta.get("deletionTimestamp"):
            self._delete(key, pod, known)
            return
        if known is not None:
            return
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase in ("Succeeded", "Failed"):
            return
        if phase == "Running":
            # Ours from before a restart of the emulator: the task died with it, as a container dies with its
            # node's runtime.
            self.kube.patch_pod_status(
                meta["namespace"],
                meta["name"],
                terminated_status(
                    pod,
                    exit_code=137,
                    started_at=now_rfc3339(),
                    finished_at=now_rfc3339(),
                    message="the node emulator restarted and lost this task",
                    reason="Error",
                ),
            )
            return
        self._admit(key, state_of_node.node.name, pod, state_of_node)

    def _admit(self, key: str, node: str, pod: dict[str, Any], node_state: _NodeState) -> None:
        meta = pod["metadata"]
        request = pod_requests(pod)
        active = [self.pods[k] for k in node_state.pods if not self.pods[k].done]
        used = sum((p.requests for p in active), Requests())
        rejection = admit(request, used, len(active), node_state.node.capacity)
        state = _PodState(meta["uid"], node, request)
        self.pods[key] = state
        node_state.pods.add(key)
        if rejection is not None:
            state.done = True
            self.kube.patch_pod_status(meta["namespace"], meta["name"], rejected_status(rejection))
            log.info("rejected %s on %s: %s", key, node, rejection.reason)
            return
        state.started_at = now_rfc3339()
        state.running = True
        pod_ip = f"127.{(len(self.pods) >> 16) & 255}.{(len(self.pods) >> 8) & 255}.{len(self.pods) & 255}"
        self.kube.patch_pod_status(
            meta["namespace"],
            meta["name"],
            running_status(pod, started_at=state.started_at, host_ip="127.0.0.1", pod_ip=pod_ip),
        )
        self._pod_objects[key] = pod
        wait = reduce_wait(container_env(pod)) if isinstance(self.runner, ModelRunner) else None
        if wait is not None:
            # As the worker does (MRSCHED_WAIT_FOR_MAPS): hold the slot, idle, until the maps' output is there.
            maps, timeout_s = wait
            now = time.monotonic()
            self._waiting[key] = _WaitingReduce(job_of(pod), node, maps, now, now + timeout_s)
            self._release(job_of(pod))
            return
        self.runner.start(key, node, pod)

    # --- reduces waiting for their maps (model mode) ---------------------------------------------------------

    def _track_map(self, event: str, pod: dict[str, Any]) -> None:
        """Keep the job's map pods as the watch shows them; a map that succeeded may release waiting reduces."""
        task = map_task(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if task is None or not node:
            return
        job, index = task
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if event == "DELETED":
            maps = self._map_pods.get(job, {})
            if key in maps and not maps[key].succeeded:
                del maps[key]
            # A succeeded map's output stays on the shared volume when its pod is deleted (the pod GC, a user):
            # its reduces still fetch it, as they would the worker's committed map-NNNNN directory.
            if not maps:
                self._map_pods.pop(job, None)
            return
        succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
        before = self._map_pods.get(job, {}).get(key)
        self._map_pods.setdefault(job, {})[key] = _MapPod(
            index, node, succeeded, map_output_weight(pod) if succeeded else 0.0
        )
        if succeeded and (before is None or not before.succeeded):
            self._release(job)

    def _release(self, job: str) -> None:
        """Start the job's waiting reduces once every one of its maps has a succeeded pod: each fetches the map
        output from the nodes where those pods ran (one succeeded pod per map)."""
        waiting = [k for k, w in self._waiting.items() if w.job == job]
        if not waiting:
            return
        done: dict[int, _MapPod] = {}
        for map_pod in self._map_pods.get(job, {}).values():
            if map_pod.succeeded:
                done.setdefault(map_pod.index, map_pod)
        shuffle_from: dict[str, float] = {}
        for map_pod in done.values():
            shuffle_from[map_pod.node] = shuffle_from.get(map_pod.node, 0.0) + map_pod.output
        now = time.monotonic()
        for key in waiting:
            reduce = self._waiting[key]
            if any(i not in done for i in range(reduce.maps)):
                continue
            pod = self._pod_objects.get(key)
            del self._waiting[key]
            if pod is not None:
                self.runner.start(
                    key, reduce.node, pod, shuffle_from=shuffle_from, waited_s=now - reduce.since
                )

    def _expire_waiting(self) -> None:
        """A reduce whose maps did not all succeed within its wait fails, as the worker does."""
        now = time.monotonic()
        for key, reduce in list(self._waiting.items()):
            if now < reduce.deadline:
                continue
            del self._waiting[key]
            error = f"map output missing after waiting {reduce.deadline - reduce.since:.0f} s for {reduce.maps} maps"
            report = TaskReport("failed", wall_s=now - reduce.since, error=error)
            self._safely(partial(self._finish, TaskExit(key, 1, report.to_json(), None, reduce.since, now)))

    def _finish(self, done: TaskExit) -> None:
        state = self.pods.get(done.pod_key)
        pod = self._pod_objects.pop(done.pod_key, None)
        if state is None or pod is None or state.done:
            return
        state.done = True
        state.running = False
        namespace, name = done.pod_key.split("/", 1)
        self.kube.patch_pod_status(
            namespace,
            name,
            terminated_status(
                pod,
                exit_code=done.exit_code,
                started_at=state.started_at,
                finished_at=now_rfc3339(),
                message=done.message,
                reason=done.reason,
            ),
        )

    def _delete(self, key: str, pod: dict[str, Any], known: _PodState | None) -> None:
        meta = pod["metadata"]
        if known is not None and known.running and not known.done:
            self.runner.kill(key)
            known.done = True
            self._pod_objects.pop(key, None)
            self._safely(
                lambda: self.kube.patch_pod_status(
                    meta["namespace"],
                    meta["name"],
                    terminated_status(
                        pod,
                        exit_code=DELETED_EXIT_CODE,
                        started_at=known.started_at,
                        finished_at=now_rfc3339(),
                        message="",
                        reason="Error",
                    ),
                )
            )
        self.kube.delete_pod_now(meta["namespace"], meta["name"], meta["uid"])
        self._forget(key)

    def _forget(self, key: str) -> None:
        state = self.pods.pop(key, None)
        self._pod_objects.pop(key, None)
        self._waiting.pop(key, None)
        if state is not None and state.node in self.nodes:
            self.nodes[state.node].pods.discard(key)

    # --- chaos hooks (call through :meth:`call`) --------------------------------------------------------------

    def node_or_error(self, name: str) -> _NodeState:
        state = self.nodes.get(name)
        if state is None or state.removed:
            raise KeyError(f"no emulated node {name!r}; this emulator has {', '.join(self._names())}")
        return state

    def _names(self) -> list[str]:
        return [n for n, s in self.nodes.items() if not s.removed]

    def set_heartbeats(self, name: str, enabled: bool) -> None:
        state = self.node_or_error(name)
        state.heartbeats = enabled
        if enabled:
            # Post the Ready status with the next heartbeat, as a kubelet does once it sees that the node
            # controller marked its node Unknown.
            state.last_status = 0.0

    def delete_node(self, name: str) -> list[str]:
        """The machine is gone: its tasks die without a word and its Node object is deleted."""
        state = self.node_or_error(name)
        state.removed = True
        lost = self.runner.remove_node(name)
        lost += [k for k, w in self._waiting.items() if w.node == name]
        for key in lost:
            self._pod_objects.pop(key, None)
            self._waiting.pop(key, None)
        self._quietly(lambda: self.kube.delete_node(name))
        return lost

    def add_fault(self, name: str, fault: Fault) -> None:
        self.node_or_error(name)
        if not isinstance(self.runner, ModelRunner):
            raise ValueError("faults are injected into the physics model: run the emulator in model mode")
        self.runner.add_fault(name, fault)

    def clear_faults(self, name: str) -> None:
        self.node_or_error(name)
        if isinstance(self.runner, ModelRunner):
            self.runner.clear_faults(name)

    def describe(self) -> list[dict[str, Any]]:
        """What the control endpoint shows: names, classes, heartbeats and running pods (no hidden physics)."""
        out = []
        for name, state in self.nodes.items():
            faults = self.runner.faults(name) if isinstance(self.runner, ModelRunner) else []
            out.append(
                {
                    "name": name,
                    "class": state.node.node_class.name,
                    "zone": state.node.zone,
                    "rack": state.node.rack,
                    "removed": state.removed,
                    "heartbeats": state.heartbeats,
                    "runningPods": sorted(k for k in state.pods if k in self.pods and not self.pods[k].done),
                    "faults": [
                        {"kind": f.kind, "startS": f.start_s, "endS": f.end_s, "intensity": f.intensity}
                        for f in faults
                    ],
                }
            )
        return out
