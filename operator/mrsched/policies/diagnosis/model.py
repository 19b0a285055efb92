"""Pervasive diagnosis's model (seed 002, Gupta thesis, chapter 6): a node's belief, and pure functions of
arrays: the belief's random-walk step (Eq 6.7/6.8) and Kalman update, the expected information gain of
observations (Eq 6.17 in closed form), and the throughput expected under the belief (Eq 6.5 with Eq 4.9/4.12);
and what one recomputation of x* shares between nodes (:class:`Mixes`) and a node's x* evaluated when first
read (:class:`Deferred`). The policy that keeps the beliefs and places by them is
:mod:`mrsched.policies.diagnosis.policy`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrsched.policies.dara.model import Vector, load_ratios
from mrsched.policies.dara.search import Assignment

Matrix = Vector  # 2×2 float arrays

#: Floor of the slowdown factors' samples and means: a node cannot run faster than with no load term.
S_FLOOR = 0.01


def predict(cov: Matrix, variance: float, cap: float | None = None) -> Matrix:
    """Eq 6.7: the random-walk step adds ``variance`` to each diagonal element (V read as a variance per step,
    digest I6-2), never past ``cap`` when one is given (the V_low drift cap)."""
    step = np.full(2, variance, dtype=np.float64)
    if cap is not None:
        step = np.clip(cap - np.diag(cov), 0.0, step)
    return np.asarray(cov + np.diag(step), dtype=np.float64)


def kalman_update(mean: Vector, cov: Matrix, a: Vector, y: float, noise_var: float) -> tuple[Vector, Matrix]:
    """Condition N(mean, cov) on one observation y = aᵀs + ε, ε ~ N(0, noise_var): ``S = aᵀΣa + σ²``,
    ``K = Σa/S``, ``μ' = μ + K(y − aᵀμ)``, ``Σ' = Σ − K aᵀΣ`` (the information form's update, Eq 5.14/5.15)."""
    sa = cov @ a
    s = float(a @ sa) + noise_var
    gain = sa / s
    new_mean = mean + gain * (y - float(a @ mean))
    new_cov = cov - np.outer(gain, sa)
    return np.asarray(new_mean, dtype=np.float64), np.asarray(0.5 * (new_cov + new_cov.T), dtype=np.float64)


def information_gain(
    cov: Matrix, features: Vector, noise_vars: Vector, counts: Vector | None = None
) -> float:
    """Expected information gain (nats) of observing each row a_k of ``features`` ``counts[k]`` times with noise
    variance ``noise_vars[k]``: ``½ ln det(I + Σ Σ_k n_k a_k a_kᵀ/σ_k²)`` (Eq 6.17's expected KL divergence, in
    closed form for a linear-Gaussian model). 0 for no observation."""
    n = np.ones(len(features)) if counts is None else np.asarray(counts, dtype=np.float64)
    info = np.einsum("k,ki,kj->ij", n / noise_vars, features, features)
    sign, logdet = np.linalg.slogdet(np.eye(2) + cov @ info)
    return 0.5 * float(logdet) if sign > 0 else 0.0


def load_features(
    grid: Vector, c: Vector, d: Vector, alpha_c: float, alpha_d: float
) -> tuple[Vector, Vector]:
    """Per row x of ``grid`` and application j, Eq 4.12's load terms per unit of s_c and of s_d:
    c_j α_c L_c(x)² and d_j α_d L_d(x)², (G, n) each (the observation's features at x's loads)."""
    rc, rd = load_ratios(c, d)
    lc, ld = grid @ rc, grid @ rd  # (G,)
    cpu = c[None, :] * alpha_c * (lc**2)[:, None]
    disk = d[None, :] * alpha_d * (ld**2)[:, None]
    return cpu, disk


def throughput_terms(
    grid: Vector, lam: Vector, c: Vector, d: Vector, alpha_c: float, alpha_d: float
) -> tuple[Vector, Vector, Vector]:
    """What :func:`expected_throughputs` computes of ``grid`` before the samples: :func:`load_features` and the
    work λ_j x_j, (G, n) each."""
    cpu, disk = load_features(grid, c, d, alpha_c, alpha_d)
    return cpu, disk, np.where(grid > 0, lam[None, :] * grid, 0.0)


def expected_throughputs(
    grid: Vector,
    lam: Vector,
    c: Vector,
    d: Vector,
    alpha_c: float,
    alpha_d: float,
    samples: Vector,
    terms: tuple[Vector, Vector, Vector] | None = None,
) -> Vector:
    """E[τ̄(x)] (Eq 6.5 with Eq 4.9/4.12) for every row x of ``grid``, as the mean over the rows (s_c, s_d) of
    ``samples`` of Σ_j λ_j x_j / t_j(x; s_c α_c, s_d α_d). ``terms``: :func:`throughput_terms` of the same
    grid and parameters, when a caller shares them between beliefs."""
    cpu, disk, work = terms if terms is not None else throughput_terms(grid, lam, c, d, alpha_c, alpha_d)
    # t = λ + s_c·cpu + s_d·disk, (K, G, n), built in one buffer (the largest array of a diagnosis run): the
    # same sums in the same order as the expression, IEEE addition being commutative.
    t = samples[:, 0, None, None] * cpu[None]
    t += lam[None, None, :]
    t += samples[:, 1, None, None] * disk[None]
    t[~(t > 0)] = 1.0  # as np.where(t > 0, t, 1.0): NaN too
    per_sample = np.divide(work[None], t, out=t).sum(axis=2)  # (K, G)
    return np.asarray(per_sample.mean(axis=0), dtype=np.float64)


def grid_information_gains(
    grid: Vector, c: Vector, d: Vector, alpha_c: float, alpha_d: float, cov: Matrix, noise: Vector
) -> Vector:
    """EIG(x) for every row x of ``grid``: one completion of each container, with features at x's loads."""
    a_c, a_d = load_features(grid, c, d, alpha_c, alpha_d)
    w = grid / noise[None, :]
    info = np.stack(
        [
            np.stack([np.sum(w * a_c * a_c, 1), np.sum(w * a_c * a_d, 1)], -1),
            np.stack([np.sum(w * a_d * a_c, 1), np.sum(w * a_d * a_d, 1)], -1),
        ],
        -2,
    )  # (G, 2, 2)
    m = np.eye(2)[None] + cov[None] @ info
    det = m[:, 0, 0] * m[:, 1, 1] - m[:, 0, 1] * m[:, 1, 0]
    return np.asarray(0.5 * np.log(np.maximum(det, 1.0)), dtype=np.float64)


@dataclass
class NodeBelief:
    """A node's belief over its slowdown factors s = (s_c, s_d) (moment form)."""

    mean: Vector = field(default_factory=lambda: np.ones(2))
    cov: Matrix = field(default_factory=lambda: np.eye(2))
    observations: int = 0
    detections: int = 0
    recent: list[bool] = field(default_factory=list)
    computed_at: Vector | None = None  # the mean x* was last computed with
    #: the covariance's SVD factor U·sqrt(S), for the covariance array it was computed of (Diagnosis._draw)
    factor: Matrix | None = field(default=None, repr=False, compare=False)
    factor_of: Matrix | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slowdownC": round(float(self.mean[0]), 6),
            "slowdownD": round(float(self.mean[1]), 6),
            "covariance": [[round(float(v), 9) for v in row] for row in self.cov],
            "observations": self.observations,
            "detections": self.detections,
        }


@dataclass
class Mixes:
    """What one recomputation of x* shares between nodes: the applications' parameters (Eq 4.12's λ, c, d and
    memory, each job's CPU request, σ_j²) and, by the node's part of their inputs (its class's α's, its memory
    and cores), the prior's argmax and the enumerated mixes' load terms (a class's nodes share them)."""

    apps: list[str]
    known: list[str]  # the applications with a profile and a λ: the search's
    lam: Vector
    c: Vector
    d: Vector
    mem: Vector
    cpu: Vector
    noise: Vector
    key: tuple[object, ...]
    priors: dict[tuple[object, ...], Assignment] = field(default_factory=dict)
    terms: dict[tuple[object, ...], tuple[Vector, Vector, Vector]] = field(default_factory=dict)


class Deferred:
    """A node's x* and whether it was found by enumeration, computed on first :meth:`value`."""

    __slots__ = ("_compute", "_value")

    def __init__(self, compute: Callable[[], tuple[tuple[int, ...], bool]]) -> None:
        self._compute: Callable[[], tuple[tuple[int, ...], bool]] | None = compute
        self._value: tuple[tuple[int, ...], bool] | None = None

    def value(self) -> tuple[tuple[int, ...], bool]:
        if self._compute is not None:
            self._value, self._compute = self._compute(), None  # drop what it held
        assert self._value is not None
        return self._value
