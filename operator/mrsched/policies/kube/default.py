"""kube-default: what kube-scheduler's default profile does with these pods, for comparison.

No slots: each task is a pod, created when the operator would create it (a job's maps when it arrives, its
reduces at slow-start, a retry when its task is pending again) and popped in kube-scheduler's queue order
(:mod:`mrsched.policies.kube.queue`: PrioritySort by priority then queue-entry time, a failed pod parked until a
pod ends, with the real back-off). Each pod goes on a node whose allocatable CPU and memory still fit its
requests beside every other pod's (``ClusterSnapshot.reserved``), scored as kube-scheduler scores them with its
default plugins' weights: NodeResourcesFit with LeastAllocated (mean over CPU and memory of
(allocatable − requested) / allocatable × 100) plus NodeResourcesBalancedAllocation ((1 − std of the two
fractions) × 100). The best score wins; ties are broken at random, as kube-scheduler does. It knows nothing of
data locality or node speed. On a live cluster the operator uses the real kube-scheduler instead;
``make bench-kube-peer`` checks this one against it on the same pod stream.

In hadoop mode a heartbeat offers one node: the pods are tried in queue order on it, and one that does not fit
that node is no failed attempt (other nodes were not offered), so the queue keeps its place.
"""

from __future__ import annotations

from pydantic import Field

from mrsched.core.framework.scores import DEFAULT_SCORES, requests_fit
from mrsched.core.model import (
    ClusterSnapshot,
    Explanation,
    Job,
    Node,
    Placement,
    Resources,
    Task,
    TaskOutcome,
    pending_of,
)
from mrsched.core.pending import PendingTasks
from mrsched.core.policy import Configured, Policy, PolicyConfig, register
from mrsched.policies.kube.queue import SchedulingQueue


def requested(snapshot: ClusterSnapshot, node: str) -> tuple[float, float]:
    """CPU and memory requested on the node: our running attempts' pods and every other pod's
    (:attr:`ClusterSnapshot.reserved`), as NodeResourcesFit counts them."""
    free_cpu, free_memory = snapshot.unrequested(node)
    n = snapshot.nodes[node]
    return n.cores - free_cpu, n.memory_mb - free_memory


def _fits(node: Node, used: tuple[float, float], req: Resources) -> bool:
    """NodeResourcesFit's filter: the pod's requests fit beside what is requested on the node."""
    return requests_fit(node.cores, node.memory_mb, used[0] + req.cpu, used[1] + req.memory_mb)


def score(cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> int:
    """kube-scheduler v1.35's default profile's score of a node with ``cpu_used``, ``mem_used`` requested (the
    pod's own included): the framework's Score plugins LeastAllocated + BalancedAllocation
    (:mod:`mrsched.core.framework.scores`), each weight 1."""
    return sum(plugin.score(cpu_cap, mem_cap, cpu_used, mem_used) for plugin in DEFAULT_SCORES)


def best_nodes(
    offered: dict[str, Node], used: dict[str, tuple[float, float]], req: Resources
) -> tuple[list[str], int, str | None]:
    """The offered nodes the pod fits (NodeResourcesFit's filter) with the highest :func:`score`, that score,
    and the best node of a lower score (the runner-up); ``selectHost`` then picks among the best at random."""
    best: list[str] = []
    best_score, runner_up, second = -1, None, -1
    for name, node in offered.items():
        if not _fits(node, used[name], req):
            continue
        cpu, mem = used[name]
        s = score(node.cores, node.memory_mb, cpu + req.cpu, mem + req.memory_mb)
        if s > best_score:
            if best:
                runner_up, second = best[0], best_score
            best, best_score = [name], s
        elif s == best_score:
            best.append(name)
        elif s > second:
            runner_up, second = name, s
    return best, best_score, runner_up


class KubeDefaultConfig(PolicyConfig):
    #: The queue model of before issue 49, for measuring what the real queue changed (not kube-scheduler's): the
    #: pods in job submission order, a job's maps then its reduces past slow-start, and a round stops at the
    #: first pod that fits nowhere.
    job_order: bool = Field(False, alias="jobOrder")


@register
class KubeDefault(Configured[KubeDefaultConfig], Policy):
    name = "kube-default"
    Config = KubeDefaultConfig
    idle_when_nothing_pending = True  # its queue is the pending tasks' pods; an idle round creates none

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pending = PendingTasks()
        self._queue = SchedulingQueue()
        #: Jobs whose map pods, and whose reduce pods, the operator has created (once each); tasks to give a
        #: new pod because their attempt failed or was lost (a retry's pod).
        self._maps_created: set[str] = set()
        self._reduces_created: set[str] = set()
        self._retries: list[Task] = []

    def _create_pods(self, jobs: list[Job], now: float) -> int:
        """How many pods the operator creates now (``operator/scheduling/unbound.py:unbound_pods``), in submission
        order: a
        job's map pods when it arrives; its reduce pods once slow-start allows and none of its maps waits for a
        node (its maps all bound or done: ``maps_all_bound``); a retried task's pod when its task is pending
        again."""
        queued = len(self._queue)
        for job in jobs:
            request = job.map_request
            if job.id not in self._maps_created:
                self._maps_created.add(job.id)
                for task in self._pending.of(job, "map"):
                    self._queue.add(task, job.priority, request, now)
            if job.id not in self._reduces_created and job.reduces_allowed() and pending_of(job, "map") == 0:
                self._reduces_created.add(job.id)
                for task in self._pending.of(job, "reduce"):
                    self._queue.add(task, job.priority, job.reduce_request, now)
        retries, self._retries = self._retries, []
        for task in retries:
            if not task.pending:
                continue
            of = next((j for j in jobs if j.id == task.job_id), None)
            if of is None or (task.kind == "reduce" and of.id not in self._reduces_created):
                continue  # its job is gone, or its reduces are not due yet (they come all together)
            request = of.map_request if task.kind == "map" else of.reduce_request
            self._queue.add(task, of.priority, request, now)
        return len(self._queue) - queued

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        self._queue.assigned_pod_deleted()  # its pod is terminal: the scheduler's informer deletes it
        if not outcome.succeeded and not self.cfg.job_order:
            self._retries.append(outcome.task)  # job order reads the pending tasks themselves

    def on_task_requeued(self, task: Task) -> None:
        if not self.cfg.job_order:
            self._retries.append(task)

    def on_job_finished(self, job: Job, now: float) -> None:
        self._pending.forget(job.id)
        self._queue.forget(t.key for t in job.maps + job.reduces)
        self._maps_created.discard(job.id)
        self._reduces_created.discard(job.id)

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        """Pods in queue order onto the offered ``nodes`` only: every node in a cluster-wide round (kubernetes
        mode, as kube-scheduler sees the cluster), the heartbeating node in hadoop mode (the same decision
        opportunities as the slot policies)."""
        now = snapshot.now
        if not self.cfg.job_order:
            self._create_pods(snapshot.jobs, now)
        offered = {name: snapshot.nodes[name] for name in nodes if name in snapshot.nodes}
        used = {name: requested(snapshot, name) for name in offered}
        requests = {job.id: (job.map_request, job.reduce_request) for job in snapshot.jobs}
        admitted = {job.id: job.nodes for job in snapshot.jobs if job.nodes is not None}
        placements: list[Placement] = []

        def bind(task: Task, priority: int, failures: int) -> bool:
            req = requests[task.job_id][0 if task.kind == "map" else 1]
            allowed = admitted.get(task.job_id)  # Filter (taints, node affinity), then Score the rest
            feasible = offered if allowed is None else {n: v for n, v in offered.items() if n in allowed}
            best, best_score, runner_up = best_nodes(feasible, used, req)
            if not best:
                return False
            chosen = self.rng.choice(best)
            why = (
                "highest LeastAllocated + BalancedAllocation score; popped by PrioritySort "
                f"(priority {priority}, after {failures} failed attempts)"
            )
            placement = Placement(task, chosen, Explanation(self.name, float(best_score), why, runner_up))
            snapshot.commit(placement)
            cpu, mem = used[chosen]
            used[chosen] = (cpu + req.cpu, mem + req.memory_mb)
            placements.append(placement)
            return True

        if self.cfg.job_order:
            for job in snapshot.jobs:
                kinds = ("map", "reduce") if job.reduces_allowed() else ("map",)
                for kind in kinds:
                    for task in self._pending.of(job, kind):  # type: ignore[arg-type]
                        if not bind(task, job.priority, 0):
                            return placements  # the head pod fits nowhere offered: later pods wait too
            return placements
        if len(offered) == len(snapshot.nodes):  # a cluster-wide round: kube-scheduler's view
            self._queue.schedule(now, bind)
            # The bindings are watch events for the operator, whose next round (milliseconds later) creates the
            # reduce pods that the last maps' bindings made due; kube-scheduler tries them at once.
            while placements and self._create_pods(snapshot.jobs, now):
                self._queue.schedule(now, bind)
            return placements
        # A hadoop-mode heartbeat offers one node: the pods in queue order, none counted failed (the other nodes
        # were not offered), until the node has room for no job's pod.
        every_request = [r for pair in requests.values() for r in pair]
        priority = {job.id: job.priority for job in snapshot.jobs}
        for task in self._queue.in_order():
            if not any(_fits(node, used[name], r) for name, node in offered.items() for r in every_request):
                break
            if bind(task, priority.get(task.job_id, 0), 0):
                self._queue.forget([task.key])
        return placements

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])
