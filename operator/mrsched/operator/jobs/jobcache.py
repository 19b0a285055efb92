"""Jobs with nothing to do this round: their state, phase and core ``Job`` kept from the round that last
reconciled them, so that a round costs what changed, not what exists (an idle round over 200 running jobs and
10,000 running pods reads no pod and writes nothing).

A job's round is a function of its object, its pods, the worker nodes its attempts ran on and the clock. The
first two are the job's key: its resourceVersion and its pods' group version (watchcache.WatchedList.groups);
the nodes are checked one by one (each still there, as Ready as it was, on the same rack): a node going NotReady
makes the jobs with attempts there read again, not all jobs; a job not started yet reads every worker
(its Unplaceable verdict), so any worker's change makes it read again. The clock matters only through timers, each
known when the job is reconciled (:func:`quiet_until`): a pending pod's start and pending timeouts, a NotReady
node's grace, a failed task's retry delay, the reduce-idle counter's resolution, a refusing node's cooldown,
finished pods' and the job's own TTL. A job is taken from the cache while its key is unchanged and no timer is
due; anything else, or any doubt, reconciles it as every round did before (kube-scheduler's informers and
work queue, in the shape of Hadoop's heartbeat loop).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from mrsched.operator.jobs import fit
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import FATAL_WAITING, TRANSIENT_WAITING, PodAttempt, parse_time
from mrsched.operator.model.status import IDLE_RESOLUTION_S

#: A node as a job's round sees it: None when gone, else (Ready, rack).
NodeState = tuple[bool, str] | None


@dataclass
class QuietJob:
    """A job as its last reconciliation left it, valid while ``key`` holds and until ``until``."""

    key: tuple[Hashable, Hashable]
    until: float
    body: dict[str, Any]
    state: JobState
    phase: str
    active: bool
    refusing: frozenset[str] = frozenset()
    #: the nodes its attempts ran on, as they were (node_state): a change there changes its round
    nodes: dict[str, NodeState] = field(default_factory=dict)
    #: a job not started: its round reads every worker (fit.unplaceable), so any change to one changes it
    reads_every_worker: bool = False


def node_state(info: snap.NodeInfo | None) -> NodeState:
    """What a job's round reads of a node: whether it is there, Ready, and its rack (status.locality)."""
    return None if info is None else (info.ready, info.node.rack)


def nodes_of(state: JobState, workers: dict[str, snap.NodeInfo]) -> dict[str, NodeState]:
    return {
        a.node: node_state(workers.get(a.node))
        for task in state.every_task()
        for a in task.attempts
        if a.node
    }


@dataclass
class JobCache:
    _jobs: dict[str, QuietJob] = field(default_factory=dict)
    #: each worker's state at the last :meth:`begin_round`, and the names of those that changed at it
    _node_states: dict[str, NodeState] = field(default_factory=dict)
    _changed: set[str] = field(default_factory=set)
    #: the workers at the last :meth:`begin_round`, and whether any of them (any field) differed from the round before
    _workers: dict[str, snap.NodeInfo] = field(default_factory=dict)
    _workers_changed: bool = True

    #: why the jobs asked for this round were not taken from the cache (what a round read again, and why):
    #: "new" (not held: first seen, or touched), "job" (its object changed), "pods" (one of its pods did),
    #: "timer" (one of its timers is due), "node" (a node its attempts ran on changed state, or, for a job not
    #: started, any worker changed)
    misses: Counter[str] = field(default_factory=Counter)

    def begin_round(self, workers: dict[str, snap.NodeInfo]) -> None:
        """Note which nodes changed state (node_state) since the last round: a held job is valid only while none
        of the nodes its attempts ran on did. Called once a round, before :meth:`get`, with the workers its
        jobs are reconciled against; held jobs are checked every round, so comparing with the last round's
        states is comparing with the states they were held with."""
        states = {name: node_state(info) for name, info in workers.items()}
        old = self._node_states
        self._changed = {name for name, now in states.items() if old.get(name) != now}
        self._changed.update(name for name, was in old.items() if was is not None and name not in states)
        self._node_states = states
        # NodeInfo compares by value (an unchanged node's is often the same object): a few ms for 1,000 workers.
        self._workers_changed = workers != self._workers
        self._workers = dict(workers)
        self.misses = Counter()

    def get(self, uid: str, key: tuple[Hashable, Hashable], now: float) -> QuietJob | None:
        """The job as held, if its key (resourceVersion, its pods' group version) is the held one, no timer of
        its is due and none of its nodes changed state at this round's :meth:`begin_round`."""
        held = self._jobs.get(uid)
        why = None
        if held is None:
            why = "new"
        elif held.key != key:
            why = "job" if held.key[0] != key[0] else "pods"
        elif now >= held.until:
            why = "timer"
        elif (self._changed and not self._changed.isdisjoint(held.nodes)) or (
            held.reads_every_worker and self._workers_changed
        ):
            why = "node"
        if why is not None:
            self.misses[why] += 1
            return None
        return held

    def put(self, uid: str, quiet: QuietJob) -> None:
        self._jobs[uid] = quiet

    def touch(self, uids: Iterable[str]) -> None:
        """Reconcile these jobs next round whatever their key says: something this round did to them (a
        placement, a finalizer or a deletion that failed) is not in their key."""
        for uid in uids:
            self._jobs.pop(uid, None)

    def forget(self, present: AbstractSet[str]) -> None:
        for uid in [u for u in self._jobs if u not in present]:
            del self._jobs[uid]

    def __len__(self) -> int:
        return len(self._jobs)


def not_started(state: JobState, phase: str) -> bool:
    """Phase Pending and no attempt yet: the job's round reads only its object and every worker."""
    return phase == "Pending" and not any(task.attempts for task in state.every_task())


def quiet_until(
    state: JobState,
    phase: str,
    now: float,
    config: OperatorConfig,
    workers: dict[str, snap.NodeInfo],
    has_pods: bool,
) -> float:
    """Until when the job's round would change nothing but what its key tracks: ``now`` when it must be
    reconciled every round (a pod not yet bound, a node not Ready, a job being deleted or committing), else the
    first of its timers, ``inf`` when it has none.

    A pod bound to a Ready node and not yet running changes the job's round only through the pod itself (its
    status, which changes the key) or through its timers: the pending timeout, or the start grace while the
    kubelet cannot pull its image (reconcile). A job not started (phase Pending, no attempt) depends on its
    object and on the workers only (``fit.unplaceable``): held while none of them changes
    (:attr:`QuietJob.reads_every_worker`)."""
    if state.deleting:
        return now
    if phase in ("Succeeded", "Failed"):
        done = parse_time(state.status.get("completionTime"))
        if done is None:
            return now
        until = math.inf
        if state.spec.ttl_after_finished_s is not None:
            until = done + state.spec.ttl_after_finished_s
        if has_pods:  # finished pods are pruned finishedPodTTLSeconds after the job ends (tracking.prunable)
            until = min(until, done + config.finished_pod_ttl_s)
        return until
    if not_started(state, phase):
        return math.inf
    if phase != "Running" or state.needs_commit():
        return now
    until = math.inf
    backoff = (config.backoff_base_s, config.backoff_max_s)
    maps_running = False
    reduces_early = False
    # One pass over each task's attempts: this runs for every job read, and a placing round reads most of them.
    for task in state.every_task():
        live = False
        for attempt in task.attempts:
            if attempt.phase == "Failed":
                if (refused_until := _refusal_until(attempt, config)) > now:
                    until = min(until, refused_until)
                continue
            if not attempt.live:
                continue
            live = True
            if attempt.node is None or attempt.phase not in ("Running", "Pending"):
                return now  # kube-scheduler's verdicts, a pod whose node lost touch (Unknown)
            info = workers.get(attempt.node)
            if info is None or not info.ready:
                return now  # the node-lost grace runs
            maps_running = maps_running or task.kind == "map"
            reduces_early = reduces_early or task.kind == "reduce"
            if attempt.phase == "Pending":
                if attempt.reason in FATAL_WAITING:
                    return now  # fails the job this round
                if attempt.started is None:  # reconcile's start grace and pending timeout
                    wait = (
                        config.pod_start_grace_s
                        if attempt.reason in TRANSIENT_WAITING
                        else config.pending_timeout_s
                    )
                    until = min(until, attempt.created + wait)
        if not live and task.attempts and not task.succeeded:
            retry = task.retry_at(*backoff)
            if retry > now:
                until = min(until, retry)  # backing off: schedulable again then (on_task_requeued)
    if reduces_early and (maps_running or state.maps_done() < len(state.of("map"))):
        # status.reduceIdleSeconds grows with the clock, in steps of IDLE_RESOLUTION_S, while maps run
        until = min(until, now - now % IDLE_RESOLUTION_S + IDLE_RESOLUTION_S)
    return until


def refusals(attempts: Iterable[PodAttempt], now: float, config: OperatorConfig) -> frozenset[str]:
    return frozenset(fit.refusing_nodes(attempts, now, config.node_refusal_cooldown_s))


def _refusal_until(attempt: PodAttempt, config: OperatorConfig) -> float:
    if attempt.node is None or attempt.phase != "Failed" or not fit.is_refusal(attempt):
        return -math.inf
    return (attempt.finished or attempt.created) + config.node_refusal_cooldown_s
