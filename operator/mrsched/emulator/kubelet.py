"""The emulated kubelet's pod lifecycle: admission, image pulls, running, activeDeadlineSeconds, deletion.

For every pod bound to one of its nodes, the emulator does what a kubelet does, in its order: admit it (or reject
it as ``OutOf<resource>``), set its startTime, pull its images (a pull that fails leaves its containers waiting,
``ErrImagePull`` then ``ImagePullBackOff``, retried with the back-off; see :mod:`mrsched.emulator.images`),
start its task and write Running, then Succeeded or Failed (or, where its restartPolicy says so, restart it after
the back-off, CrashLoopBackOff meanwhile; see :mod:`mrsched.emulator.podstate`); a pod active longer than its
``spec.activeDeadlineSeconds`` since its startTime is killed (``DeadlineExceeded``); a deleted pod is stopped
and its deletion finished; a node's graceful shutdown ends its pods as disruptions and admits no more.

Everything here runs on the emulator's loop thread (chaos hooks get there through ``Emulator.call``), so that a
pod's status writes happen in the kubelet's order and never race each other.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import time
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

from mrsched.emulator.images import FailingImages, PodPulls
from mrsched.emulator.kube import KubeClient
from mrsched.emulator.nodes import NODE_ADDRESS, NodeState
from mrsched.emulator.podstate import (
    DEFAULT_GRACE_S,
    PodState,
    deadline_at,
    deadline_why,
    loopback_twin,
    pod_address,
    restarts_after,
)
from mrsched.emulator.podstatus import (
    SHUTDOWN_REJECTION,
    Requests,
    admit,
    crash_loop_status,
    never_started_status,
    now_rfc3339,
    pod_requests,
    rejected_status,
    running_status,
    shut_down_status,
    terminated_state,
    terminated_status,
    waiting_status,
)
from mrsched.emulator.reducewait import ReduceWaits
from mrsched.emulator.runners import SIGTERM_EXIT_CODE, ModelRunner, TaskExit, TaskRunner

log = logging.getLogger("mrsched.emulator")


class Kubelet:
    """The pods of every node of one emulator (a kubelet per node would only multiply threads: nodes share the
    loop, and admission looks at each node's own pods)."""

    def __init__(
        self,
        kube: KubeClient,
        runner: TaskRunner,
        nodes: dict[str, NodeState],
        *,
        image_pull_backoff_s: float,
    ) -> None:
        self.kube = kube
        self.runner = runner
        self.nodes = nodes
        self.pods: dict[str, PodState] = {}
        # Admitted pods, for their statuses: as admitted once running; the latest spec while they wait.
        self._pod_objects: dict[str, dict[str, Any]] = {}
        self._due: dict[str, float] = {}  # pods with a deadline or a pull retry ahead: when (monotonic)
        # Each pod's own IP, never reused: its processes bind its loopback twin for the wildcard (ProcessRunner),
        # so it must differ from every other pod's, this emulator's or another's.
        self._pod_addresses = itertools.count(1)
        self._subnet = random.Random().randrange(2, 255)
        self.failing_images = FailingImages()
        self.image_pull_backoff_s = image_pull_backoff_s
        self.reduces = ReduceWaits(runner) if isinstance(runner, ModelRunner) else None

    # --- events from the pod watch ---------------------------------------------------------------------------

    def on_pod(self, event: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        if self.reduces is not None:
            self.reduces.track(event, pod)
        node_state = self.nodes.get(spec.get("nodeName") or "")
        if node_state is None or node_state.removed:
            return
        key = f"{meta['namespace']}/{meta['name']}"
        known = self.pods.get(key)
        if known is not None and known.uid != meta["uid"]:
            self.forget(key)  # a new pod under an old name
            known = None
        if event == "DELETED":
            if known is not None:
                self.runner.kill(key)
                self.forget(key)
            return
        if meta.get("deletionTimestamp"):
            self._delete(key, pod, known)
            return
        if known is not None:
            self._update(key, known, pod)
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
        self._admit(key, node_state, pod)

    def relist(self, listed: Collection[str]) -> None:
        """Pods deleted while no watch was open sent no DELETED event: stop and forget them now."""
        for key in [k for k in self.pods if k not in listed]:
            self.runner.kill(key)
            self.forget(key)
        if self.reduces is not None:
            self.reduces.keep_listed(listed)

    def _update(self, key: str, state: PodState, pod: dict[str, Any]) -> None:
        """What the kubelet takes from a changed spec: activeDeadlineSeconds (which may be set or lowered while
        the pod runs) and, while its containers wait, new images (tried at once)."""
        if state.done:
            return
        state.deadline = deadline_at(pod, state.admitted)
        if not state.running and key in self._pod_objects:
            before, self._pod_objects[key] = self._pod_objects[key], pod
            if _images(before) != _images(pod):
                state.sync_at = time.monotonic()
        self._schedule(key, state)

    # --- admission, image pulls, start ----------------------------------------------------------------------

    def _admit(self, key: str, node_state: NodeState, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        request = pod_requests(pod)
        active = [self.pods[k] for k in node_state.pods if not self.pods[k].done]
        used = sum((p.requests for p in active), Requests())
        rejection = (
            SHUTDOWN_REJECTION
            if node_state.shutting_down
            else admit(request, used, len(active), node_state.node.capacity)
        )
        state = PodState(meta["uid"], node_state.node.name, request)
        self.pods[key] = state
        node_state.pods.add(key)
        if rejection is not None:
            state.done = True
            self.kube.patch_pod_status(meta["namespace"], meta["name"], rejected_status(rejection))
            log.info("rejected %s on %s: %s", key, state.node, rejection.reason)
            return
        n = next(self._pod_addresses)
        state.pod_ip = pod_address(self._subnet, n)
        state.started_at, state.admitted = now_rfc3339(), time.monotonic()
        state.deadline = deadline_at(pod, state.admitted)
        self._pod_objects[key] = pod
        self._sync(key, state, state.admitted)

    def _sync(self, key: str, state: PodState, now: float) -> None:
        """The pod worker's sync of a pod whose containers have not started: pull each container's image (the
        emulator starts a pod's containers together, once all are there), mount its volumes, else say why they
        wait."""
        pod = self._pod_objects[key]
        pulls = state.pulls or PodPulls(self.image_pull_backoff_s)
        waiting: dict[str, tuple[str, str]] = {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            why = pulls.ensure(container.get("image", ""), self.failing_images, now)
            if why is not None:
                waiting[container["name"]] = why
        if waiting:
            retry_at = pulls.next_sync([reason for reason, _ in waiting.values()], now)
        elif (unmounted := self.runner.mount(key, pod)) is not None:
            # The volume manager retries a failed mount with its back-off; the containers wait in
            # ContainerCreating meanwhile (the reason goes to a FailedMount event, not to the pod's status).
            log.info("%s waits for its volumes: %s", key, unmounted)
            state.mount_backoff_s = state.next_mount_backoff()
            waiting = {c["name"]: ("ContainerCreating", "") for c in pod["spec"]["containers"]}
            retry_at = now + state.mount_backoff_s
        if not waiting:
            state.pulls, state.sync_at = None, math.inf
            self._start(key, state, pod)
        else:
            state.pulls, state.sync_at = pulls, retry_at
            if waiting != state.waiting:
                state.waiting = waiting
                self._write(
                    key,
                    waiting_status(
                        pod,
                        started_at=state.started_at,
                        host_ip=NODE_ADDRESS,
                        pod_ip=state.pod_ip,
                        waiting=waiting,
                    ),
                )
        self._schedule(key, state)

    def _start(self, key: str, state: PodState, pod: dict[str, Any]) -> None:
        state.ran_at, state.ran_since = now_rfc3339(), time.monotonic()
        state.running = True
        state.waiting = {}
        self._write(
            key,
            running_status(
                pod,
                started_at=state.started_at,
                host_ip=NODE_ADDRESS,
                pod_ip=state.pod_ip,
                containers_started_at=state.ran_at,
                restarts=state.restarts,
                last_state={"terminated": state.last_terminated} if state.last_terminated else None,
            ),
        )
        # As the worker does (MRSCHED_WAIT_FOR_MAPS), a reduce holds its slot, idle, until its maps' output is there.
        if self.reduces is None or not self.reduces.hold(key, state.node, pod):
            self.runner.start(key, state.node, pod, address=loopback_twin(state.pod_ip))

    # --- timers: pull retries, deadlines, finished tasks --------------------------------------------------------

    def _schedule(self, key: str, state: PodState) -> None:
        due = min(state.sync_at, math.inf if state.deadline_exceeded else state.deadline)
        if state.done or math.isinf(due):
            self._due.pop(key, None)
        else:
            self._due[key] = due

    def next_due(self) -> float:
        """The soonest time (monotonic) :meth:`tick` has something to do, besides what the runner reports."""
        soonest = min(self._due.values(), default=math.inf)
        return min(soonest, self.reduces.next_deadline()) if self.reduces is not None else soonest

    def tick(self) -> None:
        """Report the tasks that ended, fail reduces that waited too long, retry pulls, enforce deadlines."""
        now = time.monotonic()
        ended = self.runner.poll() + (self.reduces.expire(now) if self.reduces is not None else [])
        for done in ended:
            _safely(partial(self._finish, done))
        for key in [k for k, at in self._due.items() if at <= now]:
            state = self.pods.get(key)
            if state is None or state.done:
                self._due.pop(key, None)
            elif now >= state.deadline and not state.deadline_exceeded:
                _safely(partial(self._exceed_deadline, key, state, now))
            elif not state.running and now >= state.sync_at:
                _safely(partial(self._sync, key, state, now))
            else:
                self._schedule(key, state)

    def _exceed_deadline(self, key: str, state: PodState, now: float) -> None:
        """The kubelet's active deadline handler: the pod fails; its containers are killed as at deletion
        (SIGTERM, SIGKILL after terminationGracePeriodSeconds) and it turns Failed once they stopped, with the
        exit they made; containers that never started are marked terminated (``ContainerStatusUnknown``)."""
        state.deadline_exceeded = True
        log.info("%s passed its activeDeadlineSeconds: killing it", key)
        grace = ((self._pod_objects.get(key) or {}).get("spec") or {}).get("terminationGracePeriodSeconds")
        self._end(key, state, now, DEFAULT_GRACE_S if grace is None else float(grace))

    def shut_down(self, name: str, grace_s: float) -> list[str]:
        """Graceful node shutdown: from now on the node admits no pod (``NodeShutdown``), and each of its pods is
        ended as at its deadline, within ``grace_s`` (the kubelet's shutdownGracePeriod), then written Failed
        with the shutdown's reason and a ``DisruptionTarget`` condition. Returns the pods ended."""
        self.nodes[name].shutting_down = True
        now = time.monotonic()
        ended = []
        for key in sorted(self.nodes[name].pods):
            state = self.pods.get(key)
            if state is not None and not state.done:
                state.shut_down = True
                ended.append(key)
                self._end(key, state, now, grace_s)
        return ended

    def _end(self, key: str, state: PodState, now: float, grace_s: float) -> None:
        """End a pod the kubelet decided to end: running containers get SIGTERM, then SIGKILL after ``grace_s``,
        and the pod is written once they stopped (``_finish``); containers that never started are marked
        terminated at once."""
        self._schedule(key, state)
        if state.running:
            done = self.reduces.terminate(key, now) if self.reduces is not None else None
            if done is not None:
                self._finish(done)
            else:
                self.runner.terminate(key, grace_s)
            return
        state.done, state.pulls, state.sync_at = True, None, math.inf
        self._schedule(key, state)
        if (pod := self._pod_objects.get(key)) is not None:
            status = never_started_status(
                pod, started_at=state.started_at, finished_at=now_rfc3339(), **deadline_why(state)
            )
            self._write(key, shut_down_status(status) if state.shut_down else status)

    def _finish(self, done: TaskExit) -> None:
        state = self.pods.get(done.pod_key)
        pod = self._pod_objects.get(done.pod_key)
        if state is None or pod is None or state.done:
            return
        ended_by_kubelet = state.deadline_exceeded or state.shut_down
        if not ended_by_kubelet and restarts_after(pod, done.exit_code):
            self._restart_later(done, state, pod)
            return
        self._pod_objects.pop(done.pod_key, None)
        state.done = True
        state.running = False
        self._schedule(done.pod_key, state)
        status = terminated_status(
            pod,
            exit_code=done.exit_code,
            started_at=state.ran_at,
            finished_at=now_rfc3339(),
            message=done.message,
            reason=done.reason,
            **(deadline_why(state) if done.exit_code != 0 else {}),
        )
        self._write(done.pod_key, shut_down_status(status) if state.shut_down else status)

    def _restart_later(self, done: TaskExit, state: PodState, pod: dict[str, Any]) -> None:
        """The container ended in a pod that restarts it: the pod stays Running, not Ready, its container
        waiting out the back-off (CrashLoopBackOff) with its last run's end, then the pod worker starts it again
        (the next sync after ``sync_at``), its restartCount one up."""
        now = time.monotonic()
        state.restart_backoff_s = state.next_restart_backoff(now)
        finished_at = now_rfc3339()
        state.last_terminated = terminated_state(
            pod, done.exit_code, state.ran_at, finished_at, done.message, done.reason
        )
        state.restarts += 1
        state.running = False
        state.sync_at = now + state.restart_backoff_s
        log.info(
            "%s ended (exit %d): restarting it in %.0f s",
            done.pod_key,
            done.exit_code,
            state.restart_backoff_s,
        )
        self._write(
            done.pod_key,
            crash_loop_status(
                pod,
                started_at=state.started_at,
                host_ip=NODE_ADDRESS,
                pod_ip=state.pod_ip,
                restarts=state.restarts,
                last_terminated=state.last_terminated,
                backoff_s=state.restart_backoff_s,
                at=finished_at,
            ),
        )
        self._schedule(done.pod_key, state)

    # --- deletion, and forgetting ----------------------------------------------------------------------------

    def _delete(self, key: str, pod: dict[str, Any], known: PodState | None) -> None:
        """Stop what runs, write the containers' end, and finish the deletion (grace 0, this UID only)."""
        meta = pod["metadata"]
        if known is not None and not known.done:
            known.done = True
            if known.running:
                self.runner.kill(key)
                status = terminated_status(
                    pod,
                    exit_code=SIGTERM_EXIT_CODE,
                    started_at=known.ran_at,
                    finished_at=now_rfc3339(),
                    message="",
                    reason="Error",
                )
            else:  # still waiting for its images
                status = never_started_status(pod, started_at=known.started_at, finished_at=now_rfc3339())
            _safely(partial(self._write, key, status))
        self.kube.delete_pod_now(meta["namespace"], meta["name"], meta["uid"])
        self.forget(key)

    def forget(self, key: str) -> None:
        state = self.pods.pop(key, None)
        self._pod_objects.pop(key, None)
        self._due.pop(key, None)
        if self.reduces is not None:
            self.reduces.drop(key)
        if state is not None and state.node in self.nodes:
            self.nodes[state.node].pods.discard(key)

    def lose_node(self, name: str) -> list[str]:
        """The machine is gone: its tasks die without a word (returned), and nothing more is written for its
        pods (no pull retries, no deadlines)."""
        lost = self.runner.remove_node(name)
        if self.reduces is not None:
            lost += self.reduces.on_node(name)
        for key in lost:
            self._pod_objects.pop(key, None)
        for key in self.nodes[name].pods:
            self._due.pop(key, None)
        return lost

    def pods_on(self, node: NodeState, *, running: bool) -> list[str]:
        """The node's live pods: running (their task started), or pending (waiting for their images)."""
        return sorted(
            k
            for k in node.pods
            if k in self.pods and not self.pods[k].done and self.pods[k].running == running
        )

    def _write(self, key: str, status: dict[str, Any]) -> None:
        namespace, name = key.split("/", 1)
        self.kube.patch_pod_status(namespace, name, status)


def _images(pod: dict[str, Any]) -> list[str]:
    return [c.get("image", "") for c in (pod.get("spec") or {}).get("containers") or []]


def _safely(call: Callable[[], object]) -> None:
    try:
        call()
    except Exception as err:
        log.warning("%s", err)
