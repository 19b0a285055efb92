"""The node emulator: registers emulated Nodes and plays their kubelet.

It keeps each node's Lease renewed and its status posted, watches pods bound to its nodes and hands them to
its :class:`~mrsched.emulator.kubelet.Kubelet` (admission, image pulls, running the task with a
:class:`TaskRunner`, status writes, activeDeadlineSeconds, deletion). Chaos hooks (delete a node, stop its
heartbeats, evict a pod, inject a fault, make image pulls fail) serve the tests and the CLI through the
control endpoint (:mod:`mrsched.emulator.control`).

All API writes for pods happen on one loop thread, in the order the kubelet would make them; heartbeats run
on their own threads so that a busy loop never lets a node go NotReady: a small pool renews the Leases, since
one thread renewing 1,000 of them one after another took longer than the node-monitor grace once the API
server was busy (bench-scale saw its nodes go NotReady and their pods evicted). Each node's longest gap between
two renewals is kept and shown, so a run can say how late its kubelets were.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from kubernetes.client.exceptions import ApiException

from mrsched.core.catalog import ClusterLayout
from mrsched.core.physics import Fault
from mrsched.emulator.images import KUBELET_IMAGE_BACKOFF_S
from mrsched.emulator.kube import KubeClient
from mrsched.emulator.kubelet import Kubelet
from mrsched.emulator.node_exporter import LOAD_SAMPLE_S, NodeInfo, NodeMetricsCollector
from mrsched.emulator.nodes import NodeState, lease_object, nodes_from_layout, now_micro
from mrsched.emulator.podcredentials import PodCredentials
from mrsched.emulator.processes import ProcessRunner
from mrsched.emulator.runners import ModelRunner, TaskRunner

log = logging.getLogger("mrsched.emulator")

#: Threads renewing Leases and posting node status: each call waits on the API server, not on this process's
#: CPU, so a few overlap them (the client's connection pool has room for them beside the pod watch and writes).
HEARTBEAT_THREADS = 4

Mode = Literal["model", "process"]
T = TypeVar("T")


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
    #: The first wait after a failed image pull, doubled per failure up to 300 s: the kubelet's 10 s by default;
    #: tests shorten it (so does ``fail_image_pulls(..., backoff_s=...)`` at run time).
    image_pull_backoff_s: float = KUBELET_IMAGE_BACKOFF_S


class Emulator:
    def __init__(self, cfg: EmulatorConfig) -> None:
        self.cfg = cfg
        self.kube = KubeClient(cfg.kubeconfig)
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        nodes = nodes_from_layout(cfg.layout, cfg.emulator_id, cfg.name_prefix)
        self.nodes: dict[str, NodeState] = {n.name: NodeState(n) for n in nodes}
        self.runner: TaskRunner
        if cfg.mode == "model":
            caps = {n.name: n.node_class.capability() for n in nodes}
            self.runner = ModelRunner(caps, seed=cfg.seed, time_scale=cfg.time_scale)
        else:
            # A pod's ServiceAccount volume filled as a kubelet fills it: the chart's operator runs as a pod here.
            credentials = PodCredentials(self.kube)
            self.runner = ProcessRunner(cfg.data_dir, cfg.run_dir, wake=self.wake, credentials=credentials)
        self.kubelet = Kubelet(
            self.kube, self.runner, self.nodes, image_pull_backoff_s=cfg.image_pull_backoff_s
        )
        self.metrics = NodeMetricsCollector(self._live_nodes, self.runner.usage)
        self._threads: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> None:
        # Heartbeats first: registering 1,000 nodes takes longer than the node-monitor grace, and the first
        # registered would otherwise go NotReady before the last is up.
        heartbeats = threading.Thread(target=self._heartbeat_loop, name="heartbeats", daemon=True)
        heartbeats.start()
        self._threads.append(heartbeats)
        for state in self.nodes.values():
            self._register(state)
        for target, name in (
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
            for key, pod in list(self.kubelet.pods.items()):
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

    def _register(self, state: NodeState) -> None:
        node = state.node
        try:
            created = self.kube.create_node(node.node_object())
        except ApiException as err:
            if err.status != 409:
                raise
            # A node of ours from an earlier run: take it over with our labels.
            created = self.kube.patch_node(node.name, {"metadata": {"labels": node.labels}})
        uid = created["metadata"]["uid"]
        self.kube.patch_node_status(node.name, node.status(ready=True))
        state.last_status = time.monotonic()
        try:
            self.kube.create_lease(lease_object(node.name, uid, self.cfg.lease_duration_s))
        except ApiException as err:
            if err.status != 409:
                raise
            self.kube.renew_lease(node.name, now_micro())
        state.renewed(time.monotonic())
        state.uid = uid  # last: the heartbeat threads take the node from here on

    def _heartbeat_loop(self) -> None:
        """Every ``heartbeat_interval_s`` from the start of the last sweep (not from its end, so a slow sweep
        does not stretch the interval), renew every heartbeating node's Lease, and post its status when due."""
        with ThreadPoolExecutor(HEARTBEAT_THREADS, thread_name_prefix="heartbeat") as pool:
            began = time.monotonic()
            while not self._stop.wait(max(0.0, began + self.cfg.heartbeat_interval_s - time.monotonic())):
                began = time.monotonic()
                # Nodes still registering (no uid yet) are left to their registration.
                due = [s for s in list(self.nodes.values()) if s.uid and not s.removed and s.heartbeats]
                list(pool.map(self._heartbeat, due))
                took = time.monotonic() - began
                if took > self.cfg.heartbeat_interval_s:
                    log.warning(
                        "renewing %d nodes' Leases took %.1f s (interval %.0f s)",
                        len(due),
                        took,
                        self.cfg.heartbeat_interval_s,
                    )

    def _heartbeat(self, state: NodeState) -> None:
        try:
            self.kube.renew_lease(state.node.name, now_micro())
            state.renewed(time.monotonic())
            if time.monotonic() - state.last_status >= self.cfg.node_status_interval_s:
                self.kube.patch_node_status(state.node.name, state.node.status(ready=True))
                state.last_status = time.monotonic()
        except ApiException as err:
            if err.status == 404:  # someone deleted the Node or its Lease: register again, as a kubelet
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
            deadline = min(self.runner.next_deadline(), self.kubelet.next_due())
            timeout = 1.0 if math.isinf(deadline) else min(1.0, max(0.0, deadline - time.monotonic()))
            try:
                kind, payload = self._events.get(timeout=timeout)
                self._dispatch(kind, payload)
                while True:  # drain what else is queued before polling the runner
                    kind, payload = self._events.get_nowait()
                    self._dispatch(kind, payload)
            except queue.Empty:
                pass
            self._safely(self.kubelet.tick)

    def _dispatch(self, kind: str, payload: Any) -> None:
        if kind == "pod":
            event, pod = payload
            self._safely(lambda: self.kubelet.on_pod(event, pod))
        elif kind == "relist":
            self.kubelet.relist(payload)
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

    # --- chaos hooks (call through :meth:`call`) --------------------------------------------------------------

    def node_or_error(self, name: str) -> NodeState:
        state = self.nodes.get(name)
        if state is None or state.removed:
            raise KeyError(f"no emulated node {name!r}; this emulator has {', '.join(self._names())}")
        return state

    def _names(self) -> list[str]:
        return [n for n, s in self.nodes.items() if not s.removed]

    def set_heartbeats(self, name: str, enabled: bool) -> None:
        state = self.node_or_error(name)
        state.heartbeats = enabled
        state.last_renewed = 0.0  # a gap chaos asked for is not the emulator's lateness
        if enabled:
            # Post the Ready status with the next heartbeat, as a kubelet does once it sees that the node
            # controller marked its node Unknown.
            state.last_status = 0.0

    def shut_down_node(self, name: str, grace_s: float) -> list[str]:
        """A graceful node shutdown (systemd's inhibitor, the kubelet's shutdownGracePeriod): the kubelet posts
        Ready=False ("node is shutting down", as its node status setter does while the shutdown manager reports
        one), its pods are ended within ``grace_s`` and marked as disrupted, and the node stops heartbeating."""
        state = self.node_or_error(name)
        if grace_s < 0:
            raise ValueError("graceS must not be negative")
        self._quietly(
            lambda: self.kube.patch_node_status(name, state.node.status(False, "node is shutting down"))
        )
        ended = self.kubelet.shut_down(name, grace_s)
        state.heartbeats = False
        return ended

    def delete_node(self, name: str) -> list[str]:
        """The machine is gone: its tasks die without a word and its Node object is deleted."""
        state = self.node_or_error(name)
        state.removed = True
        lost = self.kubelet.lose_node(name)
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

    def fail_image_pulls(self, image: str, for_s: float, backoff_s: float | None = None) -> dict[str, float]:
        """Pulls of ``image`` (a container's exact ``image``) fail for the next ``for_s`` seconds, on every node
        of this emulator; 0 or less clears it. Pods already waiting retry when their back-off ends, as the
        kubelet's do. ``backoff_s`` sets the first back-off of pulls that fail from now on (the kubelet's 10 s
        is long for a test). Returns the seconds left for each failing image."""
        if not image:
            raise ValueError("image must name a container image")
        if backoff_s is not None:
            if backoff_s <= 0:
                raise ValueError("backoffS must be positive")
            self.kubelet.image_pull_backoff_s = backoff_s
        now = time.monotonic()
        self.kubelet.failing_images.fail(image, for_s, now)
        return self.kubelet.failing_images.describe(now)

    def heartbeat_gaps(self) -> dict[str, float]:
        """Each live node's longest time between two Lease renewals: read from any thread (the heartbeat
        threads write them, one float each)."""
        return {n: round(s.max_renew_gap_s, 3) for n, s in list(self.nodes.items()) if not s.removed}

    def describe(self) -> list[dict[str, Any]]:
        """What the control endpoint shows: names, classes, heartbeats, running pods and pods waiting for their
        images (no hidden physics)."""
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
                    "heartbeatGapMaxS": round(state.max_renew_gap_s, 3),
                    "runningPods": self.kubelet.pods_on(state, running=True),
                    "pendingPods": self.kubelet.pods_on(state, running=False),
                    "faults": [
                        {"kind": f.kind, "startS": f.start_s, "endS": f.end_s, "intensity": f.intensity}
                        for f in faults
                    ],
                }
            )
        return out
