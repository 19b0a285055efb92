"""The statistics of LsPS (seed 004, Yao, Tai, Sheng & Mi, Sec. II-A and II-B), pure and without a scheduler.

* :class:`UserHistory`: a user's completed-job history, updated online with Welford's one-pass method when one
  of its jobs finishes (Eqs. 1-6), in the current collection window (reset by the tier-2 rule, Sec. II-C).
* :class:`RunningMean`: t̄*_{i,j}, a running job's mean task time of one phase over its finished tasks.
* :func:`population_cv`: CV of a list of sizes by Eqs. (4)-(6) (CV'_i over a user's current jobs).
* :func:`phase_size`: Eq. (7), a user's mean map- or reduce-phase size over its current jobs.
* :func:`slot_shares`: Eq. (8), the tier-1 slot shares of the active users, with A6 for unknown sizes.

Readings (digest ``yao-lsps.md`` §1.6): A1 Eq. (5) uses the mean *before* Eq. (4)'s update; A2 j counts the
completed jobs of the window (1 for the first); CV is the population standard deviation over the mean (Eq. 6).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass
class RunningMean:
    """A running mean (Welford's mean update, as Eqs. 1-2): t̄*_{i,j} of one phase of one job."""

    count: int = 0
    mean: float = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.mean += (value - self.mean) / self.count

    @property
    def known(self) -> bool:
        return self.count > 0


@dataclass
class UserHistory:
    """User i's statistics over the completed jobs of the current window: t̄^m_i, t̄^r_i, S̄_i, v_i, j.

    All start at 0 (Sec. II-A). ``map_jobs`` / ``reduce_jobs`` count the jobs that measured a map / reduce task
    time (ours: a job without reduce tasks has no t̄^r_{i,j}, and feeding it as 0 would drag t̄^r_i down); with
    every job having both phases they equal j, and Eqs. (1)-(2) are the paper's.
    """

    jobs: int = 0  # j: completed jobs in the window (A2)
    mean_map_s: float = 0.0  # t̄^m_i, Eq. (1)
    mean_reduce_s: float = 0.0  # t̄^r_i, Eq. (2)
    mean_size_s: float = 0.0  # S̄_i, Eq. (4)
    m2: float = 0.0  # v_i, Eq. (5)
    map_jobs: int = 0
    reduce_jobs: int = 0

    def add_job(
        self, mean_map_s: float | None, maps: int, mean_reduce_s: float | None, reduces: int
    ) -> float:
        """Job_{i,j} finished with measured mean task times t̄^m_{i,j}, t̄^r_{i,j} (None: the phase has no
        measured task) and task counts n^m_{i,j}, n^r_{i,j}: apply Eqs. (1)-(6); return its size s_{i,j}."""
        self.jobs += 1
        j = self.jobs
        if mean_map_s is not None:
            self.map_jobs += 1
            self.mean_map_s += (mean_map_s - self.mean_map_s) / self.map_jobs  # Eq. (1)
        if mean_reduce_s is not None:
            self.reduce_jobs += 1
            self.mean_reduce_s += (mean_reduce_s - self.mean_reduce_s) / self.reduce_jobs  # Eq. (2)
        size = (mean_map_s or 0.0) * maps + (mean_reduce_s or 0.0) * reduces  # Eq. (3)
        old_mean = self.mean_size_s
        self.m2 += (size - old_mean) ** 2 * (j - 1) / j  # Eq. (5), with S̄_i before Eq. (4) (A1)
        self.mean_size_s += (size - old_mean) / j  # Eq. (4)
        return size

    @property
    def cv(self) -> float | None:
        """CV_i = sqrt(v_i / j) / S̄_i (Eq. 6); None without a completed job (A7); 0 when S̄_i is 0."""
        if self.jobs == 0:
            return None
        if self.mean_size_s <= 0.0:
            return 0.0
        return math.sqrt(max(0.0, self.m2) / self.jobs) / self.mean_size_s

    def mean_task_s(self, kind: str) -> float | None:
        """t̄^m_i or t̄^r_i, None while no job of the window measured that phase."""
        if kind == "map":
            return self.mean_map_s if self.map_jobs > 0 else None
        return self.mean_reduce_s if self.reduce_jobs > 0 else None

    def reset(self) -> None:
        """Start a new collection window (Sec. II-C): t̄_i, S̄_i, v_i and j back to 0."""
        self.jobs = self.map_jobs = self.reduce_jobs = 0
        self.mean_map_s = self.mean_reduce_s = self.mean_size_s = self.m2 = 0.0


def population_cv(sizes: Iterable[float]) -> float:
    """CV of ``sizes`` by Eqs. (4)-(6) (Welford, population std over mean): CV'_i of a user's current jobs.
    An empty list, or sizes all 0, give 0 (one job alone has CV' = 0, A7)."""
    count, mean, m2 = 0, 0.0, 0.0
    for size in sizes:
        count += 1
        m2 += (size - mean) ** 2 * (count - 1) / count  # Eq. (5), old mean
        mean += (size - mean) / count  # Eq. (4)
    if count == 0 or mean <= 0.0:
        return 0.0
    return math.sqrt(max(0.0, m2) / count) / mean


def phase_size(jobs: Iterable[tuple[int, float | None]], history_mean_s: float | None) -> float | None:
    """Eq. (7): S̄*_i = (1/|J_i|) Σ_j n_{i,j} · t̄_{i,j} over the user's current jobs, given per job its task
    count n of the phase and its own t̄*_{i,j} (None before any of its tasks of the phase finished, then the
    user's historical t̄_i stands in). A job whose t̄ is unknown on both counts (no finished task, no history)
    is left out of the mean (A6 per job); None when no job's size is known (A6: the user's size is unknown)."""
    total, known = 0.0, 0
    for count, own_mean in jobs:
        mean = own_mean if own_mean is not None else history_mean_s
        if mean is None:
            continue
        total += count * mean
        known += 1
    if known == 0 or total <= 0.0:
        return None
    return total / known


def slot_shares(total_slots: float, sizes: Mapping[str, float | None], alpha: float) -> dict[str, float]:
    """Eq. (8): SU_i = SU*_i · (α · U · (1/S̄*_i) / Σ_k (1/S̄*_k) + 1 − α), SU*_i = total / U, for the U active
    users in ``sizes`` (their S̄*, Eq. 7). Every share is > 0 (Eq. 9) and they sum to the total (Eq. 10).

    A6: an unknown size (None or ≤ 0) is replaced by the mean of the known users' sizes; with none known every
    user gets its Fair share SU*_i."""
    users = list(sizes)
    if not users:
        return {}
    fair = total_slots / len(users)
    known = [s for s in sizes.values() if s is not None and s > 0.0]
    if not known:
        return dict.fromkeys(users, fair)
    substitute = sum(known) / len(known)
    inverse = {u: 1.0 / (s if s is not None and s > 0.0 else substitute) for u, s in sizes.items()}
    norm = sum(inverse.values())
    count = len(users)
    return {u: fair * (alpha * count * inverse[u] / norm + 1.0 - alpha) for u in users}
