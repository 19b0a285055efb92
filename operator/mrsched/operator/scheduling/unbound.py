"""The pods a round creates besides the policies' placements: each finished job's commit pod, and kube-default
jobs' task pods, which kube-scheduler places (pure: the round hands in what it read)."""

from __future__ import annotations

from typing import Any

from mrsched.core.model import Explanation, Job
from mrsched.operator.jobs.jobpass import KUBE_DEFAULT
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobstate import JobState
from mrsched.operator.model.pods import task_pod


def commit_pods(
    config: OperatorConfig,
    active: list[tuple[dict[str, Any], JobState]],
    usable: dict[str, snap.NodeInfo],
    used: dict[str, Any],
    now: float,
) -> list[dict[str, Any]]:
    """The job-commit pod of each job whose tasks all succeeded: on the worker with the most free CPU (it
    only renames and deletes), or left to kube-scheduler for kube-default jobs."""
    pods = []
    backoff = (config.backoff_base_s, config.backoff_max_s)
    for _, state in active:
        if not state.needs_commit() or state.commit.retry_at(*backoff) > now:
            continue
        spec, attempt = state.spec, state.commit.next_attempt
        policy = spec.policy or config.policy
        if policy == KUBE_DEFAULT:
            why = Explanation(KUBE_DEFAULT, 0.0, "job commit, placed by kube-scheduler")
            pods.append(task_pod(spec, "commit", 0, attempt, config, node=None, explanation=why))
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
        pods.append(task_pod(spec, "commit", 0, attempt, config, node=node, explanation=why))
    return pods


def unbound_pods(config: OperatorConfig, jobs: list[tuple[JobState, Job]]) -> list[dict[str, Any]]:
    """kube-default: a pod per pending task, left to kube-scheduler. Reduce pods come after slow-start and
    once no map pod of the job waits for a node (:func:`maps_all_bound`): kube-scheduler knows nothing of
    a reduce waiting for its maps, so reduce pods created at slow-start would take the nodes from the maps
    they wait for (seed 003's 22 jobs deadlocked so, 60 reduces on 60 cores)."""
    pods = []
    for state, job in jobs:
        explanation = Explanation(KUBE_DEFAULT, 0.0, "placed by kube-scheduler (default schedulerName)")
        reduces = job.reduces if job.reduces_allowed() and maps_all_bound(state) else ()
        for task in (*job.maps, *reduces):
            if task.pending:
                attempt = state.tasks[(task.kind, task.index)].next_attempt
                pods.append(
                    task_pod(
                        state.spec,
                        task.kind,
                        task.index,
                        attempt,
                        config,
                        node=None,
                        explanation=explanation,
                    )
                )
    return pods


def maps_all_bound(state: JobState) -> bool:
    """Every map of the job has succeeded or has a live pod bound to a node: none waits for kube-scheduler.
    As Hadoop 2's MapReduce ApplicationMaster, which ramps reduces up in full only once no map waits for a
    container (``RMContainerAllocator.scheduleReduces``) and preempts reduces that starve the maps."""
    return all(ts.succeeded or any(a.live and a.node for a in ts.attempts) for ts in state.of("map"))
