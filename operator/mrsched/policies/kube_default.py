"""kube-default: what kube-scheduler's default profile does with these pods, for comparison.

No slots: pods are placed pod by pod (in job submission order, maps before reduces, reduces after slow-start)
on nodes whose allocatable CPU and memory still fit their requests beside every other pod's
(``ClusterSnapshot.reserved``), scored as kube-scheduler scores them with
its default plugins' weights: NodeResourcesFit with LeastAllocated (mean over CPU and memory of
(allocatable − requested) / allocatable × 100) plus NodeResourcesBalancedAllocation ((1 − std of the two
fractions) × 100). The best score wins; ties are broken at random, as kube-scheduler does. It knows nothing of
data locality or node speed. On a live cluster the operator uses the real kube-scheduler instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, Resources, Task
from mrsched.core.policy import Policy, register
from mrsched.policies.pending import PendingTasks


def requested(snapshot: ClusterSnapshot, node: str) -> tuple[float, float]:
    """CPU and memory requested on the node: our running attempts' pods and every other pod's
    (:attr:`ClusterSnapshot.reserved`), as NodeResourcesFit counts them."""
    free_cpu, free_memory = snapshot.unrequested(node)
    n = snapshot.nodes[node]
    return n.cores - free_cpu, n.memory_mb - free_memory


def score(cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> float:
    cpu_frac, mem_frac = cpu_used / cpu_cap, mem_used / mem_cap
    least_allocated = ((1 - cpu_frac) + (1 - mem_frac)) / 2 * 100
    balanced = (1 - abs(cpu_frac - mem_frac) / 2) * 100
    return least_allocated + balanced


@register
class KubeDefault(Policy):
    name = "kube-default"
    idle_when_nothing_pending = True  # stateless: its queue is the pending pods, its tie-break draws per pod

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pending = PendingTasks()

    def _queue(self, jobs: list[Job]) -> Iterator[tuple[Task, Resources]]:
        """Pods in kube-scheduler's queue order here: job priority, then submission; maps, then reduces."""
        for job in sorted(jobs, key=lambda j: (-j.priority, j.submit_s)):
            for task in self._pending.of(job, "map"):
                yield task, job.map_request
            if job.reduces_allowed():
                for task in self._pending.of(job, "reduce"):
                    yield task, job.reduce_request

    def on_job_finished(self, job: Job, now: float) -> None:
        self._pending.forget(job.id)

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        """Pods in queue order onto the offered ``nodes`` only: every node in a cluster-wide round (kubernetes
        mode, as kube-scheduler sees the cluster), the heartbeating node in hadoop mode (the same decision
        opportunities as the slot policies)."""
        offered = {name: snapshot.nodes[name] for name in nodes if name in snapshot.nodes}
        used = {name: requested(snapshot, name) for name in offered}
        placements = []
        for task, req in self._queue(snapshot.jobs):
            best: list[str] = []
            best_score, runner_up = -1.0, None
            for name, node in offered.items():
                cpu, mem = used[name]
                if cpu + req.cpu > node.cores + 1e-9 or mem + req.memory_mb > node.memory_mb + 1e-9:
                    continue
                s = score(node.cores, node.memory_mb, cpu + req.cpu, mem + req.memory_mb)
                if s > best_score + 1e-9:
                    runner_up = best[0] if best else runner_up
                    best, best_score = [name], s
                elif abs(s - best_score) <= 1e-9:
                    best.append(name)
            if not best:
                break  # the head pod fits nowhere offered: later pods wait too (FIFO queue order)
            chosen = self.rng.choice(best)
            placement = Placement(
                task,
                chosen,
                Explanation(
                    self.name, best_score, "highest LeastAllocated + BalancedAllocation score", runner_up
                ),
            )
            snapshot.commit(placement)
            cpu, mem = used[chosen]
            used[chosen] = (cpu + req.cpu, mem + req.memory_mb)
            placements.append(placement)
        return placements

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])
