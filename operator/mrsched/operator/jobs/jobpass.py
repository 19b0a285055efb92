"""The jobs' part of a round: read the jobs that changed, reconcile them side by side, and take the others as
the last round left them (``jobcache``).

For each MapReduceJob the caches hold, :class:`JobPass` finds its pods (the task-pod cache's group for its
uid), and either takes it from the cache (its key unchanged, no timer due) or rebuilds its state from its
status's task record and its pods (``jobstate``), checks it against the admin's job policy before its first
task (``jobpolicy``) and reconciles it (``reconcile``: status, Events, clean-up), all jobs' reconciliations on
the loop's pool. It says which jobs are active (offered to the policies), each phase's count, and which pods
the round must look at for finalizers and pruning: those of the jobs read, and of the jobs gone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mrsched.operator.jobs import jobpolicy
from mrsched.operator.jobs.jobcache import JobCache, QuietJob, nodes_of, not_started, quiet_until, refusals
from mrsched.operator.jobs.reconcile import JobReconciler
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.leader import LeadershipLost
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import InvalidSpec
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import PodAttempt
from mrsched.operator.model.roundstats import RoundStats

#: The policy name whose jobs kube-scheduler places (their pods are created unbound).
KUBE_DEFAULT = "kube-default"

Item = tuple[dict[str, Any], JobState]


@dataclass
class JobsRead:
    """What the jobs' part of one round found."""

    #: jobs read and reconciled this round (their status now holds what their pods show)
    states: list[Item] = field(default_factory=list)
    #: jobs taken from the cache: nothing of theirs changed
    quiet: list[QuietJob] = field(default_factory=list)
    #: Pending or Running jobs the policies are offered, read or quiet
    active: list[Item] = field(default_factory=list)
    phases: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: the attempts of the jobs read, by job uid
    attempts: dict[str, list[PodAttempt]] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    #: uids of jobs gone or being deleted
    departed: set[str] = field(default_factory=set)
    #: the task pods of the jobs read and of the jobs gone, by "namespace/name"
    pods_to_track: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def recorded(self) -> set[str]:
        return {state.spec.uid for _, state in self.states}


class JobPass:
    def __init__(
        self,
        api: ClusterApi,
        config: OperatorConfig,
        reconciler: JobReconciler,
        pool: ThreadPoolExecutor,
        read_attempt: Callable[[dict[str, Any]], PodAttempt | None],
    ) -> None:
        self.api = api
        self.config = config
        self.reconciler = reconciler
        self.pool = pool
        self.read_attempt = read_attempt
        self.cache = JobCache()

    def run(self, workers: dict[str, snap.NodeInfo], now: float, stats: RoundStats) -> JobsRead:
        out = JobsRead()
        groups = self.api.task_pods_by_job()
        bodies = self.api.list_jobs()
        stats.jobs = len(bodies)
        keys: dict[str, tuple[Hashable, Hashable]] = {}
        read: list[Item] = []
        self.cache.begin_round(workers)
        for body in bodies:
            meta = body["metadata"]
            uid = meta["uid"]
            signature, pods = groups.get(uid, ((), []))
            keys[uid] = (meta.get("resourceVersion"), signature)
            held = self.cache.get(uid, keys[uid], now) if meta.get("resourceVersion") else None
            if held is not None:
                out.quiet.append(held)
                out.phases[held.phase] += 1
                continue
            out.attempts[uid] = [a for pod in pods if (a := self.read_attempt(pod)) is not None]
            try:
                state = JobState.build(body, out.attempts[uid])
                if not state.status.get("tasks"):  # not started: the admin's job policy decides (jobpolicy)
                    jobpolicy.check(state.spec, self.config)
                read.append((body, state))
            except InvalidSpec as err:
                out.phases[self.reconciler.refuse(body, str(err), now, err.reason)] += 1
        out.active = [(q.body, q.state) for q in out.quiet if q.active]
        stats.read = len(read)
        stats.read_why = dict(self.cache.misses)
        racks = {name: info.node.rack for name, info in workers.items()}

        def reconcile(item: Item) -> tuple[str, Exception | None]:
            try:
                return self.reconciler.reconcile(item[0], item[1], workers, racks, now, stats), None
            except LeadershipLost:
                raise  # no more writes this round (leader.py)
            except Exception as err:  # one job's fault (a 429 on its status patch) must not stop the others
                return "", err

        # Jobs are reconciled side by side: each is mostly its status patch's round trip, and with hundreds of
        # jobs one after the other those round trips, not the work, set the round's length.
        for (body, state), (phase, error) in zip(read, self.pool.map(reconcile, read), strict=True):
            if error is not None:
                self.reconciler.job_error(body, "reconcile", error)
                # nothing is learnt or placed from a state not written; read again next round
                out.phases[str((body.get("status") or {}).get("phase") or "Pending")] += 1
                continue
            out.states.append((body, state))
            out.phases[phase] += 1
            # A job no worker could run (condition Unplaceable, fit.py) is not offered to the policies: the slot
            # decisions they would spend on it every round could only be dropped, and a policy that keeps choosing
            # it (fair: the job furthest below its share) would starve the jobs that can run. kube-default jobs
            # still get their pods: kube-scheduler decides for them, and says why in its own words.
            kube_default = (state.spec.policy or self.config.policy) == KUBE_DEFAULT
            active = phase in ("Pending", "Running") and (kube_default or not _blocked(state.status))
            if active:
                out.active.append((body, state))
            uid = state.spec.uid
            until = quiet_until(state, phase, now, self.config, workers, bool(groups.get(uid, ((), []))[1]))
            refusing = refusals(out.attempts[uid], now, self.config)
            nodes = nodes_of(state, workers)
            waiting = not_started(state, phase)
            self.cache.put(
                uid, QuietJob(keys[uid], until, body, state, phase, active, refusing, nodes, waiting)
            )
        out.present = {body["metadata"]["uid"] for body in bodies}
        self.cache.forget(out.present)
        out.departed = {uid for uid in groups if uid not in out.present} | {
            s.spec.uid for _, s in read if s.deleting
        }
        # A quiet job's pods were released (or not) by the round that last read it, and any change to them makes
        # the job read again.
        out.pods_to_track = {
            f"{pod['metadata']['namespace']}/{pod['metadata']['name']}": pod
            for uid in (*out.attempts, *out.departed)
            for pod in groups.get(uid, ((), []))[1]
        }
        return out

    def refusing_nodes(self, jobs: JobsRead, now: float) -> set[str]:
        """Nodes that refused a pod of any job within the cooldown (fit.refusing_nodes)."""
        fresh = refusals((a for found in jobs.attempts.values() for a in found), now, self.config)
        return set(fresh).union(*(q.refusing for q in jobs.quiet))


def _blocked(status: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Unplaceable" and c.get("status") == "True" for c in status.get("conditions") or []
    )
