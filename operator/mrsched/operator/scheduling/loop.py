"""The scheduling loop: Hadoop's heartbeat, once for the whole cluster.

Each round reads nodes, task pods and jobs from the watch caches (``informers``), rebuilds the state of each job
that changed from its status's task record and its pods (``jobpass``, ``jobcache``, ``jobstate``), writes status
and Events, retires what must go (pods of failed jobs,
pods on lost nodes, jobs past their TTL), hands task outcomes to the policies' learning hooks, then asks each
policy in use for placements on a fresh core snapshot and creates the placed pods already bound to their nodes.
``kube-default`` jobs get unbound pods with the default schedulerName: the real kube-scheduler places them.

:class:`SchedulingLoop` holds the round's order, the policies, probing and placement; each other concern is a
part it composes, with its own state: ``reconcile`` (one job's status, Events and clean-up), ``learning`` (what
the policies hear), ``podwrites`` (pod creations and finalizer removals on a thread pool) and ``livemetrics``
(the nodes' Prometheus metrics, read for placement and reported).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Hashable
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from kubernetes.client.exceptions import ApiException

from mrsched.core.framework import Framework, OneMapPerRound, PodConstraints
from mrsched.core.kuberules import selector_matches
from mrsched.core.model import Job, Resources
from mrsched.core.policy import Policy, registered
from mrsched.operator.jobs import jobpolicy
from mrsched.operator.jobs.jobpass import KUBE_DEFAULT, JobPass
from mrsched.operator.jobs.podwrites import PodWrites
from mrsched.operator.jobs.reconcile import JobReconciler
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.watchcache import Memo
from mrsched.operator.learning.health import NodeHealthReporter, untolerated_degraded
from mrsched.operator.learning.learning import LearningFeed
from mrsched.operator.learning.probes import ProbeRunner
from mrsched.operator.learning.profiles import ProfileStore
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model import tracking
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.nodemetrics import NodeMetricsSource, prometheus_query
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import parse_time, read_attempt, task_pod
from mrsched.operator.model.roundstats import RoundStats
from mrsched.operator.scheduling.canary import CanaryGate, busy_nodes, canary_explanation, canary_spec
from mrsched.operator.scheduling.livemetrics import LiveMetrics
from mrsched.operator.scheduling.quiet import PolicyNodes, QuietRounds
from mrsched.operator.scheduling.unbound import commit_pods, unbound_pods
from mrsched.policies import make_policy

__all__ = ["KUBE_DEFAULT", "RoundStats", "SchedulingLoop"]

#: Rounds between sweeps of the parse memos (entries of objects gone since the last sweep are dropped).
MEMO_SWEEP_ROUNDS = 60

log = logging.getLogger("mrsched.loop")


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
        self._worker_selector = config.worker_selector()
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
        self.reconciler = JobReconciler(api, config, self.metrics)
        self.learning = LearningFeed(self.policy, config, self.metrics, self.health)
        self.pod_writes = PodWrites(
            api,
            self.metrics,
            self._pool,
            self.reconciler.job_error,
            self.reconciler.refuse,
            config.create_workers,
        )
        self.live_metrics = LiveMetrics(api, self.metrics, node_metrics)
        self._profiles_loaded = False
        self._persist = True
        # What each round derives from every node and pod, parsed again only when the object changed: with
        # watch caches most objects are the very dicts of the previous round (watchcache.Memo).
        self._read_node = Memo(lambda body: snap.read_node(body, config))
        self._read_attempt = Memo(read_attempt)
        self._pod_request = Memo(snap.pod_request)
        self._rounds = 0
        self.jobs = JobPass(api, config, self.reconciler, self._pool, self._read_attempt)
        self._requested_at: tuple[Hashable | None, dict[str, Any]] = (None, {})
        # The snapshots' running attempts, made again only for the jobs read again.
        self._live = snap.LiveAttempts()
        self._nodes = PolicyNodes()
        self._quiet = QuietRounds()

    # running ----------------------------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Ask the loop to stop: the round under way finishes (its pod writes still have the pool), then
        :meth:`close`."""
        self._stop.set()
        self._wake.set()

    def close(self) -> None:
        """Release the write pool, once no round runs (after :meth:`stop` and the loop's thread has ended)."""
        self._pool.shutdown(wait=False)

    def wait(self, timeout_s: float) -> None:
        """Until the next heartbeat, or sooner when a watch event wakes the loop (at most 20 rounds/s)."""
        time.sleep(0.05)
        self._wake.wait(max(0.0, timeout_s - 0.05))
        self._wake.clear()

    def policy(self, name: str) -> Policy:
        if name not in self.policies:
            # The policy's own defaults, as the simulator builds it; the configured policy's options over them.
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
        nodes = [self._read_node(n) for n in bodies_of_nodes]
        selector = self._worker_selector
        workers = {n.node.name: n for n in nodes if selector_matches(selector, n.labels)}
        usable = {name: n for name, n in workers.items() if n.ready and n.schedulable}
        # Only the jobs whose object, pods or nodes changed, or whose timers are due, are read and reconciled
        # again; the others are as the last round left them (jobpass, jobcache).
        jobs = self.jobs.run(workers, now, stats)
        active, present = jobs.active, jobs.present
        tracked = list(jobs.pods_to_track.values())
        up = {name for name, info in workers.items() if info.ready}
        unreleased = self.pod_writes.release(tracked, jobs.recorded, jobs.departed, up)
        finished_at = {
            uid: done
            for _, state in jobs.states
            if state.status.get("phase") in ("Succeeded", "Failed")
            and (done := parse_time(state.status.get("completionTime"))) is not None
            and (uid := state.spec.uid)
        }
        prune = tracking.prunable(tracked, finished_at, now, self.config.finished_pod_ttl_s)
        self.jobs.cache.touch(unreleased | self.pod_writes.delete_pods(prune))  # tried again next round
        for phase in ("Pending", "Running", "Succeeded", "Failed"):
            self.metrics.jobs.labels(phase).set(jobs.phases.get(phase, 0))
        self.learning.forget(present, now)
        self._rounds += 1
        if self._rounds % MEMO_SWEEP_ROUNDS == 0:
            for memo in (self._read_node, self._read_attempt, self._pod_request):
                memo.sweep()
        self.reconciler.forget(present)
        self._live.forget(present)
        self.learning.learn(jobs.states, now)
        probing = self._probe(workers)
        refusing = self.jobs.refusing_nodes(jobs, now)
        usable = {name: info for name, info in usable.items() if name not in probing | refusing}
        versions = {n["metadata"]["name"]: n["metadata"].get("resourceVersion", "") for n in bodies_of_nodes}
        self.metrics.profile_writes.inc(self.health.publish(workers, versions, now, persist=self._persist))
        canaries: set[str] = set()
        # Degraded-tainted nodes that no job tolerates take no task, but a canary map now and then (canary.py).
        if active:
            tainted = untolerated_degraded(usable, [state.spec.tolerations for _, state in active])
            if tainted:
                canaries = self.canaries.due(tainted, busy_nodes(self.api.list_task_pods()), now)
            usable = {name: info for name, info in usable.items() if name not in tainted or name in canaries}
        self._place(active, usable, now, stats, canaries, jobs.recorded)
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

    # placement --------------------------------------------------------------------------------------------

    def _place(
        self,
        active: list[tuple[dict[str, Any], JobState]],
        usable: dict[str, snap.NodeInfo],
        now: float,
        stats: RoundStats,
        canaries: AbstractSet[str] = frozenset(),
        jobs_read: AbstractSet[str] = frozenset(),
    ) -> None:
        """Ask each policy in use for placements, and create their pods. ``jobs_read``: the uids of the jobs read
        again this round (JobsRead.recorded); a policy none of whose jobs changed, with no task to start, may
        skip the round (quiet.QuietRounds)."""
        # Read every round, jobs or not: the gauges tell operators whether placement could see the nodes.
        live_metrics = self.live_metrics.read(sorted(usable))
        if not active:
            return
        by_policy: dict[str, list[tuple[JobState, Job]]] = defaultdict(list)
        # The framework's Filter phase before any policy scores a node (its Permit phase after): a canary node
        # shows no degraded taint, since its one map per round tolerates it (operator/scheduling/canary.py).
        framework = Framework(permits=(OneMapPerRound(frozenset(canaries)),)).for_nodes(
            {name: snap.node_view(info, canary=name in canaries) for name, info in usable.items()}
        )
        for _, state in active:
            # Derived this round (LearningFeed.learn) from the same state, or unchanged since (jobcache)
            job = self.learning.held_job(state.spec.uid) or self.learning.core_job(state, now)
            job.nodes = framework.feasible(PodConstraints(state.spec.tolerations, state.spec.node_selector))
            by_policy[state.spec.policy or self.config.policy].append((state, job))
        states = {state.spec.uid: state for _, state in active}
        used = dict(self._requested()) if usable else {}  # this round's placements are added to it
        creations: list[dict[str, Any]] = []
        nodes = self._nodes.of(usable, self.profiles.capability, self.health.slowdown)
        for (
            name
        ) in canaries:  # one map, no reduce: a canary only measures the node (operator/scheduling/canary.py)
            nodes[name] = replace(nodes[name], map_slots=1, reduce_slots=0)
        for name in sorted(by_policy, key=lambda n: n == KUBE_DEFAULT):
            jobs = by_policy[name]
            if name == KUBE_DEFAULT:
                creations += unbound_pods(self.config, jobs)
                continue
            policy = self.policy(name)
            if self._quiet.skip(name, policy, jobs, nodes, jobs_read, canaries):
                stats.placed[name] = 0
                stats.skipped.append(name)
                continue
            self._version += 1_000_000  # strictly increasing across rounds: policies cache on (id, version)
            snapshot = snap.build(
                nodes,
                jobs,
                now,
                self._version,
                live_metrics,
                heartbeat_s=self.config.heartbeat_s,
                live=self._live,
            )
            snap.reserve_others(snapshot, used)  # other tenants' pods, other policies' and commits
            t0 = time.perf_counter()
            placements = framework.run_round(policy, snapshot, sorted(nodes))
            # The core Jobs now say these tasks run (ClusterSnapshot.commit): derived again next round,
            # whether or not their pods are created.
            self.jobs.cache.touch({p.task.job_id for p in placements})
            self.metrics.placement_seconds.labels(name).observe(time.perf_counter() - t0)
            self.live_metrics.policy_gauges(name, policy, live_metrics, nodes)
            for placement in placements:  # Bind: each permitted placement's pod, with spec.nodeName
                state = states[placement.task.job_id]
                spec = state.spec
                explanation = placement.explanation
                if placement.node in canaries:
                    spec, explanation = canary_spec(spec), canary_explanation(explanation)
                # The policy chose among the nodes that admit the job, within their allocatable (fits): the
                # next policy's snapshot and the job commits see what this placement holds there.
                request = spec.map_resources if placement.task.kind == "map" else spec.reduce_resources
                have = used.get(placement.node)
                used[placement.node] = Resources(
                    cpu=(have.cpu if have else 0.0) + request.cpu,
                    memory_mb=(have.memory_mb if have else 0.0) + request.memory_mb,
                )
                if placement.node in canaries:
                    self.canaries.started(placement.node, now)
                    self.metrics.canaries_started.inc()
                kind = placement.task.kind
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
        creations += commit_pods(self.config, active, usable, used, now)
        if creations and self.config.max_tasks_per_namespace:
            creations = jobpolicy.within_namespace_caps(
                creations, self.api.list_task_pods(), self.config.max_tasks_per_namespace, self._read_attempt
            )
        stats.created += self.pod_writes.create_pods(active, creations, now)

    def _requested(self) -> dict[str, Any]:
        """CPU and memory every bound, unfinished pod requests on each node; computed again only when a pod
        changed (ClusterApi.pod_changes)."""
        changes = self.api.pod_changes()
        if changes is None or changes != self._requested_at[0]:
            pods = [*self.api.list_other_pods_on(), *self.api.list_task_pods()]
            self._requested_at = (changes, snap.requested(pods, self._pod_request))
        return self._requested_at[1]
