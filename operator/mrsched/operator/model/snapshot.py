"""The scheduling core's view of the cluster, built from nodes, task pods and job states (pure)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mrsched.core.framework import NodeView
from mrsched.core.kuberules import node_selector_matches, tolerates
from mrsched.core.model import UNCAPPED, Attempt, ClusterSnapshot, Job, Node, NodeMetrics, Resources, Task
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import parse_cpu, parse_memory_mb
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import parse_time

CLASS_LABEL = "mrsched.dev/node-class"
RACK_LABEL = "topology.mrsched.dev/rack"
ZONE_LABEL = "topology.kubernetes.io/zone"
MAP_SLOTS_LABEL = "mrsched.dev/map-slots"
REDUCE_SLOTS_LABEL = "mrsched.dev/reduce-slots"
#: The taint a degraded node carries with --taint-degraded-nodes (operator/learning/health.py sets it, as TAINT_KEY).
DEGRADED_TAINT_KEY = "mrsched.dev/degraded"

log = logging.getLogger("mrsched.snapshot")
_warned: set[str] = set()  # each unreadable value is logged once, not every round


def _warn_once(message: str) -> None:
    if message not in _warned:
        if len(_warned) >= 10_000:  # bounded: a long-running operator sees many pods come and go
            _warned.clear()
        _warned.add(message)
        log.warning("%s", message)


def _quantity_or(parse: Callable[[Any], float], value: Any, default: float, where: str) -> float:
    """A quantity another owner wrote (a node's allocatable, another tenant's pod): one that cannot be read is
    logged and counts as ``default``, never an error that would stop the round for every job."""
    try:
        return parse(value)
    except ValueError as err:
        _warn_once(f"{where}: {err}; counted as {default:g}")
        return default


def _slots(labels: dict[str, str], label: str, default: int, node: str) -> int:
    """A node's slots label (set by its owner with kubectl label): not a whole number >= 0, the default."""
    value = labels.get(label)
    if value is None:
        return default
    if value.isdigit():
        return int(value)
    _warn_once(f"node {node}: label {label}={value!r} is not a whole number; using {default} slots")
    return default


def _cap(configured: int | None) -> int:
    return UNCAPPED if configured is None else configured


@dataclass(frozen=True)
class NodeInfo:
    node: Node
    ready: bool
    schedulable: bool
    taints: tuple[dict[str, Any], ...]
    labels: dict[str, str]
    #: When the Ready condition last left True (its lastTransitionTime), while the node is not Ready.
    not_ready_since: float | None = None


def read_node(body: dict[str, Any], config: OperatorConfig) -> NodeInfo:
    meta, spec, status = body["metadata"], body.get("spec") or {}, body.get("status") or {}
    labels = meta.get("labels") or {}
    allocatable = status.get("allocatable") or {}
    condition: dict[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    ready = condition.get("status") == "True"
    not_ready_since = None if ready else _timestamp(condition.get("lastTransitionTime"))
    name = meta["name"]
    node = Node(
        name=name,
        cores=max(1, int(_quantity_or(parse_cpu, allocatable.get("cpu", "1"), 1, f"node {name} cpu"))),
        memory_mb=_quantity_or(
            parse_memory_mb, allocatable.get("memory", "1Gi"), 1024, f"node {name} memory (MiB)"
        ),
        rack=labels.get(RACK_LABEL, "rack-1"),
        zone=labels.get(ZONE_LABEL, "zone-a"),
        labels=tuple(sorted(labels.items())),
        node_class=labels.get(CLASS_LABEL, ""),
        map_slots=_slots(labels, MAP_SLOTS_LABEL, _cap(config.map_slots), name),
        reduce_slots=_slots(labels, REDUCE_SLOTS_LABEL, _cap(config.reduce_slots), name),
        by_requests=True,  # the kubelet admits a pod only if its requests fit: that bounds every policy here
    )
    return NodeInfo(
        node,
        ready,
        not spec.get("unschedulable", False),
        tuple(spec.get("taints") or ()),
        labels,
        not_ready_since,
    )


def _timestamp(text: str | None) -> float | None:
    """pods.parse_time, but a malformed value on a Node reads as unknown instead of stopping the round."""
    try:
        return parse_time(text)
    except ValueError:
        return None


def admits(info: NodeInfo, tolerations: tuple[dict[str, Any], ...], node_selector: dict[str, str]) -> bool:
    """Kubernetes' TaintToleration and NodeAffinity filters pass the node for a pod with these tolerations and
    this ``nodeSelector`` (:mod:`mrsched.core.kuberules`)."""
    return tolerates(info.taints, tolerations) and node_selector_matches(node_selector, info.labels)


def node_view(info: NodeInfo, canary: bool = False) -> NodeView:
    """The node as the framework's filters read it; a ``canary`` node without the degraded taint, which its
    canary map tolerates (operator/scheduling/canary.py: CANARY_TOLERATION)."""
    taints = info.taints
    if canary:
        taints = tuple(t for t in taints if t.get("key") != DEGRADED_TAINT_KEY)
    return NodeView(info.node.name, info.labels, taints, not info.schedulable)


def core_job(state: JobState, now: float, backoff: tuple[float, float], existing: Job | None = None) -> Job:
    """The core's Job for a MapReduceJob, task flags from its pods.

    Policies keep references to a job's Task objects across rounds (their indexes of pending maps), so an
    ``existing`` Job is updated in place rather than replaced.
    """
    spec = state.spec
    job = existing if existing is not None else _new_job(state)
    running = {"map": 0, "reduce": 0}
    maps_changed = existing is None
    tasks = state.tasks
    for task in (*job.maps, *job.reduces):
        ts = tasks[(task.kind, task.index)]
        succeeded = ts.succeeded  # each a pass over the attempts: once per task (every job read, every round)
        live = not succeeded and any(a.live for a in ts.attempts)
        task.attempts = len(ts.attempts)
        task.running = live
        maps_changed = maps_changed or (task.kind == "map" and task.done != succeeded)
        task.done = succeeded
        # retry_at is 0 without an attempt's pod (a failure known only from the record retries at once)
        task.backing_off = not succeeded and not live and bool(ts.attempts) and ts.retry_at(*backoff) > now
        running[task.kind] += live
    job.running_maps, job.running_reduces = running["map"], running["reduce"]
    job.finished_maps = sum(t.done for t in job.maps)
    job.finished_reduces = sum(t.done for t in job.reduces)
    job.start_s = state.first_start()
    job.priority = spec.priority
    if maps_changed:  # the set of finished maps changed: rebuild w_i(u), else it stands
        job.map_output_mb = map_output_mb(state)
    return job


def map_output_mb(state: JobState) -> dict[str, float]:
    """MB of the job's map output by the node holding it (seed 003's w_i(u), Eq 1): each succeeded map counts
    once, at its first successful attempt (the one whose output the job keeps), on that attempt's node.

    The size is the bytes the map wrote, from its TaskReport (the worker's termination message, which the
    emulator's model mode writes too). Without a report (a custom image, a message cut off) the map's input
    size stands in for it: an estimate, right for the identity-like maps of sort and terasort.
    """
    out: dict[str, float] = {}
    for ts in state.of("map"):
        done = [a for a in ts.attempts if a.phase == "Succeeded" and a.node]
        if not done:
            continue
        first = min(done, key=lambda a: (a.finished or a.created, a.attempt))
        written = (
            first.report.written_bytes if first.report is not None else state.spec.map_input_bytes(ts.index)
        )
        node = first.node or ""
        out[node] = out.get(node, 0.0) + written / 2**20
    return out


def _new_job(state: JobState) -> Job:
    spec = state.spec
    tasks: dict[str, list[Task]] = {"map": [], "reduce": []}
    for kind, index in state.tasks:
        split = spec.split_of(index) if kind == "map" else None
        input_bytes = (
            spec.map_input_bytes(index) if kind == "map" else spec.input_bytes // max(1, spec.reduces)
        )
        tasks[kind].append(
            Task(
                job_id=spec.uid,
                kind=kind,  # type: ignore[arg-type]
                index=index,
                input_mb=input_bytes / 2**20,
                replicas=split.hosts if split else (),
            )
        )
    return Job(
        id=spec.uid,
        app=spec.app,
        submit_s=state.created,
        maps=tasks["map"],
        reduces=tasks["reduce"],
        user=spec.user,
        queue=spec.queue,
        priority=spec.priority,
        map_hints=spec.map_hints,
        reduce_hints=spec.reduce_hints,
        reduce_slowstart=spec.reduce_slowstart,
        map_request=spec.map_resources,
        reduce_request=spec.reduce_resources,
        max_attempts=spec.backoff_limit + 1,
    )


class LiveAttempts:
    """Each job's live attempts as core :class:`Attempt` s, kept while its state and core Job are the very
    objects they were made from: a job the round did not read again (jobcache) has the same, and an idle round
    then makes no Attempt of its 10,000 pods. Attempts not started yet (their start is the round's time) are
    made every round."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[JobState, Job, list[Attempt]]] = {}

    def of(self, state: JobState, job: Job, now: float) -> list[Attempt]:
        held = self._held.get(job.id)
        if held is not None and held[0] is state and held[1] is job:
            return held[2]
        by_key: dict[tuple[str, int], Task] = {(t.kind, t.index): t for t in (*job.maps, *job.reduces)}
        attempts = [
            Attempt(by_key[(kind, index)], attempt.attempt, attempt.node, attempt.started or now)
            for (kind, index), ts in state.tasks.items()
            for attempt in ts.live
            if attempt.node
        ]
        if all(a.started for ts in state.tasks.values() for a in ts.live if a.node):
            self._held[job.id] = (state, job, attempts)
        else:
            self._held.pop(job.id, None)
        return attempts

    def forget(self, present: Iterable[str]) -> None:
        """Drop the jobs not in ``present`` (uids)."""
        keep = set(present)
        for uid in [u for u in self._held if u not in keep]:
            del self._held[uid]


def build(
    nodes: dict[str, Node],
    jobs: list[tuple[JobState, Job]],
    now: float,
    version: int,
    metrics: dict[str, NodeMetrics] | None = None,
    heartbeat_s: float = 3.0,
    live: LiveAttempts | None = None,
) -> ClusterSnapshot:
    """A snapshot with ``jobs`` active and their live attempts running on ``nodes`` (each job's from ``live``,
    when given)."""
    running: dict[str, list[Attempt]] = {name: [] for name in nodes}
    live = live or LiveAttempts()
    for state, job in jobs:
        for attempt in live.of(state, job, now):
            if attempt.node in running:
                running[attempt.node].append(attempt)
    ordered = [job for _, job in sorted(jobs, key=lambda sj: (sj[1].submit_s, sj[1].id))]
    return ClusterSnapshot(
        now=now,
        nodes=nodes,
        running=running,
        jobs=ordered,
        metrics=metrics or {},
        version=version,
        heartbeat_s=heartbeat_s,
    )


def reserve_others(snapshot: ClusterSnapshot, used: dict[str, Resources]) -> None:
    """Set the snapshot's :attr:`~ClusterSnapshot.reserved`: what ``used`` (every bound pod's requests, this
    round's placements so far included) holds on each node beyond the snapshot's own running attempts."""
    for name in snapshot.nodes:
        have = used.get(name)
        if have is None:
            continue
        cpu, memory = have.cpu, have.memory_mb
        for attempt in snapshot.running.get(name, ()):
            request = snapshot.job(attempt.task.job_id).request(attempt.task.kind)
            cpu -= request.cpu
            memory -= request.memory_mb
        snapshot.reserve(name, Resources(cpu=max(0.0, cpu), memory_mb=max(0.0, memory)))


def pod_request(pod: dict[str, Any]) -> tuple[str, float, float] | None:
    """(node, CPU, memory MiB) a bound, unfinished pod requests there; None for any other pod."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    cpu = mem = 0.0
    where = f"pod {(pod.get('metadata') or {}).get('namespace')}/{(pod.get('metadata') or {}).get('name')}"
    for container in (pod.get("spec") or {}).get("containers") or []:
        req = (container.get("resources") or {}).get("requests") or {}
        cpu += _quantity_or(parse_cpu, req.get("cpu", "0"), 0, f"{where} cpu request")
        mem += _quantity_or(parse_memory_mb, req.get("memory", "0"), 0, f"{where} memory request (MiB)")
    return node, cpu, mem


def requested(
    pods: list[dict[str, Any]],
    parse: Callable[[dict[str, Any]], tuple[str, float, float] | None] = pod_request,
) -> dict[str, Resources]:
    """CPU and memory requested on each node by its bound, unfinished pods (ours or not); ``parse`` may be a
    memo of :func:`pod_request` (watchcache.Memo) so that unchanged pods are not parsed again."""
    used: dict[str, list[float]] = {}
    for pod in pods:
        found = parse(pod)
        if found is None:
            continue
        acc = used.setdefault(found[0], [0.0, 0.0])
        acc[0] += found[1]
        acc[1] += found[2]
    return {n: Resources(cpu=c, memory_mb=m) for n, (c, m) in used.items()}
