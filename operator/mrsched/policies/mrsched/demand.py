"""What mrsched's policy knows of a task before it runs: its demand θ = (θc, θd) learned per application and
kind from the tasks that finished, and its predicted duration on a node from that node's probed κ and Ω.

The model is seed 002 ch.3's (Eq 3.2): a task of application i takes ``T = Ω^j + θc/κc^j + θd/κd^j`` on node j,
θ in reference seconds (:mod:`mrsched.core.probes` fixes the units). Where Gupta's ThroughputScheduler infers θ
from durations alone by a Bayesian posterior (Eq 3.10-3.24: it cannot see inside a task), the operator's
workers report each task's CPU seconds and bytes (and the simulator's engine the same usage), so θ is read off
them [ours]: θc = CPU seconds × κc of the node it ran on (a faster core spends fewer seconds on the same work),
θd = bytes read and written / the reference disk's MB/s. What the two terms do not explain (network fetches,
waits, the sharing at the load it ran at) is kept as the app's mean residual, added to every prediction. A task
with no usage report teaches its whole time as CPU work.

Map demand scales with the task's input (a map of twice the bytes does twice the work), so a map's θ is kept
per input MB when maps have input; a reduce's per task. An application never seen yet is predicted at the mean
of those seen (``default_task_s`` before any): the order of jobs of unknown applications is then by how many
tasks they have left.

Sharing at the node's load [ours, as greedy-informed's physics but with learned θ]: a task that joins k others
on a node has its CPU work stretched by ``max(1, (k+1)/cores)`` and its disk work by ``1 + Σ`` of the others'
disk shares (processor sharing of the cores; the streams of one disk share its bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass

from mrsched.core.model import ClusterSnapshot, Job, Node, Task, TaskOutcome, TaskType
from mrsched.core.physics import REFERENCE_DISK_MBPS
from mrsched.core.probes import Capability

#: κ = (1, 1), Ω = 0: a node without probes is taken for the reference machine (every such node alike).
REFERENCE = Capability(1.0, 1.0, 0.0)


@dataclass
class Demand:
    """Running sums of one (application, kind)'s observations: θ per unit (an input MB, or a task)."""

    cpu: float = 0.0
    disk: float = 0.0
    residual: float = 0.0
    count: int = 0

    def mean(self) -> tuple[float, float, float]:
        n = max(self.count, 1)
        return self.cpu / n, self.disk / n, max(self.residual / n, 0.0)


def capability(node: Node) -> Capability:
    """The node's probed κ and Ω, slowed by the health monitor's verdict where it has one (ch.5's discount)."""
    probe = node.probe or REFERENCE
    if node.slowdown is None:
        return probe
    cpu, disk = node.slowdown
    return Capability(probe.kappa_c / max(cpu, 1e-9), probe.kappa_d / max(disk, 1e-9), probe.omega_s)


def _units(task: Task) -> float:
    return task.input_mb if task.kind == "map" and task.input_mb > 0 else 1.0


class DemandModel:
    """θ per (application, kind), learned from :class:`TaskOutcome` usage; predictions in seconds."""

    def __init__(self, default_task_s: float) -> None:
        self.default_task_s = default_task_s
        self.demands: dict[tuple[str, TaskType], Demand] = {}
        self.apps: dict[str, str] = {}  # job id -> app, for outcomes that carry only the task
        # θ per (app, kind, units), kept until the next observation: every score, filter and permit of a round
        # asks for it, and for an unseen app it is a mean over every app seen.
        self._theta: dict[tuple[str, TaskType, float], tuple[float, float, float]] = {}

    def remember(self, job: Job) -> None:
        self.apps[job.id] = job.app

    def forget(self, job: Job) -> None:
        self.apps.pop(job.id, None)

    def learn(self, outcome: TaskOutcome, node: Node | None) -> None:
        """Add one successful attempt's usage to its application's θ (module docstring)."""
        app = self.apps.get(outcome.task.job_id)
        if app is None or not outcome.succeeded or node is None:
            return
        cap = capability(node)
        units = _units(outcome.task)
        elapsed = max(outcome.duration_s - cap.omega_s, 0.0)
        if outcome.cpu_s > 0 or outcome.read_bytes or outcome.written_bytes:
            cpu = outcome.cpu_s * cap.kappa_c
            disk = (outcome.read_bytes + outcome.written_bytes) / 1e6 / REFERENCE_DISK_MBPS
        else:
            cpu, disk = elapsed * cap.kappa_c, 0.0
        residual = elapsed - cpu / cap.kappa_c - disk / cap.kappa_d
        self._theta.clear()
        d = self.demands.setdefault((app, outcome.task.kind), Demand())
        d.cpu += cpu / units
        d.disk += disk / units
        d.residual += residual
        d.count += 1

    def theta(self, app: str, task: Task) -> tuple[float, float, float]:
        """(θc, θd, residual) of one task of ``app``: learned, or the mean of the apps learned."""
        units = _units(task)
        key = (app, task.kind, units)
        kept = self._theta.get(key)
        if kept is None:
            kept = self._theta[key] = self._learned_theta(app, task.kind, units)
        return kept

    def _learned_theta(self, app: str, kind: TaskType, units: float) -> tuple[float, float, float]:
        known = self.demands.get((app, kind))
        if known is not None and known.count:
            cpu, disk, residual = known.mean()
            return cpu * units, disk * units, residual
        seen = [d for (_, k), d in self.demands.items() if k == kind and d.count]
        if not seen:
            return self.default_task_s, 0.0, 0.0
        total = sum(sum(d.mean()) for d in seen) / len(seen)
        return total, 0.0, 0.0

    def reference_s(self, app: str, task: Task) -> float:
        """The task's time on the reference machine, alone: the unit of a job's remaining work."""
        cpu, disk, residual = self.theta(app, task)
        return cpu + disk + residual

    def disk_share(self, app: str, task: Task) -> float:
        cpu, disk, _ = self.theta(app, task)
        return disk / (cpu + disk) if cpu + disk > 0 else 0.0

    def duration(self, node: Node, app: str, task: Task, load: int, streams: float) -> float:
        """Predicted seconds of ``task`` started now on ``node`` beside ``load`` tasks whose disk shares sum to
        ``streams`` (module docstring)."""
        cap = capability(node)
        cpu, disk, residual = self.theta(app, task)
        cpu_stretch = max(1.0, (load + 1) / max(node.cores, 1))
        return cap.omega_s + cpu / cap.kappa_c * cpu_stretch + disk / cap.kappa_d * (1.0 + streams) + residual

    def load_of(self, snapshot: ClusterSnapshot, node: str) -> tuple[int, float]:
        """(tasks running on ``node``, the sum of their disk shares)."""
        running = snapshot.running.get(node, ())
        streams = sum(self.disk_share(self.apps.get(a.task.job_id, ""), a.task) for a in running)
        return len(running), streams

    def remaining_s(self, job: Job) -> float:
        """A job's remaining work in reference seconds: its unstarted tasks whole, its running ones half (the
        expected remainder of a task seen at a random moment of its run); a job's maps taken alike (its first
        map's input stands for the rest), and its reduces."""
        total = 0.0
        kinds: tuple[TaskType, ...] = ("map", "reduce")
        for kind in kinds:
            tasks = job.tasks(kind)
            if tasks:
                each = self.reference_s(job.app, tasks[0])
                total += each * (job.unstarted(kind) + job.running(kind) / 2)
        return total

    def remaining_time_s(self, job: Job, places: dict[str, int]) -> float:
        """Seconds the job would still take with the cluster to itself, in reference seconds: its maps' work
        (as :meth:`remaining_s` counts it) spread over the ``places`` the cluster has for its map pods, then its
        reduces', spread over the reduce places but never less than one reduce's time (a reduce is not
        divided). The order key that credits a job's unparallelisable tail, where :meth:`remaining_s` counts
        only its work."""
        total = 0.0
        kinds: tuple[TaskType, ...] = ("map", "reduce")
        for kind in kinds:
            tasks = job.tasks(kind)
            left = job.unstarted(kind) + job.running(kind) / 2
            if tasks and left > 0:
                each = self.reference_s(job.app, tasks[0])
                total += max(each * left / max(places.get(kind, 1), 1), each if kind == "reduce" else 0.0)
        return total

    def state(self) -> dict[str, dict[str, dict[str, float]]]:
        """The learned θ by application, then kind (``AppProfile/<app>`` ``status.policies.mrsched``: sums and
        counts, so a restart resumes them)."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (app, kind), d in sorted(self.demands.items()):
            out.setdefault(app, {})[kind] = {
                "cpuS": d.cpu,
                "diskS": d.disk,
                "residualS": d.residual,
                "tasks": d.count,
            }
        return out

    def load_state(self, entries: dict[str, dict[str, dict[str, float]]]) -> None:
        self._theta.clear()
        for app, kinds in entries.items():
            for kind in ("map", "reduce"):
                fields = kinds.get(kind) if isinstance(kinds, dict) else None
                if isinstance(fields, dict):
                    self.demands[app, kind] = Demand(
                        fields.get("cpuS", 0.0),
                        fields.get("diskS", 0.0),
                        fields.get("residualS", 0.0),
                        int(fields.get("tasks", 0)),
                    )
