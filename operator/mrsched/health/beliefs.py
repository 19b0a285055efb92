"""The two Gaussian beliefs of the soft-fault monitor: a node's slowdown γ and an application's work θ
(seed 002 Eq 5.14/5.15; the package docstring has the method)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float64]
Matrix = NDArray[np.float64]

RESOURCES = ("cpu", "disk")
_SYMBOL = {"cpu": "γc", "disk": "γd"}
#: Relative: det Λ below this × Λ11·Λ22 means the θ posterior is still a tube (Eq 3.16/3.20: Δ = 0).
_SINGULAR = 1e-9
#: State layout version (load_state refuses other shapes).
STATE_VERSION = 1


def _vec(values: Sequence[float] | Vector, size: int = 2) -> Vector:
    out = np.asarray(values, dtype=np.float64).reshape(size)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"non-finite values: {out.tolist()}")
    return out


def _mat(values: Sequence[Sequence[float]] | Matrix) -> Matrix:
    out = np.asarray(values, dtype=np.float64).reshape(2, 2)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"non-finite matrix: {out.tolist()}")
    return out


def _upper_tail(threshold: float, mean: float, sd: float) -> float:
    """P(X > threshold) for X ~ N(mean, sd²)."""
    if sd <= 0.0:
        return 1.0 if mean > threshold else 0.0
    return 0.5 * math.erfc((threshold - mean) / (sd * math.sqrt(2.0)))


def profile_key(app: str, input_mb: float) -> str:
    """The θ profile a map's duration teaches [R]: a map's work grows with its input split (Table 3.2's θ is for
    one split size), so maps of one application with different split sizes (a SWIM job's last split, jobs of
    different sizes) get a profile per power-of-two split size, ``wordcount/128MB``; maps without input (Pi)
    one per application. One profile for all of them made every short split look like a faster node and every
    full one a slower node: 68 false alarms over a fault-free SWIM day in simulation."""
    if input_mb <= 0.0:
        return app
    if input_mb < 1.0:  # a split of under a megabyte is all overhead Ω: one profile for them all
        return f"{app}/<1MB"
    return f"{app}/{2.0 ** round(math.log2(input_mb)):g}MB"


# --- the node's belief over γ --------------------------------------------------------------------------------


@dataclass
class SlowdownBelief:
    """One node's Gaussian belief over γ = (γc, γd), in moment form (mean, covariance).

    Moment form because the random walk (Eq 6.7) adds to the covariance; the update is the same linear-Gaussian
    update as Eq 5.14/5.15's information form, written as a rank-1 Kalman step (the two are algebraically
    equal, :meth:`update`). ``nominal`` is the probed γ (P5-C), the prior mean.
    """

    mean: Vector
    covariance: Matrix
    nominal: Vector

    @classmethod
    def prior(cls, nominal: Sequence[float] | Vector, variance: Sequence[float] | Vector) -> SlowdownBelief:
        """The initial belief: mean = probed γ, independent components with the given variances (the thesis
        needs an informative prior, §5.3.4: "it takes a number of updates before the priors ... are overcome")."""
        nom = _vec(nominal)
        var = _vec(variance)
        if np.any(var <= 0.0):
            raise ValueError("prior variances must be positive")
        return cls(mean=nom.copy(), covariance=np.diag(var), nominal=nom.copy())

    @property
    def sd(self) -> Vector:
        """Marginal posterior standard deviations (sd_c, sd_d)."""
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))

    def predict(self, variance: float | Sequence[float] | Vector) -> None:
        """Random walk ``γ^{t+1} = γ^t + V`` (Eq 6.7): the mean stays, ``variance`` is added to each diagonal
        element of the covariance (V read as a variance per update step, digest I6-2). A scalar applies to both
        components; a pair gives each its own (e.g. V scaled by nominal²)."""
        v = np.broadcast_to(np.asarray(variance, dtype=np.float64), (2,))
        if np.any(v < 0.0):
            raise ValueError("process-noise variance must not be negative")
        self.covariance = self.covariance + np.diag(v)

    def update(self, theta: Sequence[float] | Vector, y: float, sigma: float) -> None:
        """Condition on one task: ``y = T − Ω ~ N(θ·γ, σ²)`` with θ the app's profile means (Eq 5.11, 5.14/5.15).

        Information form: ``Λ' = Λ + a aᵀ/σ²``, ``h' = h + y a/σ²`` with a = θ. Written as the equivalent
        Kalman step ``S = aᵀΣa + σ²``, ``K = Σa/S``, ``μ' = μ + K (y − aᵀμ)``, ``Σ' = Σ − K aᵀΣ``, which
        needs no inverse of a possibly ill-conditioned Λ."""
        a = _vec(theta)
        if sigma <= 0.0:
            raise ValueError("σ must be positive")
        sa = self.covariance @ a
        s = float(a @ sa) + sigma * sigma
        gain = sa / s
        self.mean = self.mean + gain * (y - float(a @ self.mean))
        cov = self.covariance - np.outer(gain, sa)
        self.covariance = 0.5 * (cov + cov.T)  # keep it exactly symmetric against rounding

    def predictive(self, theta: Sequence[float] | Vector, sigma: float) -> tuple[float, float]:
        """Mean and variance of y = T − Ω for a task with profile θ (Eq 5.11 with γ integrated out)."""
        a = _vec(theta)
        return float(a @ self.mean), float(a @ self.covariance @ a) + sigma * sigma

    def information_gain(self, features: Sequence[Sequence[float] | Vector], sigma: float) -> float:
        """Expected information gain (nats) of observing tasks with these θ vectors:
        ``½ ln(det Σ_prior / det Σ_post)`` with ``Σ_post⁻¹ = Σ_prior⁻¹ + Σ_k a_k a_kᵀ/σ²``.

        Under the linear-Gaussian model this closed form equals the expected KL divergence of Eq 6.17 (digest
        §6.1.3 P6-A step 3 [D]) and does not depend on the values that will be observed. Computed as
        ``½ ln det(I + Σ_prior A)`` with ``A = Σ a aᵀ/σ²``, which needs no inverse."""
        if sigma <= 0.0:
            raise ValueError("σ must be positive")
        info = np.zeros((2, 2))
        for f in features:
            a = _vec(f)
            info += np.outer(a, a) / (sigma * sigma)
        sign, logdet = np.linalg.slogdet(np.eye(2) + self.covariance @ info)
        return 0.5 * float(logdet) if sign > 0 else 0.0

    def p_above(self, factor: float) -> Vector:
        """P(γ_r > factor · nominal_r) for r = c, d, under the marginal posteriors."""
        sd = self.sd
        return np.array(
            [_upper_tail(factor * float(self.nominal[r]), float(self.mean[r]), float(sd[r])) for r in (0, 1)]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean.tolist(),
            "covariance": self.covariance.tolist(),
            "nominal": self.nominal.tolist(),
        }

    @classmethod
    def from_dict(cls, saved: Mapping[str, Any]) -> SlowdownBelief:
        return cls(
            mean=_vec(saved["mean"]), covariance=_mat(saved["covariance"]), nominal=_vec(saved["nominal"])
        )


# --- the app's belief over θ ---------------------------------------------------------------------------------


@dataclass
class AppBelief:
    """One app's Gaussian belief over θ = (θc, θd) in information form (precision Λ, h = Λμ), Eq 5.13-5.15.

    Starts uninformative (Λ = 0, §5.3.2: "the resource requirements ... are completely unknown"): the first
    observation gives a tube, the posterior becomes an ellipse (a mean exists) once the app ran on nodes with
    different γc/γd ratios. :meth:`known` seeds it with a known profile instead (e.g. Table 3.2)."""

    precision: Matrix = field(default_factory=lambda: np.zeros((2, 2)))
    h: Vector = field(default_factory=lambda: np.zeros(2))
    observations: int = 0

    @classmethod
    def known(cls, theta: Sequence[float] | Vector, sd: float = 1e-3) -> AppBelief:
        """A profile known in advance: mean θ, independent components with standard deviation ``sd``."""
        if sd <= 0.0:
            raise ValueError("sd must be positive")
        precision = np.eye(2) / (sd * sd)
        return cls(precision=precision, h=precision @ _vec(theta))

    def update(self, gamma: Sequence[float] | Vector, y: float, sigma: float) -> None:
        """Alg 5.3.1 step 2a for one task: feature a = γ̄ of the node that ran it, y = T − Ω of that node
        (Eq 5.14/5.15 in information form: ``Λ ← Λ + a aᵀ/σ²``, ``h ← h + y a/σ²``)."""
        a = _vec(gamma)
        if sigma <= 0.0:
            raise ValueError("σ must be positive")
        w = 1.0 / (sigma * sigma)
        self.precision = self.precision + w * np.outer(a, a)
        self.h = self.h + w * y * a
        self.observations += 1

    @property
    def proper(self) -> bool:
        """An ellipse, not a tube: ``4 a20 a02 − a11² > 0`` (the denominator of Eq 5.14), i.e. det Λ > 0."""
        scale = float(self.precision[0, 0] * self.precision[1, 1])
        return scale > 0.0 and float(np.linalg.det(self.precision)) > _SINGULAR * scale

    @property
    def mean(self) -> Vector | None:
        """μθ = Λ⁻¹h (Eq 5.14); None while the posterior is a tube."""
        return np.asarray(np.linalg.solve(self.precision, self.h), dtype=np.float64) if self.proper else None

    @property
    def covariance(self) -> Matrix | None:
        """Σθ = Λ⁻¹ (the true covariance; Eq 5.15 prints half the precision); None while a tube."""
        return np.asarray(np.linalg.inv(self.precision), dtype=np.float64) if self.proper else None

    def to_dict(self) -> dict[str, Any]:
        return {"precision": self.precision.tolist(), "h": self.h.tolist(), "observations": self.observations}

    @classmethod
    def from_dict(cls, saved: Mapping[str, Any]) -> AppBelief:
        return cls(
            precision=_mat(saved["precision"]), h=_vec(saved["h"]), observations=int(saved["observations"])
        )
