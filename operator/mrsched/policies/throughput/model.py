"""The ThroughputScheduler's model (seed 002, Gupta thesis ch.3): machine capabilities from probes (P3-A), the
Bayesian posterior over an application's θ (Eq 3.10-3.24), the explore design (Eq 3.31-3.33) and the exploit
score (Alg 3.2.2). Pure functions of numbers; the policy that uses them is :mod:`mrsched.policies.throughput.policy`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from mrsched.core.probes import Capability, estimate_overhead, estimate_rates

Vector = NDArray[np.float64]
Matrix = NDArray[np.float64]
DetConvention = Literal["thesis", "true"]

#: The thesis' stopping threshold on |Σθ| (§3.2.1, "we sample tasks until ... |Σ| < 0.007").
THESIS_DET_THRESHOLD = 0.007
_SINGULAR = 1e-12  # relative: det Λ below this × Λ11·Λ22 means parallel tubes (Eq 3.16/3.20: Δ = 0)


# --- machine capabilities (probes, P3-A) ---------------------------------------------------------------------


def estimate_capabilities(
    unit_times: Mapping[str, Sequence[float]],
    cpu_pair: tuple[Mapping[str, float], Mapping[str, float]],
    disk_pair: tuple[Mapping[str, float], Mapping[str, float]],
    eta: float,
    reference: str,
    sigma_s: Mapping[str, float] | None = None,
    default_sigma_s: float = 1.0,
) -> dict[str, Capability]:
    """Table 3.1 from probe durations with a reference machine (P3-A as the thesis runs it, offline over a
    fixed cluster): Ω from the unit task, κc from the CPU pair ⟨θc,θd⟩/⟨ηθc,θd⟩ and κd from the disk pair
    ⟨θc,θd⟩/⟨θc,ηθd⟩ (Eq 3.3-3.5). The operator and the simulator probe node by node with
    :func:`mrsched.core.probes.estimate_capability` instead (units fixed by the probe's work)."""
    kappa_c, _ = estimate_rates(cpu_pair[0], cpu_pair[1], eta, reference)
    kappa_d, _ = estimate_rates(disk_pair[0], disk_pair[1], eta, reference)
    sigma_s = sigma_s or {}
    return {
        m: Capability(
            kappa_c[m], kappa_d[m], estimate_overhead(unit_times[m]), sigma_s.get(m, default_sigma_s)
        )
        for m in kappa_c
    }


# --- the Bayesian posterior over θ (Eq 3.10-3.24) -------------------------------------------------------------


def bayes_update(precision: Matrix, h: Vector, cap: Capability, y: float) -> tuple[Matrix, Vector]:
    """Multiply the posterior by one observation's Gaussian tube (Eq 3.17, 3.18, 3.23).

    The posterior's exponent is the conic ``a20θc² + a11θcθd + a02θd² + a10θc + a01θd + a00`` (Eq 3.13), summed
    over observations ``(y − θc/κc − θd/κd)²/(2σ²)`` with ``y = T − Ω`` (Eq 3.11, 3.19, 3.24 with σ² where the
    print has σ, digest I3-2). Kept in information form: ``Λ = [[2a20, a11], [a11, 2a02]]`` (the true precision)
    and ``h = −(a10, a01)``, so ``Λ ← Λ + a aᵀ/σ²`` and ``h ← h + y a/σ²`` with ``a = (1/κc, 1/κd)``. Starting
    from Λ = 0, h = 0 is the thesis' uninformative prior (Eq 3.17).
    """
    a = cap.features()
    w = cap.weight
    return precision + w * np.outer(a, a), h + w * y * a


def conic_coefficients(precision: Matrix, h: Vector) -> tuple[float, float, float, float, float]:
    """(a20, a11, a02, a10, a01) of Eq 3.13 for the posterior's exponent (a00 does not matter)."""
    return (
        float(precision[0, 0]) / 2.0,
        float(precision[0, 1]),
        float(precision[1, 1]) / 2.0,
        -float(h[0]),
        -float(h[1]),
    )


def is_proper(precision: Matrix) -> bool:
    """The posterior is an ellipse (a proper bivariate Gaussian), not a tube: Δ = a11² − 4a20a02 < 0 (Eq 3.14,
    3.20). Observations only on machines with equal κc/κd ratios keep Δ = 0 (Eq 3.16)."""
    det = float(np.linalg.det(precision))
    return det > _SINGULAR * max(float(precision[0, 0] * precision[1, 1]), 1e-300)


def posterior_mean(precision: Matrix, h: Vector) -> Vector | None:
    """μθ read off the conic (Eq 3.21); None while the posterior is still a tube (fewer than two ratio classes)."""
    if not is_proper(precision):
        return None
    a20, a11, a02, a10, a01 = conic_coefficients(precision, h)
    denominator = 4.0 * a20 * a02 - a11 * a11
    return np.array(
        [(a11 * a01 - 2.0 * a02 * a10) / denominator, (a11 * a10 - 2.0 * a20 * a01) / denominator]
    )


def posterior_covariance(precision: Matrix) -> Matrix | None:
    """The true posterior covariance Λ⁻¹ (Eq 3.22 prints half the precision, digest I3-1); None for a tube."""
    return np.asarray(np.linalg.inv(precision), dtype=np.float64) if is_proper(precision) else None


def covariance_det(precision: Matrix, convention: DetConvention = "thesis") -> float:
    """|Σθ| for the stopping rule: ``thesis`` = 1/det(Eq 3.22's Σ⁻¹) = 4/det Λ (as Eq 3.30, |Σ|⁻¹ = −Δ/4);
    ``true`` = 1/det Λ. Infinite while the posterior is a tube (§3.2.1, "First Experiment")."""
    if not is_proper(precision):
        return math.inf
    det = float(np.linalg.det(precision))
    return (4.0 if convention == "thesis" else 1.0) / det


def explore_finished(
    precision: Matrix, threshold: float = THESIS_DET_THRESHOLD, convention: DetConvention = "thesis"
) -> bool:
    """The switch from explore to exploit: |Σθ| < 0.007 (§3.2.1, Table 3.2)."""
    return covariance_det(precision, convention) < threshold


def discriminant(j: Capability, k: Capability) -> float:
    """Δ of the posterior after one observation on j and one on k (Eq 3.20):
    ``−(1/(σjσk)²)·(1/(κc^j κd^k) − 1/(κd^j κc^k))²``; negative iff the κc/κd ratios differ."""
    cross = 1.0 / (j.kappa_c * k.kappa_d) - 1.0 / (j.kappa_d * k.kappa_c)
    return -(cross * cross) / (j.sigma_s * k.sigma_s) ** 2


class CandidateSet:
    """The machines an app may explore on, with their observation features as arrays, so that Eq 3.33's gain
    of every machine is one numpy expression per design rather than a Python loop over the cluster (at 1,000
    nodes and 200 exploring jobs that loop was the policy's whole cost: 2 s per heartbeat).

    Row m holds ``v_m = (a_m2, −a_m1) = (1/κd, −1/κc)`` and the weight ``1/σm²``; the cluster's summed κc and κd
    are Alg 3.2.2's normalisers, summed in the candidates' order."""

    def __init__(self, candidates: Mapping[str, Capability]) -> None:
        self.capabilities = dict(candidates)
        self.names = list(candidates)
        caps = list(candidates.values())
        self.v0 = np.array([1.0 / c.kappa_d for c in caps], dtype=np.float64)
        self.v1 = np.array([-(1.0 / c.kappa_c) for c in caps], dtype=np.float64)
        self.weights = np.array([c.weight for c in caps], dtype=np.float64)
        self.total_kappa_c = sum(c.kappa_c for c in caps)
        self.total_kappa_d = sum(c.kappa_d for c in caps)

    def gains(self, history_precision: Matrix) -> Vector:
        """:func:`explore_gains` of every candidate, in :attr:`names` order: ``(1/σm²)·vᵀΛv`` (Eq 3.33)."""
        p = history_precision
        t0 = self.v0 * p[0, 0] + self.v1 * p[1, 0]
        t1 = self.v0 * p[0, 1] + self.v1 * p[1, 1]
        return np.asarray(self.weights * (t0 * self.v0 + t1 * self.v1), dtype=np.float64)

    def best(self, history_precision: Matrix) -> set[str]:
        """The argmax machines of the gain (ties kept: identical machines tie). With no observation yet every
        gain is 0 and any machine will do (§3.2.1, "First Experiment")."""
        if not self.names:
            return set()
        gains = self.gains(history_precision)
        best = float(gains.max())
        return {self.names[i] for i in np.flatnonzero(gains >= best * (1.0 - 1e-9))}


def explore_gains(history_precision: Matrix, candidates: Mapping[str, Capability]) -> dict[str, float]:
    """How much each candidate machine's next observation would tighten the posterior (Eq 3.31-3.33, P3-B).

    Minimising the posterior entropy (Eq 3.28) maximises det Λ, and by Eq 3.33 det Λ is a sum over pairs of
    observations of ``(1/(σjσk)²)(1/(κc^j κd^k) − 1/(κd^j κc^k))²``. Adding machine m adds
    ``gain(m) = Σ_o (1/σm²)(1/σo²)(a_m × a_o)² = (1/σm²)·vᵀΛv`` with ``v = (a_m2, −a_m1)`` and Λ the precision of
    the observations so far (planned ones included: Λ does not depend on the times, Eq 3.22).
    """
    candidate_set = CandidateSet(candidates)
    return dict(zip(candidate_set.names, candidate_set.gains(history_precision).tolist(), strict=True))


def explore_machines(history_precision: Matrix, candidates: Mapping[str, Capability]) -> set[str]:
    """The argmax machines of :func:`explore_gains` (:meth:`CandidateSet.best`)."""
    return CandidateSet(candidates).best(history_precision)


# --- exploit: SelectBestApplication (Alg 3.2.2) -------------------------------------------------------------


def application_score(mean: Vector, node: Capability, total_kappa_c: float, total_kappa_d: float) -> float:
    """Alg 3.2.2's score of an app on a node: ``norm(θc)/norm(κc) + norm(θd)/norm(κd)``, with θ normalised over
    resources (the app's share of its own need) and κ over the cluster's machines (this machine's share of the
    cluster's capability). Negative means are clipped to 0 (the thesis truncates θ ≥ 0, digest I3-4)."""
    theta = np.clip(mean, 0.0, None)
    total = float(theta.sum())
    share = theta / total if total > 0 else np.array([0.5, 0.5])
    return float(share[0] / (node.kappa_c / total_kappa_c) + share[1] / (node.kappa_d / total_kappa_d))
