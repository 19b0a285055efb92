"""LsPS (seed 004, Yao, Tai, Sheng & Mi, "Scheduling Heterogeneous MapReduce Jobs for Efficiency Improvement in
Enterprise Clusters", Algorithm 1): two-tier slot scheduling driven by per-user job-size statistics.

* Workload information (Sec. II-A, :mod:`mrsched.policies.lsps.stats`): per user, Welford's online mean map and
  reduce task times, mean job size and its variance over the completed jobs of the current window (Eqs. 1-6),
  fed by each finished job's measured mean task times; per running job, t̄*, the mean duration of its finished
  tasks of each phase (Algorithm 1 step 2).
* Tier 1 (Sec. II-B): per slot type, each active user's share SU_i = SU*_i · (α · U · (1/S̄*_i) / Σ_k 1/S̄*_k
  + 1 − α) (Eq. 8) from the mean phase size S̄*_i of its current jobs (Eq. 7). A free slot goes to the user with
  the largest deficit SU_i − AS_i (AS_i: slots of that type it holds now) that has a pending task of that type;
  users without one are skipped, so their share goes to the next users (work-conserving).
* Tier 2 (Sec. II-C): at each submission of a user's job, FIFO among the user's jobs if both CV_i (history) and
  CV'_i (current jobs) are below 1, else Fair (the job running the fewest tasks of the slot's type); if the two
  disagree, Fair and the user's history window restarts.

Readings (digest ``yao-lsps.md`` §1.6): A1 Eq. (5) with the old mean; A2 j = completed jobs in the window;
A3 [erratum] deficit SU_i − AS_i, largest first; A4 shares are recomputed at each submission (Algorithm 1
step 1b) and whenever the set of users active for a slot type changes (a user with no task of that type left
is not active for it) or a job finishes; ``recomputeOnTaskFinish`` also recomputes after every task (not the
paper's); A5 AS_i counts the slots held now (from the snapshot); A6 unknown sizes take the mean of the known
ones, none known gives Fair shares; A7 without history the scheme follows CV'_i alone, no reset; A8 FIFO needs
both CVs strictly below the threshold; A11 no delay scheduling: a map takes the best locality the node offers.

Ours: CV'_i uses the user's historical mean task times for every current job (the literal reading;
``currentCvUsesJobMeans`` uses each job's own t̄* where it has one, as Eq. 7); with no history yet, the user's
current jobs' pooled t̄* of the phase stands in, else 1 s (CV is scale-free: then CV' is that of task counts).
Eq. (7) averages over all the user's current jobs (running + waiting), also those past that phase. Ties in
deficit go to the user with the earliest current job. Like Hadoop's JobQueueTaskScheduler, every free slot of a
heartbeat is filled (``assignMultiple``; false: at most one map and one reduce per heartbeat).

**On Kubernetes** [ours]: LsPS decides which user's and which job's tasks get a free place, by job size; by
requests the free places are what the node's allocatable holds (``free_slots``), the size-based order unchanged.
It decides no concurrency of its own. A heartbeat of a by-requests node offers first the reduces of jobs whose
maps are all placed (``hadoop.slots.reduces_first``): maps and reduces share one allocatable there, and maps
placed first would leave such a reduce waiting until no map of any job is left to start; then Hadoop's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from mrsched.core.locality import Level
from mrsched.core.model import ClusterSnapshot, Job, Placement, Task, TaskOutcome, TaskType
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.policies.hadoop.slots import SlotPolicy, maps_placed, reduces_first
from mrsched.policies.lsps.stats import RunningMean, UserHistory, phase_size, population_cv, slot_shares

Scheme = Literal["fifo", "fair"]
_KINDS: tuple[TaskType, TaskType] = ("map", "reduce")


class LspsConfig(PolicyConfig):
    alpha: float = Field(1.0, ge=0.0, le=1.0)  # Eq. (8); 1 in the paper's experiments
    cv_threshold: float = Field(1.0, alias="cvThreshold", gt=0.0)  # Sec. II-C: FIFO iff both CVs < 1
    assign_multiple: bool = Field(True, alias="assignMultiple")
    recompute_on_task_finish: bool = Field(False, alias="recomputeOnTaskFinish")
    current_cv_uses_job_means: bool = Field(False, alias="currentCvUsesJobMeans")


@dataclass
class _JobStats:
    """What LsPS keeps of a current job: owner, submission, n^m, n^r, and t̄* per phase (Algorithm 1 step 2)."""

    user: str
    submit_s: float
    maps: int
    reduces: int
    times: dict[str, RunningMean] = field(
        default_factory=lambda: {"map": RunningMean(), "reduce": RunningMean()}
    )

    def tasks(self, kind: str) -> int:
        return self.maps if kind == "map" else self.reduces


@dataclass
class _User:
    history: UserHistory = field(default_factory=UserHistory)
    scheme: Scheme = "fair"
    cv_history: float | None = None  # CV_i at the last tier-2 decision (before a reset)
    cv_current: float | None = None  # CV'_i at the last tier-2 decision
    resets: int = 0


@register
class Lsps(Configured[LspsConfig], SlotPolicy):
    name = "lsps"
    Config = LspsConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.users: dict[str, _User] = {}
        self._jobs: dict[str, _JobStats] = {}
        self.shares: dict[str, dict[str, float]] = {"map": {}, "reduce": {}}  # SU_i per slot type
        self._dirty: dict[str, bool] = {"map": True, "reduce": True}
        self._totals: dict[str, int] = {}  # slots per type when the shares were computed

    def user(self, name: str) -> _User:
        if name not in self.users:
            self.users[name] = _User()
        return self.users[name]

    # --- Eq. (7) and Eq. (8) -------------------------------------------------------------------------------

    def _recompute(self, kind: TaskType, jobs: Iterable[tuple[str, str, int, int]], total: int) -> None:
        """Tier 1 for one slot type: ``jobs`` are the current jobs as (user, job id, n, tasks left of ``kind``);
        a user with tasks of ``kind`` left is active. S̄*_i by Eq. (7), SU_i by Eq. (8)."""
        per_user: dict[str, list[tuple[int, float | None]]] = {}
        active: set[str] = set()
        for user, job_id, count, left in jobs:
            stats = self._jobs.get(job_id)
            own = stats.times[kind] if stats is not None else None
            per_user.setdefault(user, []).append((count, own.mean if own is not None and own.known else None))
            if left > 0:
                active.add(user)
        sizes = {u: phase_size(per_user[u], self.user(u).history.mean_task_s(kind)) for u in sorted(active)}
        self.shares[kind] = slot_shares(total, sizes, self.cfg.alpha)
        self._totals[kind] = total
        self._dirty[kind] = False

    def _tracked_jobs(self, kind: TaskType) -> list[tuple[str, str, int, int]]:
        return [
            (s.user, job_id, s.tasks(kind), s.tasks(kind) - s.times[kind].count)
            for job_id, s in self._jobs.items()
        ]

    @staticmethod
    def _snapshot_jobs(snapshot: ClusterSnapshot, kind: TaskType) -> list[tuple[str, str, int, int]]:
        return [
            (
                j.user,
                j.id,
                len(j.tasks(kind)),
                len(j.tasks(kind)) - (j.finished_maps if kind == "map" else j.finished_reduces),
            )
            for j in snapshot.jobs
        ]

    # --- tier 2 ----------------------------------------------------------------------------------------------

    def _current_sizes(self, user: str) -> list[float]:
        """s'_{i,j} = t̄^m · n^m + t̄^r · n^r of the user's current jobs (Eq. 3 with the user's mean task times)."""
        jobs = [s for s in self._jobs.values() if s.user == user]
        history = self.user(user).history
        means: dict[str, float] = {}
        for kind in _KINDS:
            mean = history.mean_task_s(kind)
            if mean is None:  # no history: the current jobs' finished tasks, else a unit (CV is scale-free)
                runs = [s.times[kind] for s in jobs if s.times[kind].known]
                count = sum(r.count for r in runs)
                mean = sum(r.mean * r.count for r in runs) / count if count else 1.0
            means[kind] = mean
        sizes = []
        for s in jobs:
            size = 0.0
            for kind in _KINDS:
                own = s.times[kind]
                use_own = self.cfg.current_cv_uses_job_means and own.known
                size += s.tasks(kind) * (own.mean if use_own else means[kind])
            sizes.append(size)
        return sizes

    def decide_scheme(self, user: str) -> Scheme:
        """Sec. II-C: FIFO iff CV_i and CV'_i are both below the threshold; a conflict means Fair and a new
        history window; without history (A7) CV'_i alone decides."""
        state = self.user(user)
        threshold = self.cfg.cv_threshold
        state.cv_current = population_cv(self._current_sizes(user))
        state.cv_history = state.history.cv
        now_low = state.cv_current < threshold
        if state.cv_history is None or (state.cv_history < threshold) == now_low:  # A7, or both agree
            state.scheme = "fifo" if now_low else "fair"
        else:
            state.scheme = "fair"
            state.history.reset()
            state.resets += 1
        return state.scheme

    # --- hooks -------------------------------------------------------------------------------------------------

    def on_job_submitted(self, job: Job, now: float) -> None:
        """Algorithm 1 step 1: S̄*_i (Eq. 7), the shares of all active users (Eq. 8), then user i's scheme."""
        if job.id in self._jobs:
            return
        self._jobs[job.id] = _JobStats(job.user, job.submit_s, len(job.maps), len(job.reduces))
        self._recompute_now()
        self.decide_scheme(job.user)

    def _recompute_now(self) -> None:
        """Shares of the current jobs as this policy tracks them, once a heartbeat told the slot totals."""
        for kind in _KINDS:
            if kind in self._totals:
                self._recompute(kind, self._tracked_jobs(kind), self._totals[kind])
            else:
                self._dirty[kind] = True

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        """Algorithm 1 step 2: update t̄* of the task's job and phase with the attempt's duration."""
        super().on_task_finished(outcome)
        stats = self._jobs.get(outcome.task.job_id)
        if stats is None or not outcome.succeeded:
            return
        stats.times[outcome.task.kind].add(outcome.duration_s)
        if self.cfg.recompute_on_task_finish:
            self._dirty[outcome.task.kind] = True

    def on_job_finished(self, job: Job, now: float) -> None:
        """Algorithm 1 step 3: the job's measured t̄^m_{i,j}, t̄^r_{i,j} and n^m, n^r update the user's history
        (Eqs. 1-6). Failed jobs are no completed jobs and teach nothing. Shares are recomputed (A4)."""
        super().on_job_finished(job, now)
        stats = self._jobs.pop(job.id, None)
        if stats is not None and not any(t.failed for t in (*job.maps, *job.reduces)):
            self._learn(stats)
        self._recompute_now()  # A4 (Algorithm 1 step 7): a user without jobs leaves the active set

    def _learn(self, stats: _JobStats) -> None:
        """Eqs. 1-6 with the finished job's measured t̄^m_{i,j}, t̄^r_{i,j}."""
        history = self.user(stats.user).history
        means: dict[str, float | None] = {}
        for kind in _KINDS:
            own = stats.times[kind]
            means[kind] = own.mean if own.known else None
            if means[kind] is None and stats.tasks(kind) > 0:
                means[kind] = history.mean_task_s(kind)  # not measured here (e.g. a restart): the user's mean
                if means[kind] is None:
                    return  # a phase with tasks but no time at all: no size to learn
        history.add_job(means["map"], stats.maps, means["reduce"], stats.reduces)

    # --- Algorithm 1 step 4: a free slot ---------------------------------------------------------------------

    def refresh(self, snapshot: ClusterSnapshot) -> dict[str, list[Job]]:
        """The snapshot's jobs by user (submission order); shares recomputed if stale (A4)."""
        # Which jobs there are and which users have tasks left change only with the jobs (a task's end, a job's
        # arrival or departure), not at the far more frequent heartbeats between: read once per jobs version.
        # The membership sync below is idempotent, so doing it once per version is doing it every time.
        by_user, active = snapshot.memo_jobs(("lsps.jobs", id(self)), lambda: self._sync_jobs(snapshot))
        for kind in _KINDS:
            total = snapshot.slot_total(kind)
            if (
                self._dirty[kind]
                or self._totals.get(kind) != total
                or active[kind] != self.shares[kind].keys()
            ):
                self._recompute(kind, self._snapshot_jobs(snapshot, kind), total)
        return by_user

    def _sync_jobs(self, snapshot: ClusterSnapshot) -> tuple[dict[str, list[Job]], dict[TaskType, set[str]]]:
        """Forget jobs gone without a finish, submit jobs not announced; the jobs by user and, per slot type,
        the users with tasks of it left (active)."""
        by_user: dict[str, list[Job]] = {}
        current = {job.id for job in snapshot.jobs}
        for stale in [job_id for job_id in self._jobs if job_id not in current]:
            del self._jobs[stale]  # gone without a finish (deleted): no longer a current job
        for job in snapshot.jobs:
            by_user.setdefault(job.user, []).append(job)
            if job.id not in self._jobs:  # not announced (e.g. hand-built or restored): submit it now
                self.on_job_submitted(job, snapshot.now)
        active = {
            kind: {
                j.user
                for j in snapshot.jobs
                if len(j.tasks(kind)) > (j.finished_maps if kind == "map" else j.finished_reduces)
            }
            for kind in _KINDS
        }
        return by_user, active

    def _pick(
        self, jobs: list[Job], kind: TaskType, scheme: Scheme, snapshot: ClusterSnapshot, node: str
    ) -> tuple[Task, Level | None] | None:
        """Tier 2 within the user: FIFO, the earliest job with a pending task of ``kind``; Fair, the job
        running the fewest tasks of ``kind`` (ties by submission)."""
        if scheme == "fifo":
            ordered = sorted(jobs, key=lambda j: j.submit_s)
        else:
            ordered = sorted(jobs, key=lambda j: (j.running(kind), j.submit_s))
        for job in ordered:
            if kind == "map":
                found = self.pick_map(job, snapshot, node)
                if found is not None:
                    return found
            else:
                task = self.reduce_for(job, snapshot, node)
                if task is not None:
                    return task, None
        return None

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        by_user = self.refresh(snapshot)
        placements: list[Placement] = []
        if reduces_first(snapshot, node):  # a reduce whose maps are all placed first, then Hadoop's order
            self._fill(snapshot, node, "reduce", by_user, placements, maps_placed)
        for kind in _KINDS:
            self._fill(snapshot, node, kind, by_user, placements)
        return placements

    def _fill(
        self,
        snapshot: ClusterSnapshot,
        node: str,
        kind: TaskType,
        by_user: dict[str, list[Job]],
        placements: list[Placement],
        only: Callable[[Job], bool] | None = None,
    ) -> None:
        """Tier 1 over the users by deficit, tier 2 within the user (:meth:`_pick`), for the node's free places
        of ``kind``; ``only`` keeps the jobs a pass may pick from (the users' holdings count every job)."""
        free = snapshot.free_slots(node, kind)
        if not self.cfg.assign_multiple:
            free = min(free, 1 - sum(p.task.kind == kind for p in placements))
        if free <= 0:
            return  # nothing to place: the users' holdings below are read only to place
        shares = self.shares[kind]
        held = {u: sum(j.running(kind) for j in by_user.get(u, ())) for u in shares}
        first = {u: by_user[u][0].submit_s if by_user.get(u) else 0.0 for u in shares}
        exhausted: set[str] = set()  # users found without a pending task of ``kind`` this heartbeat
        for _ in range(free):
            order = sorted(shares, key=lambda u: (-(shares[u] - held[u]), first[u], u))
            placed = False
            for rank, user in enumerate(order):
                if user in exhausted:
                    continue
                state = self.user(user)
                jobs = [j for j in by_user.get(user, []) if only is None or only(j)]
                found = self._pick(jobs, kind, state.scheme, snapshot, node)
                if found is None:
                    exhausted.add(user)
                    continue
                task, level = found
                deficit = shares[user] - held[user]
                reason = self._reason(user, kind, shares[user], held[user], rank, state, level)
                placements.append(self.place(snapshot, task, node, reason, score=deficit))
                held[user] += 1
                placed = True
                break
            if not placed:
                break

    def _reason(
        self, user: str, kind: str, share: float, held: int, rank: int, state: _User, level: Level | None
    ) -> str:
        deficit = share - held
        where = "largest" if rank == 0 else f"{rank} user(s) with a larger deficit had no pending {kind}"
        cv = "-" if state.cv_history is None else f"{state.cv_history:.2f}"
        cv_now = "-" if state.cv_current is None else f"{state.cv_current:.2f}"
        reason = (
            f"user {user}: share {share:.1f} {kind} slots, holds {held} (deficit {deficit:.1f}, {where}); "
            f"tier 2 {'FIFO' if state.scheme == 'fifo' else 'Fair'} (CV {cv}/{cv_now})"
        )
        return reason if level is None else f"{reason}; {level}-local"

    # --- persistence ---------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        users: dict[str, Any] = {}
        for name, u in self.users.items():
            h = u.history
            users[name] = {
                "completedJobs": h.jobs,
                "mapJobs": h.map_jobs,
                "reduceJobs": h.reduce_jobs,
                "meanMapS": h.mean_map_s,
                "meanReduceS": h.mean_reduce_s,
                "meanSizeS": h.mean_size_s,
                "m2": h.m2,
                "cv": h.cv,
                "scheme": u.scheme,
                "mapShare": round(self.shares["map"].get(name, 0.0), 3),
                "reduceShare": round(self.shares["reduce"].get(name, 0.0), 3),
            }
        return {"policy": {"users": users}}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore each user's history window and scheme; shares are recomputed from the jobs at hand."""
        saved = (state.get("policy") or {}).get("users") or {}
        for name, fields in saved.items():
            if not isinstance(fields, dict):
                continue

            def number(key: str, fields: dict[str, Any] = fields) -> float:
                value = fields.get(key)
                return float(value) if isinstance(value, int | float) else 0.0

            jobs = int(number("completedJobs"))
            history = UserHistory(
                jobs=jobs,
                mean_map_s=number("meanMapS"),
                mean_reduce_s=number("meanReduceS"),
                mean_size_s=number("meanSizeS"),
                m2=number("m2"),
                map_jobs=int(number("mapJobs")) if "mapJobs" in fields else jobs,
                reduce_jobs=int(number("reduceJobs")) if "reduceJobs" in fields else jobs,
            )
            user = self.user(name)
            user.history = history
            if fields.get("scheme") in ("fifo", "fair"):
                user.scheme = fields["scheme"]
            user.cv_history = history.cv
