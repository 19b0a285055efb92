"""The scheduling loop: Hadoop's heartbeat, once for the whole cluster.

Each round reads nodes, task pods and jobs from the API server, rebuilds every job's state from its pods
(``jobstate``), writes status and Events, retires what must go (pods of failed jobs, pods on lost nodes, jobs
past their TTL), hands task outcomes to the policies' learning hooks, then asks each policy in use for
placements on a fresh core snapshot and creates the placed pods already bound to their nodes. ``kube-default``
jobs get unbound pods with the default schedulerName: the real kube-scheduler places them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes.client.exceptions import ApiException

from mrsched.core.model import Explanation, Job, Node, NodeMetrics, Placement, TaskOutcome
from mrsched.core.policy import Policy, registered
from mrsched.operator import snapshot as snap
from mrsched.operator import status as job_status
from mrsched.operator import tracking
from mrsched.operator.canary import CanaryGate, busy_nodes, canary_explanation, canary_spec
from mrsched.operator.config import OperatorConfig
from mrsched.operator.health import NodeHealthReporter, untolerated_degraded
from mrsched.operator.jobspec import InvalidSpec
from mrsched.operator.jobstate import JobState, TaskState, parse_time
from mrsched.operator.kubeapi import ClusterApi
from mrsched.operator.leader import LeadershipLost
from mrsched.operator.metrics import OperatorMetrics
from mrsched.operator.nodemetrics import NodeMetricsSource, prometheus_query
from mrsched.operator.pods import (
    ATTEMPT_LABEL,
    INDEX_LABEL,
    JOB_UID_LABEL,
    TRACKING_FINALIZER,
    TYPE_LABEL,
    PodAttempt,
    read_attempt,
    task_pod,
)
from mrsched.operator.probes import ProbeRunner
from mrsched.operator.profiles import ProfileStore
from mrsched.policies import make_policy

log = logging.getLogger("mrsched.loop")
KUBE_DEFAULT = "kube-default"


@dataclass
class RoundStats:
    created: int = 0
    deleted: int = 0
    jobs: int = 0
    seconds: float = 0.0
    placed: dict[str, int] = field(default_factory=dict)


class SchedulingLoop:
    def __init__(
        self,
        api: ClusterApi,
        config: OperatorConfig,
        metrics: OperatorMetrics | None = None,
        *,
        clock: Callable[[], float] = time.time,
        node_metrics: NodeMetricsSource | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self.metrics = metrics or OperatorMetrics()
        self.clock = clock
        if node_metrics is None and config.prometheus_url:
            query = prometheus_query(config.prometheus_url)
            node_metrics = NodeMetricsSource(query, config.metrics_settings(), clock)
        self.node_metrics = node_metrics
        self.policies: dict[str, Policy] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._version = 0
        self._jobs: dict[str, Job] = {}  # by uid: the same objects every round (policies index their tasks)
        # What this process has told the policies, by job uid; forgotten once the job is gone (``_forget``).
        self._known_jobs: dict[str, str] = {}  # uid -> the job's policy
        self._finished_jobs: set[str] = set()
        self._seen_outcomes: dict[str, set[str]] = defaultdict(set)  # uid -> attempts seen finished
        self._unschedulable: set[str] = set()  # pods whose kube-scheduler verdict was announced
        self._not_ready_seen: dict[str, float] = {}  # NotReady nodes without a transition time: first seen
        self._metrics_status: dict[str, str] = {}  # node -> its metrics' status at the last read
        self._pool = ThreadPoolExecutor(config.create_workers, thread_name_prefix="create")
        self.healthy_at = 0.0
        self.profiles = ProfileStore(api, clock)
        self.prober = ProbeRunner(api, self.profiles, config)
        self.health = NodeHealthReporter(
            api,
            self.profiles,
            self.metrics,
            enabled=config.health_monitor,
            taint=config.taint_degraded_nodes,
            interval_s=config.health_write_interval_s,
        )
        self.canaries = CanaryGate(config.degraded_canary_interval_s if config.taint_degraded_nodes else 0.0)
        self._profiles_loaded = False
        self._persist = True

    # running ----------------------------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._pool.shutdown(wait=False)

    def wait(self, timeout_s: float) -> None:
        """Until the next heartbeat, or sooner when a watch event wakes the loop (at most 20 rounds/s)."""
        time.sleep(0.05)
        self._wake.wait(max(0.0, timeout_s - 0.05))
        self._wake.clear()

    def policy(self, name: str) -> Policy:
        if name not in self.policies:
            options = self.config.policy_options if name == self.config.policy else {}
            policy = self.policies[name] = make_policy(name, options)
            # What it learned before a restart (the AppProfile, NodeProfile and PolicyProfile resources). A
            # saved state the policy cannot read (edited by hand, an older shape) must not stop its jobs: it
            # starts from scratch and overwrites it.
            try:
                policy.load_state(self.profiles.policy_state(name))
            except Exception as err:
                log.warning("%s: saved learned state unreadable, starting from scratch: %s", name, err)
                policy = self.policies[name] = make_policy(name, options)
        return self.policies[name]

    # one round --------------------------------------------------------------------------------------------

    def round(self) -> RoundStats:
        started = time.monotonic()
        stats = RoundStats()
        now = self.clock()
        if not self._profiles_loaded:
            self._load_profiles()
        bodies_of_nodes = self.api.list_nodes()
        nodes = [snap.read_node(n, self.config) for n in bodies_of_nodes]
        workers = {
            n.node.name: n for n in nodes if snap.selector_matches(self.config.node_selector, n.labels)
        }
        usable = {name: n for name, n in workers.items() if n.ready and n.schedulable}
        attempts: dict[str, list[PodAttempt]] = defaultdict(list)
        pods_by_name: dict[str, dict[str, Any]] = {}
        for pod in self.api.list_task_pods():
            attempt = read_attempt(pod)
            uid = (pod["metadata"].get("labels") or {}).get(JOB_UID_LABEL, "")
            if attempt is not None:
                attempts[uid].append(attempt)
                pods_by_name[f"{pod['metadata']['namespace']}/{attempt.name}"] = pod
        bodies = self.api.list_jobs()
        stats.jobs = len(bodies)
        phases: dict[str, int] = defaultdict(int)
        states: list[tuple[dict[str, Any], JobState]] = []
        for body in bodies:
            try:
                states.append((body, JobState.build(body, attempts.get(body["metadata"]["uid"], []))))
            except InvalidSpec as err:
                phases[self._refuse(body, str(err), now)] += 1

        active: list[tuple[dict[str, Any], JobState]] = []
        racks = {name: info.node.rack for name, info in workers.items()}
        recorded: set[str] = set()  # jobs whose status now holds what their pods showed this round
        for body, state in list(states):
            try:
                phase = self._reconcile(body, state, workers, racks, now, stats)
            except LeadershipLost:
                raise  # no more writes this round (leader.py)
            except Exception as err:  # one job's fault (a 429 on its status patch) must not stop the others
                self._job_error(body, "reconcile", err)
                states.remove((body, state))  # nothing is learnt or placed from a state not written
                phases[str((body.get("status") or {}).get("phase") or "Pending")] += 1
                continue
            recorded.add(state.spec.uid)
            phases[phase] += 1
            if phase in ("Pending", "Running"):
                active.append((body, state))
        present = {body["metadata"]["uid"] for body in bodies}
        departed = {uid for uid in attempts if uid not in present} | {
            s.spec.uid for _, s in states if s.deleting
        }
        up = {name for name, info in workers.items() if info.ready}
        self._release(list(pods_by_name.values()), recorded, departed, up)
        for phase in ("Pending", "Running", "Succeeded", "Failed"):
            self.metrics.jobs.labels(phase).set(phases.get(phase, 0))
        self._forget({body["metadata"]["uid"] for body in bodies}, now)
        self._learn(states, now)
        probing = self._probe(workers)
        usable = {name: info for name, info in usable.items() if name not in probing}
        versions = {n["metadata"]["name"]: n["metadata"].get("resourceVersion", "") for n in bodies_of_nodes}
        self.metrics.profile_writes.inc(self.health.publish(workers, versions, now, persist=self._persist))
        canaries: set[str] = set()
        # Degraded-tainted nodes that no job tolerates take no task, but a canary map now and then (canary.py).
        if active:
            tainted = untolerated_degraded(usable, [state.spec.tolerations for _, state in active])
            canaries = self.canaries.due(tainted, busy_nodes(pods_by_name.values()), now)
            usable = {name: info for name, info in usable.items() if name not in tainted or name in canaries}
        self._place(active, usable, list(pods_by_name.values()), now, stats, canaries)
        self._save_profiles(workers)
        stats.seconds = time.monotonic() - started
        self.metrics.loop_seconds.observe(stats.seconds)
        self.metrics.last_round.set(self.clock())
        self.healthy_at = time.monotonic()
        return stats

    # learned state ----------------------------------------------------------------------------------------

    def _load_profiles(self) -> None:
        try:
            self.profiles.load()
        except ApiException as err:
            if err.status not in (403, 404):
                raise
            # Without the profile CRDs (or the right to read them) nothing learned survives a restart; say so.
            log.warning(
                "cannot read NodeProfiles/AppProfiles (%s %s): learned state will not persist; "
                "install the CRDs in crds/ and the chart's RBAC",
                err.status,
                err.reason,
            )
            self._persist = False
        else:
            try:
                self.health.load()
            except Exception as err:  # the monitor starts from scratch
                log.warning("node health: cannot read its saved state: %s", err)
        self._profiles_loaded = True

    def _probe(self, workers: dict[str, snap.NodeInfo]) -> set[str]:
        """Nodes being probed (seed 002 P3-A): they take no tasks until their capability is known."""
        mode = self.config.probe_nodes
        wanted = mode == "always" or (
            mode == "auto"
            and (
                registered()[self.config.policy].needs_probes
                or any(p.needs_probes for p in self.policies.values())
            )
        )
        if not wanted or not self._persist:
            return set()
        probing = self.prober.step(workers)
        self.metrics.nodes_probing.set(len(probing))
        return probing

    def _save_profiles(self, workers: dict[str, snap.NodeInfo]) -> None:
        if not self._persist:
            return
        nodes = {name: info.node for name, info in workers.items()}
        for name, policy in self.policies.items():
            state = policy.state()
            if not state:
                continue
            try:
                self.metrics.profile_writes.inc(self.profiles.save_policy_state(name, state, nodes))
            except Exception as err:  # written again next round: the store records only successful writes
                log.warning("saving %s's learned state: %s", name, err)

    # lifecycle --------------------------------------------------------------------------------------------

    def _reconcile(
        self,
        body: dict[str, Any],
        state: JobState,
        workers: dict[str, snap.NodeInfo],
        racks: dict[str, str],
        now: float,
        stats: RoundStats,
    ) -> str:
        """Status, Events and clean-up for one job; returns its phase."""
        spec = state.spec
        if state.deleting:
            return state.finished_phase or "Running"  # the garbage collector removes its pods
        policy = spec.policy or self.config.policy
        fatal = ""
        if not state.finished_phase:
            for task in state.every_task():
                for attempt in task.live:
                    gone = attempt.node is not None and attempt.node not in workers
                    lost = gone or self._node_lost(attempt.node, workers, now)
                    stuck = (
                        attempt.phase == "Pending"
                        and attempt.started is None
                        and (now - attempt.created > self.config.pending_timeout_s)
                    )
                    if attempt.unschedulable and f"{spec.uid}/{attempt.name}" not in self._unschedulable:
                        self._unschedulable.add(f"{spec.uid}/{attempt.name}")
                        self.api.event(
                            body, "Warning", "TaskUnschedulable", f"{attempt.name}: {attempt.message}"
                        )
                    if attempt.fatal_waiting:
                        fatal = f"pod {attempt.name} cannot start: {attempt.reason}: {attempt.message}"
                    elif lost or stuck:
                        why = (
                            f"node {attempt.node} is gone"
                            if gone
                            else f"node {attempt.node} NotReady for {self.config.node_lost_grace_s:.0f} s"
                            if lost
                            else "pending too long"
                        )
                        log.info("retrying %s/%s: %s", spec.namespace, attempt.name, why)
                        self.api.event(
                            body, "Warning", "TaskRescheduled", f"{attempt.name}: {why}; placing it again"
                        )
                        # Never forced while its node may still run it: the kubelet ends it within its grace
                        # period once back (the replacement shares no file with it: its scratch and temporary
                        # names are keyed by the pod's uid). A Node that no longer exists runs nothing, and
                        # the pod GC would force-delete its pods anyway.
                        self.api.delete_pod(spec.namespace, attempt.name, grace_s=0 if gone else None)
                        stats.deleted += 1
                        task.attempts.remove(attempt)
                        task.attempts.append(_lost(attempt))
        verdict = job_status.decide(state, fatal)
        backoff = (self.config.backoff_base_s, self.config.backoff_max_s)
        new, transitions = job_status.compute(state, verdict, policy, now, backoff, racks)
        if _differs(state.status, new):
            self.api.patch_job_status(spec.namespace, spec.name, new)
        if not state.finished_phase and verdict.phase in ("Succeeded", "Failed"):
            # Once per job: this round records its completion (a restarted operator sees it finished already).
            self.metrics.job_finished(
                policy,
                new["starvationSeconds"],
                new["reduceIdleSeconds"],
                job_status.map_locality_counts(state, racks),
            )
        for t in transitions:
            self.api.event(body, t.type, t.reason, t.message)
        self._announce_failures(body, state)
        if verdict.phase == "Failed":
            for task in state.every_task():
                for attempt in task.live:
                    self.api.delete_pod(spec.namespace, attempt.name)
                    stats.deleted += 1
        if verdict.phase in ("Succeeded", "Failed") and spec.ttl_after_finished_s is not None:
            done_at = parse_time(new.get("completionTime")) or now
            if now >= done_at + spec.ttl_after_finished_s:
                log.info(
                    "deleting %s: finished %.0f s ago (ttlSecondsAfterFinished)", spec.key, now - done_at
                )
                self.api.delete_job(spec.namespace, spec.name)
        state.status = new
        return verdict.phase

    def _node_lost(self, node: str | None, workers: dict[str, snap.NodeInfo], now: float) -> bool:
        """The node has been NotReady for ``node_lost_grace_s``: since its Ready condition's last transition,
        else since this operator first saw it NotReady (taint-based eviction's timing, not the first miss)."""
        if node is None or node not in workers or workers[node].ready:
            self._not_ready_seen.pop(node or "", None)
            return False
        since = workers[node].not_ready_since or self._not_ready_seen.setdefault(node, now)
        return now - since >= self.config.node_lost_grace_s

    def _refuse(self, body: dict[str, Any], message: str, now: float) -> str:
        """A job whose spec cannot run (jobspec.InvalidSpec): Failed, saying why, once; other jobs go on."""
        old = dict(body.get("status") or {})
        if old.get("reason") == "InvalidSpec":
            return "Failed"
        meta = body["metadata"]
        log.warning("%s/%s cannot run: %s", meta["namespace"], meta["name"], message)
        self.metrics.job_errors.labels("spec").inc()
        try:
            self.api.patch_job_status(meta["namespace"], meta["name"], job_status.invalid(old, message, now))
            self.api.event(body, "Warning", "InvalidSpec", message)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # written again next round
            self._job_error(body, "spec", err)
        return "Failed"

    def _job_error(self, body: dict[str, Any], stage: str, err: Exception) -> None:
        """An error in one job's part of the round: logged, counted, and an Event on the job when the API takes
        one; the round goes on for the other jobs."""
        meta = body["metadata"]
        log.error("%s/%s: %s failed: %s", meta["namespace"], meta["name"], stage, err, exc_info=err)
        self.metrics.job_errors.labels(stage).inc()
        try:
            self.api.event(body, "Warning", "ReconcileError", f"{stage}: {type(err).__name__}: {err}")
        except Exception:  # the API refusing the event too (throttled): the log and the metric have it
            log.debug("no event for %s/%s's error", meta["namespace"], meta["name"], exc_info=True)

    def _announce_failures(self, body: dict[str, Any], state: JobState) -> None:
        for task in state.every_task():
            for attempt in task.failures:
                if attempt.name in self._seen_outcomes[state.spec.uid] or task.outcome_recorded(attempt):
                    continue  # announced already, by this operator or by one before a restart
                why = attempt.report.error if attempt.report and attempt.report.error else attempt.message
                self.api.event(
                    body,
                    "Warning",
                    "TaskFailed",
                    f"{attempt.name} on {attempt.node} failed (exit {attempt.exit_code}, {attempt.reason}): {why}; "
                    f"{task.failure_count} of {state.spec.backoff_limit + 1} attempts used",
                )

    # learning ---------------------------------------------------------------------------------------------

    def _learn(self, states: list[tuple[dict[str, Any], JobState]], now: float) -> None:
        """Feed finished attempts and finished jobs to the policies' hooks, once each."""
        for _, state in states:
            spec = state.spec
            if spec.uid in self._finished_jobs:
                continue
            policy = self.policy(spec.policy or self.config.policy)
            job = self._core_job(state, now)
            if spec.uid not in self._known_jobs:
                self._known_jobs[spec.uid] = spec.policy or self.config.policy
                if not state.finished_phase:
                    policy.on_job_submitted(job, now)
            seen = self._seen_outcomes[spec.uid]
            for task in state.tasks.values():
                for attempt in task.attempts:
                    if attempt.phase not in ("Succeeded", "Failed") or attempt.rejected:
                        continue
                    if attempt.name in seen:
                        continue
                    seen.add(attempt.name)
                    if task.outcome_recorded(attempt):
                        # Recorded in the job's status before this round: an earlier round (maybe of an operator
                        # since restarted) counted and learnt it, and the policy's saved state has it. One that
                        # finished while no operator ran is not recorded yet: it is learnt now, once.
                        continue
                    self.metrics.tasks_finished.labels(task.kind, attempt.phase.lower()).inc()
                    outcome = _outcome(job, task, attempt, now)
                    policy.on_task_finished(outcome)
                    self.health.task_finished(spec.app, task.kind, outcome, now)
            if state.status.get("phase") in ("Succeeded", "Failed") and spec.uid not in self._finished_jobs:
                self._finished_jobs.add(spec.uid)
                policy.on_job_finished(job, now)
                self._jobs.pop(spec.uid, None)
                self._seen_outcomes.pop(spec.uid, None)  # recorded in its status: nothing more to learn

    def _forget(self, present: AbstractSet[str], now: float) -> None:
        """Drop what is remembered of jobs that no longer exist; a job deleted before it finished is finished
        for its policy too (lsps would otherwise keep its user's share)."""
        for uid in [u for u in self._known_jobs if u not in present]:
            policy = self._known_jobs.pop(uid)
            job = self._jobs.pop(uid, None)
            if uid not in self._finished_jobs and job is not None:
                self.policy(policy).on_job_finished(job, now)
            self._finished_jobs.discard(uid)
            self._seen_outcomes.pop(uid, None)
        for key in [k for k in self._unschedulable if k.split("/", 1)[0] not in present]:
            self._unschedulable.discard(key)

    def _core_job(self, state: JobState, now: float) -> Job:
        """The job's core object, kept across rounds; tasks that became schedulable again are announced."""
        backoff = (self.config.backoff_base_s, self.config.backoff_max_s)
        existing = self._jobs.get(state.spec.uid)
        before = {t.key: t.pending for t in (*existing.maps, *existing.reduces)} if existing else {}
        job = self._jobs[state.spec.uid] = snap.core_job(state, now, backoff, existing)
        if existing is not None:
            policy = self.policy(state.spec.policy or self.config.policy)
            for task in (*job.maps, *job.reduces):
                if task.pending and not before.get(task.key, True):
                    policy.on_task_requeued(task)
        return job

    # placement --------------------------------------------------------------------------------------------

    def _place(
        self,
        active: list[tuple[dict[str, Any], JobState]],
        usable: dict[str, snap.NodeInfo],
        task_pods: list[dict[str, Any]],
        now: float,
        stats: RoundStats,
        canaries: AbstractSet[str] = frozenset(),
    ) -> None:
        # Read every round, jobs or not: the gauges tell operators whether placement could see the nodes.
        live_metrics = self._read_metrics(sorted(usable))
        if not active:
            return
        by_policy: dict[str, list[tuple[JobState, Job]]] = defaultdict(list)
        for _, state in active:
            by_policy[state.spec.policy or self.config.policy].append((state, self._core_job(state, now)))
        specs = {state.spec.uid: state.spec for _, state in active}
        used = snap.requested([*self.api.list_other_pods_on(), *task_pods]) if usable else {}
        creations: list[dict[str, Any]] = []
        nodes: dict[str, Node] = {
            name: replace(
                info.node, probe=self.profiles.capability(name), slowdown=self.health.slowdown(name)
            )
            for name, info in usable.items()
        }
        for name in canaries:  # one map, no reduce: a canary only measures the node (operator/canary.py)
            nodes[name] = replace(nodes[name], map_slots=1, reduce_slots=0)
        canaried: set[str] = set()
        for name in sorted(by_policy, key=lambda n: n == KUBE_DEFAULT):
            jobs = by_policy[name]
            if name == KUBE_DEFAULT:
                creations += self._unbound(jobs)
                continue
            self._version += 1_000_000  # strictly increasing across rounds: policies cache on (id, version)
            snapshot = snap.build(
                nodes, jobs, now, self._version, live_metrics, heartbeat_s=self.config.heartbeat_s
            )
            t0 = time.perf_counter()
            policy = self.policy(name)
            placements = policy.schedule_round(snapshot, sorted(nodes))
            self.metrics.placement_seconds.labels(name).observe(time.perf_counter() - t0)
            self._policy_gauges(name, policy, live_metrics, nodes)
            unfit = 0
            for placement in placements:
                spec = specs[placement.task.job_id]
                explanation = placement.explanation
                if placement.node in canaries:
                    if placement.task.kind != "map" or placement.node in canaried:
                        unfit += 1
                        continue
                    spec, explanation = canary_spec(spec), canary_explanation(explanation)
                if not self._fits(placement, spec, usable, used):
                    unfit += 1
                    continue
                if placement.node in canaries:
                    canaried.add(placement.node)
                    self.canaries.started(placement.node, now)
                    self.metrics.canaries_started.inc()
                kind = placement.task.kind
                state = next(s for s, _ in jobs if s.spec.uid == spec.uid)
                index = placement.task.index
                attempt = state.tasks[(kind, index)].next_attempt
                creations.append(
                    task_pod(
                        spec,
                        kind,
                        index,
                        attempt,
                        self.config,
                        node=placement.node,
                        explanation=explanation,
                    )
                )
            stats.placed[name] = len(placements)
            if unfit:  # pending again next round; the policy hears of it then (_core_job: on_task_requeued)
                log.debug("%s: %d of %d placements did not fit their node", name, unfit, len(placements))
        creations += self._commits(active, usable, used, now)
        for created in self._pool.map(self._create, self._record_attempts(active, creations)):
            stats.created += created

    def _release(
        self, pods: list[dict[str, Any]], recorded: set[str], departed: set[str], up: set[str]
    ) -> None:
        """Remove the tracking finalizer from the task pods whose outcome the job's status now holds (tracking)."""
        done = []
        for pod in pods:
            index = tracking.tracked(pod)
            if index is not None and tracking.releasable(pod, recorded, departed, up):
                done.append((pod["metadata"]["namespace"], pod["metadata"]["name"], index))
        for failed in self._pool.map(self._remove_finalizer, done):
            if failed:
                self.metrics.job_errors.labels("finalizer").inc()

    def _remove_finalizer(self, where: tuple[str, str, int]) -> bool:
        namespace, name, index = where
        try:
            self.api.remove_finalizer(namespace, name, index, TRACKING_FINALIZER)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # the next round tries again
            log.warning("removing the finalizer of %s/%s: %s", namespace, name, err)
            return True
        return False

    def _record_attempts(
        self, active: list[tuple[dict[str, Any], JobState]], pods: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Write each job's attempts-to-be into its status (taskrecord) before any of its pods is created, so that
        an attempt number is never used twice, whatever happens to the pods; a job whose write fails creates none
        this round."""
        by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for pod in pods:
            by_job[pod["metadata"]["labels"][JOB_UID_LABEL]].append(pod)
        states = {state.spec.uid: (body, state) for body, state in active}
        ready = []
        for uid, created in by_job.items():
            body, state = states[uid]
            attempts = [
                (labels[TYPE_LABEL], int(labels[INDEX_LABEL]), int(labels[ATTEMPT_LABEL]))
                for labels in (pod["metadata"]["labels"] for pod in created)
            ]
            record = state.record(attempts)
            try:
                if record != state.status.get("tasks"):
                    self.api.patch_job_status(state.spec.namespace, state.spec.name, {"tasks": record})
            except LeadershipLost:
                raise  # no more writes this round (leader.py)
            except Exception as err:  # placed again next round
                self._job_error(body, "record", err)
                continue
            state.status["tasks"] = record
            ready += created
        return ready

    def _read_metrics(self, nodes: list[str]) -> dict[str, NodeMetrics]:
        """Prometheus's view of the nodes, each marked fresh, stale, missing or unavailable; an Event on the
        Node whenever its metrics stop or start being fresh (metric-driven policies fall back meanwhile)."""
        if self.node_metrics is None:
            return {}
        read = self.node_metrics.read(nodes)
        self.metrics.prometheus_up.set(int(self.node_metrics.available))
        counts = Counter(m.status for m in read.values())
        for status in ("fresh", "stale", "missing", "unavailable"):
            self.metrics.node_metrics.labels(status).set(counts.get(status, 0))
        for node, metrics in read.items():
            before = self._metrics_status.get(node)
            self._metrics_status[node] = metrics.status
            if before is None and metrics.status == "fresh":
                continue  # the normal start: nothing to say
            if (before == "fresh") != (metrics.status == "fresh") or before is None:
                self._metrics_event(node, metrics)
        return read

    def _metrics_event(self, node: str, metrics: NodeMetrics) -> None:
        if metrics.status == "fresh":
            kind, reason = "Normal", "MetricsRecovered"
            message = "node metrics are fresh again: metric-driven policies use them again"
        else:
            kind, reason = "Warning", f"Metrics{metrics.status.capitalize()}"
            age = f" (latest sample {metrics.age_s:.0f} s old)" if metrics.age_s is not None else ""
            message = (
                f"node metrics {metrics.status}{age}: metric-driven policies fall back until they are fresh "
                "(adaptive-slots keeps the node's slot counts; learning places by Fair and learns nothing here)"
            )
        log.log(logging.WARNING if kind == "Warning" else logging.INFO, "%s: %s", node, message)
        self.api.node_event(node, kind, reason, message)

    def _policy_gauges(
        self, name: str, policy: Policy, live: dict[str, NodeMetrics], nodes: dict[str, Node]
    ) -> None:
        if policy.needs_metrics:
            unknown = sum(1 for n in nodes if n not in live or live[n].status != "fresh")
            self.metrics.metrics_fallback.labels(name).set(unknown)
        for node, (maps, reduces) in policy.slot_counts().items():
            self.metrics.node_slots.labels(node, "map", name).set(maps)
            self.metrics.node_slots.labels(node, "reduce", name).set(reduces)

    def _fits(
        self, placement: Placement, spec: Any, usable: dict[str, snap.NodeInfo], used: dict[str, Any]
    ) -> bool:
        """Allocatable, taints and the job's node selector, which the slot-based policies do not see."""
        info = usable[placement.node]
        request = spec.map_resources if placement.task.kind == "map" else spec.reduce_resources
        if not snap.admits(info, spec.tolerations, spec.node_selector):
            return False
        have = used.get(placement.node)
        cpu = (have.cpu if have else 0.0) + request.cpu
        mem = (have.memory_mb if have else 0.0) + request.memory_mb
        if cpu > info.node.cores + 1e-9 or mem > info.node.memory_mb + 1e-9:
            return False
        used[placement.node] = type(request)(cpu=cpu, memory_mb=mem)
        return True

    def _commits(
        self,
        active: list[tuple[dict[str, Any], JobState]],
        usable: dict[str, snap.NodeInfo],
        used: dict[str, Any],
        now: float,
    ) -> list[dict[str, Any]]:
        """The job-commit pod of each job whose tasks all succeeded: on the worker with the most free CPU (it
        only renames and deletes), or left to kube-scheduler for kube-default jobs."""
        pods = []
        backoff = (self.config.backoff_base_s, self.config.backoff_max_s)
        for _, state in active:
            if not state.needs_commit() or state.commit.retry_at(*backoff) > now:
                continue
            spec, attempt = state.spec, state.commit.next_attempt
            policy = spec.policy or self.config.policy
            if policy == KUBE_DEFAULT:
                why = Explanation(KUBE_DEFAULT, 0.0, "job commit, placed by kube-scheduler")
                pods.append(task_pod(spec, "commit", 0, attempt, self.config, node=None, explanation=why))
                continue
            request = spec.reduce_resources
            free = {
                name: info.node.cores - (used[name].cpu if name in used else 0.0)
                for name, info in usable.items()
                if snap.admits(info, spec.tolerations, spec.node_selector)
            }
            free = {n: cpu for n, cpu in free.items() if cpu >= request.cpu - 1e-9}
            if not free:
                continue  # every worker is full: the next round tries again
            node = max(sorted(free), key=lambda n: free[n])
            why = Explanation(policy, free[node], "job commit: the worker with the most free CPU")
            pods.append(task_pod(spec, "commit", 0, attempt, self.config, node=node, explanation=why))
        return pods

    def _unbound(self, jobs: list[tuple[JobState, Job]]) -> list[dict[str, Any]]:
        """kube-default: a pod per pending task, left to kube-scheduler (reduces after slow-start)."""
        pods = []
        for state, job in jobs:
            explanation = Explanation(KUBE_DEFAULT, 0.0, "placed by kube-scheduler (default schedulerName)")
            for task in (*job.maps, *(job.reduces if job.reduces_allowed() else ())):
                if task.pending:
                    attempt = state.tasks[(task.kind, task.index)].next_attempt
                    pods.append(
                        task_pod(
                            state.spec,
                            task.kind,
                            task.index,
                            attempt,
                            self.config,
                            node=None,
                            explanation=explanation,
                        )
                    )
        return pods

    def _create(self, pod: dict[str, Any]) -> int:
        try:
            created = self.api.create_pod(pod)
        except LeadershipLost:
            raise  # no more writes this round (leader.py)
        except Exception as err:  # the next round places the task again
            reason = type(err).__name__
            status = getattr(err, "status", None)
            self.metrics.bind_errors.labels(f"{reason}{status or ''}").inc()
            log.warning("creating pod %s failed: %s", pod["metadata"]["name"], err)
            return 0
        if created:
            self.metrics.tasks_started.labels(pod["metadata"]["labels"]["mrsched.dev/task-type"]).inc()
        return int(created)


def _lost(attempt: PodAttempt) -> PodAttempt:
    """An attempt the operator gave up on (node lost, stuck): gone, and not counted as the task's failure."""
    return replace(attempt, phase="Failed", reason="NodeLost", deleting=True)


def _differs(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return any(old.get(k) != v for k, v in new.items())


def _outcome(job: Job, task: TaskState, attempt: PodAttempt, now: float) -> TaskOutcome:
    assert task.kind != "commit", "the job commit is not a task the policies schedule"
    core_task = next(t for t in job.tasks(task.kind) if t.index == task.index)
    report = attempt.report
    finished = attempt.finished or now
    started = attempt.started or attempt.created
    if report is not None and report.wall_s > 0:
        # The task's own clock: sub-second, where the container's timestamps have whole seconds.
        started = finished - report.wall_s
    return TaskOutcome(
        core_task,
        attempt.node or "",
        started,
        finished,
        attempt.phase == "Succeeded",
        cpu_s=(report.cpu_user_s + report.cpu_system_s) if report else 0.0,
        read_bytes=report.read_bytes if report else 0,
        written_bytes=report.written_bytes if report else 0,
        network_bytes=report.network_bytes if report else 0,
    )
