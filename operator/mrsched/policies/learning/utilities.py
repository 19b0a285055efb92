"""Utility functions U(J) of seed 000's learning scheduler (Dhok & Varma Sec. IV-B; digest §1.4).

Policy enters the scheduler only through U(J) in Eq (1), E.U.(J) = U(J)·P(good|F); U = 0 means "not
considered". The paper defines the utilities in words; the renderings are the digest's. Several combine by
product (digest §1.4's recommendation; the paper gives no rule), so any zero acts as a gate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mrsched.core.model import ClusterSnapshot, Job, TaskType

#: U of a user the dedicated-capacity utility has no promise for [ours]: positive (never starved) but below
#: any promised user's deficit worth mentioning, so promised users below their share go first.
UNPROMISED = 1e-3


@dataclass(frozen=True)
class UtilityContext:
    """What a utility may read besides the candidate: the snapshot and the policy's options and balances."""

    snapshot: ClusterSnapshot
    map_before_reduce: float
    balances: Mapping[str, float]
    capacities: Mapping[str, float]
    capacity_rule: str
    revenue: Mapping[str, float]


Utility = Callable[[Job, TaskType, UtilityContext], float]


def constant(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """U = 1 (the experiments of Fig. 9 and 11)."""
    return 1.0


def fifo(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """FIFO/FCFS: U ∝ age; age + 1 s (A7) so that a job is worth something at submission."""
    return max(0.0, ctx.snapshot.now - job.submit_s) + 1.0


def map_before_reduce(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """U(J, reduce) = 0 until the fraction ``mapBeforeReduce`` of J's maps finished (A8; default Hadoop's
    slow-start 0.05, 1.0 = strictly all maps first); maps are unaffected."""
    if kind == "map":
        return 1.0
    return 1.0 if job.map_progress >= ctx.map_before_reduce else 0.0


def budget(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """Budget constrained: 0 once the owner's balance is ≤ 0, else 1; users without a budget are unlimited.
    Each task the policy assigns charges its owner 1 unit [ours: the paper names no price]."""
    if job.user not in ctx.balances:
        return 1.0
    return 1.0 if ctx.balances[job.user] > 0 else 0.0


def dedicated_capacity(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """Dedicated capacity: J's owner is promised a fraction f of the cluster; a = the owner's running tasks /
    all running tasks (0 when nothing runs). U = (f − a)/f when a < f, else 0 (A9, the relative deficit);
    ``capacityRule: literal`` gives the paper's words read literally, 1/(f − a). Users without a promise get
    :data:`UNPROMISED` [ours]."""
    f = ctx.capacities.get(job.user)
    if f is None:
        return UNPROMISED
    total = sum(len(attempts) for attempts in ctx.snapshot.running.values())
    mine = sum(
        1
        for attempts in ctx.snapshot.running.values()
        for a in attempts
        if _user(ctx, a.task.job_id) == job.user
    )
    a = mine / total if total else 0.0
    if a >= f:
        return 0.0
    return 1.0 / (f - a) if ctx.capacity_rule == "literal" else (f - a) / f


def _user(ctx: UtilityContext, job_id: str) -> str | None:
    try:
        return ctx.snapshot.job(job_id).user
    except KeyError:  # a finished job's attempt still listed: not anyone's share
        return None


def revenue(job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """Revenue oriented: U ∝ what J's submitter pays (``revenue`` per user, default 1)."""
    return max(0.0, ctx.revenue.get(job.user, 1.0))


UTILITIES: dict[str, Utility] = {
    "constant": constant,
    "fifo": fifo,
    "map-before-reduce": map_before_reduce,
    "budget": budget,
    "dedicated-capacity": dedicated_capacity,
    "revenue": revenue,
}


def combined(names: list[str], job: Job, kind: TaskType, ctx: UtilityContext) -> float:
    """The product of the named utilities (digest §1.4: any zero gates the candidate)."""
    u = 1.0
    for name in names:
        u *= UTILITIES[name](job, kind, ctx)
    return u
