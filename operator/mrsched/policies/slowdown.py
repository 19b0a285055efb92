"""Soft-fault detection by continuous monitoring of per-resource slowdown (seed 002, Gupta thesis §5.3, "Method B").

A map task of application i takes ``T = θc γc + θd γd + Ω`` on node j (Eq 5.9/5.10), where θ = (θc, θd) is the
app's work in reference seconds and γ = (γc, γd) = 1/κ the node's *slowdown* (a larger γ is a slower
resource). Observed times are Gaussian around it (Eq 5.11/5.12, with the exponent's minus sign restored,
digest I5-2). The joint posterior over (γ, θ) is approximated by a product of two bivariate Gaussians, one
per node and one per app, re-estimated alternately (Alg 5.3.1 MONITOR_CLUSTER), each update using the *means*
of the other factor as fixed coefficients:

* θ of app i (:class:`AppBelief`): feature a = γ̄ of the node that ran the task, target y = T − Ω of that node
  (digest I5-3: Ω^k of the node of each observation). A new app starts uninformative (zero precision): one
  observation gives a tube, observations on nodes with different γc/γd ratios an ellipse (§5.3.2).
* γ of node j (:class:`SlowdownBelief`): feature a = θ̄ of the app, same target. Its prior is the node's
  probed γ (P5-C, Eq 5.16-5.18, here :mod:`mrsched.core.probes` with γ = 1/κ); the posterior is carried
  forward as the next prior (Alg 5.3.1 step 2c).

Both updates are the linear-Gaussian (conic, information-form) update of Eq 5.14/5.15: ``Λ ← Λ + a aᵀ/σ²``,
``h ← h + y a/σ²`` (the true precision; Eq 5.15 prints half of it, the same factor-2 convention as Eq 3.22).

Ch.5 has no forgetting, yet its γ estimates fall again when the load ends, so old evidence must be discounted:
before each γ update the belief goes through chapter 6's random walk ``Π^{t+1} = Π^t + V_m`` (Eq 6.7/6.8),
``V_low`` normally and ``V_high`` when a change detector fires (m = 1). :class:`SlowdownMonitor` runs
Alg 5.3.1 incrementally, one finished map at a time, and turns the γ posterior into a verdict per node.

Readings where the thesis is silent ([R], digest gupta-thesis.md §5.1.3 and I6-2) are the documented fields of
:class:`MonitorConfig`. Pure and synchronous: no Kubernetes here (the edge is :mod:`mrsched.operator.health`).
"""

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


# --- configuration ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonitorConfig:
    """The monitor's parameters. The thesis fixes only V_low and V_high (Eq 6.8); the rest are readings [R].

    Units. γ is relative to the reference machine (γ = 1 there) and nodes differ by 10× (Table 5.1: 0.1 vs 1),
    so with ``relative_units`` (default) ``prior_var``, ``v_low`` and ``v_high`` are multiplied by nominal_r²
    per component: V_low = 0.001 is then a random-walk step of √0.001 ≈ 3 % of the node's own nominal per
    task, and V_high = 1 a step as large as the nominal itself (old evidence negligible, as Eq 6.8 intends).
    Read as absolute variances in γ units (``relative_units=False``), V_high = 1 would be 100× a fast node's
    γc², and V_low a step of ±0.03, a third of it.
    """

    #: Prior variance of each γ component around the probed nominal (thesis silent; informative, §5.3.4).
    #: 0.04 × nominal²: a prior sd of 20 % of nominal, the order of the probes' own error (κ to ~7 % with
    #: 4 runs, plus load), so a few tasks are needed to overcome it.
    prior_var: float = 0.04
    #: Random-walk variance per γ update when no change is detected (Eq 6.8, m = 0).
    v_low: float = 0.001
    #: Random-walk variance per γ update when the change detector fires (Eq 6.8, m = 1).
    v_high: float = 1.0
    #: Scale prior_var, v_low, v_high by nominal_r² (see the class docstring).
    relative_units: bool = True
    #: Change detector for m^t = 1 (digest I6-2 [R]): the standardized predictive residual
    #: ``|y − θ̄·γ̄| / sqrt(σ² + θ̄ᵀ(Σγ + V_low)θ̄ + γ̄ᵀΣθγ̄)`` above ``detector_k`` on ``detector_n`` of the node's
    #: last ``detector_window`` γ updates. Not "n consecutive": a change in one resource shows only in the tasks
    #: of apps that use it, and the node's other apps' tasks would reset a run. The γ̄ᵀΣθγ̄ term (the app's own
    #: uncertainty) keeps a barely learned app from firing it. Two-sided, since a recovery is a regime change
    #: too. Under the model one |z| > 3 has probability 0.0027, 2 of 4 about 4·10⁻⁵. Firing clears the window.
    detector_k: float = 3.0
    detector_n: int = 2
    detector_window: int = 4
    #: Decision rule [R] (the thesis says only "a marked increase"): Degraded in r when
    #: ``P(γ_r > (1 + delta) · nominal_r) ≥ p_degraded`` ...
    delta: float = 0.5
    p_degraded: float = 0.99
    #: ... and cleared (hysteresis) once that probability falls below ``p_clear``.
    p_clear: float = 0.5
    #: γ updates of the node before any verdict (the prior alone never condemns a node).
    min_updates: int = 5
    #: An app's θ̄ is used as the γ update's feature only once its posterior is an ellipse with every component's
    #: sd at most this fraction of |θ̄| (a barely constrained θ̄ would blame the wrong resource).
    theta_max_rel_sd: float = 0.5
    #: Floor of σ (s): a noise-free probe would make one observation's weight 1/σ² infinite.
    min_sigma_s: float = 0.01
    #: Cap of the V_low drift [R]: a V_low step never takes a component's variance above the prior's. A node
    #: that runs one application for a long time observes γ along one direction only (θ̄ of that app); without
    #: the cap the other direction's variance grows without bound and, through the posterior's correlation, its
    #: mean wanders (seen in simulation: γc negative and γd at 5× nominal on a healthy node after 300 J_IO maps,
    #: a false alarm). V_high steps (m = 1) are not capped: forgetting is their purpose.
    cap_drift: bool = True
    #: Task noise [R] (σ_j is unstated, digest §5.1.3): ``σ² = σ_probe² + ρ_j² ŷ²`` with ŷ = θ̄·γ̄ the predicted
    #: work. Production maps vary with what shares the node (two J_IO maps on one disk take twice as long as
    #: one), far beyond a probe's σ, and in proportion to their length; with the probe's σ alone every such
    #: swing fired the change detector and V_high moved the belief to it (false alarms in simulation). ρ_j
    #: starts at ``relative_sd`` and is learned per node as an exponentially weighted mean of the squared
    #: relative residuals (y − ŷ)/ŷ of the tasks the detector did not flag (weight ``relative_sd_rate``), so a
    #: fault's outliers do not widen it.
    relative_sd: float = 0.1
    relative_sd_rate: float = 0.05
    #: Floor of the γ means as a fraction of nominal [R]: a slowdown is positive, and a node cannot have become
    #: much faster than its probes; the projection keeps the θ updates' features physical.
    gamma_floor: float = 0.1
    #: Peer check [R]: γ absorbs load as well as faults (digest §5.1.3 [D]: the thesis's "nominal" curves rise
    #: while its jobs run). A fault is one node's; a load burst slows every node of the same hardware at once.
    #: So a node is Degraded in r only if its rise γ̄_r/nominal_r is also at least (1 + δ) times the median rise
    #: of its peers (nodes whose nominal γ is within ``peer_tolerance`` of its own in both resources; at least
    #: one), and stays so while it is at least (1 + δ/2) times. Without peers the check is skipped. Seen in
    #: simulation: 8 nodes of one class flagged together during a busy hour of a fault-free SWIM day.
    peer_check: bool = True
    peer_tolerance: float = 0.25
    #: Consecutive γ updates that must find a resource newly degraded before the verdict says so [R]: a
    #: load burst reaches a node's peers a few tasks later than the node itself, and the peer check can only
    #: see it once it has (a fault-free SWIM day's busy hour flagged the first nodes to see it).
    confirm_updates: int = 3
    #: Multiplier of the probed σ (the thesis leaves σ_j unstated). The probes' σ is the spread of long probe
    #: runs; production maps are often shorter, with less absolute noise, so a value below 1 can be justified
    #: per cluster. 1 = the probed σ as given.
    sigma_scale: float = 1.0
    #: Apps whose profile θ = (θc, θd) (reference seconds) is known in advance (e.g. Table 3.2), seeded with
    #: sd ``known_sd`` instead of the uninformative prior.
    known_profiles: Mapping[str, Sequence[float]] = field(default_factory=dict)
    known_sd: float = 1e-3

    def __post_init__(self) -> None:
        if (
            min(self.prior_var, self.v_high, self.min_sigma_s, self.known_sd, self.sigma_scale) <= 0.0
            or self.v_low < 0.0
        ):
            raise ValueError(
                "prior_var, v_high, min_sigma_s, known_sd and sigma_scale must be positive, v_low not negative"
            )
        if self.v_high < self.v_low:
            raise ValueError("v_high must be at least v_low")
        if (
            self.relative_sd < 0.0
            or not 0.0 <= self.relative_sd_rate <= 1.0
            or not 0.0 <= self.gamma_floor < 1.0
        ):
            raise ValueError(
                "relative_sd ≥ 0, relative_sd_rate in [0, 1] and gamma_floor in [0, 1) are required"
            )
        if self.detector_k <= 0.0 or not 1 <= self.detector_n <= self.detector_window:
            raise ValueError("detector_k must be positive and 1 ≤ detector_n ≤ detector_window")
        if self.delta < 0.0:
            raise ValueError("delta must not be negative")
        if not 0.0 < self.p_clear <= self.p_degraded < 1.0:
            raise ValueError("need 0 < p_clear ≤ p_degraded < 1")
        if self.min_updates < 0 or self.theta_max_rel_sd <= 0.0:
            raise ValueError("min_updates must not be negative and theta_max_rel_sd must be positive")
        for app, theta in self.known_profiles.items():
            if len(theta) != 2:
                raise ValueError(f"known_profiles[{app!r}] must be (θc, θd)")

    def scale(self, nominal: Vector) -> Vector:
        """Per-component multiplier of the variances: nominal² or 1."""
        return nominal * nominal if self.relative_units else np.ones(2)


# --- the verdict -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeHealth:
    """A node's belief and verdict, as published (NodeProfile ``status.health``, Events, gauges)."""

    node: str
    gamma_c: float  # posterior means
    gamma_d: float
    sd_c: float  # posterior standard deviations
    sd_d: float
    nominal_c: float  # from probes
    nominal_d: float
    p_degraded_c: float  # P(γ_r > (1+δ) nominal_r)
    p_degraded_d: float
    degraded: tuple[str, ...]  # () healthy, ("cpu",), ("disk",) or both, in order of evidence
    observations: int
    since: float | None  # time the current verdict began
    evidence: str  # one human sentence


@dataclass
class _Node:
    belief: SlowdownBelief
    omega_s: float
    sigma_s: float
    observations: int = 0  # tasks observed on the node
    updates: int = 0  # γ updates applied (tasks whose app had a usable θ̄)
    recent: list[bool] = field(default_factory=list)  # detector exceedances of the last updates, newest last
    group: str = ""  # the node's hardware class, when the caller knows it (its peers share it)
    pending: int = (
        0  # consecutive γ updates that found a resource newly degraded (MonitorConfig.confirm_updates)
    )
    changes: int = 0  # times the detector fired (m = 1)
    degraded: tuple[str, ...] = ()
    since: float | None = None
    last_seen: float | None = None
    rel_var: float = 0.01  # ρ_j², the node's relative task-noise variance (MonitorConfig.relative_sd)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.belief.to_dict(),
            "rel_var": self.rel_var,
            "omega_s": self.omega_s,
            "sigma_s": self.sigma_s,
            "observations": self.observations,
            "updates": self.updates,
            "recent": list(self.recent),
            "changes": self.changes,
            "degraded": list(self.degraded),
            "since": self.since,
            "last_seen": self.last_seen,
        }

    @classmethod
    def from_dict(cls, saved: Mapping[str, Any]) -> _Node:
        degraded = tuple(str(r) for r in saved["degraded"])
        if any(r not in RESOURCES for r in degraded):
            raise ValueError(f"unknown resources in {degraded}")
        since, last = saved.get("since"), saved.get("last_seen")
        return cls(
            belief=SlowdownBelief.from_dict(saved),
            omega_s=float(saved["omega_s"]),
            sigma_s=float(saved["sigma_s"]),
            rel_var=float(saved.get("rel_var", 0.01)),
            observations=int(saved["observations"]),
            updates=int(saved["updates"]),
            recent=[bool(x) for x in saved.get("recent", [])],
            changes=int(saved.get("changes", 0)),
            degraded=degraded,
            since=None if since is None else float(since),
            last_seen=None if last is None else float(last),
        )


class SlowdownMonitor:
    """Alg 5.3.1 MONITOR_CLUSTER, run incrementally: one :meth:`observe` per finished map task."""

    def __init__(self, config: MonitorConfig | None = None) -> None:
        self.config = config or MonitorConfig()
        self._nodes: dict[str, _Node] = {}
        self._apps: dict[str, AppBelief] = {}

    # beliefs ------------------------------------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """The nodes observed so far, sorted."""
        return sorted(self._nodes)

    def apps(self) -> list[str]:
        return sorted(self._apps)

    def belief(self, node: str) -> SlowdownBelief | None:
        entry = self._nodes.get(node)
        return None if entry is None else entry.belief

    def app_belief(self, app: str) -> AppBelief:
        """The app's θ belief, created on first use (uninformative, or from ``known_profiles``)."""
        found = self._apps.get(app)
        if found is None:
            known = self.config.known_profiles.get(app)
            found = AppBelief() if known is None else AppBelief.known(known, self.config.known_sd)
            self._apps[app] = found
        return found

    def set_profile(self, app: str, theta: Sequence[float], sd: float | None = None) -> None:
        """Seed (or overwrite) an app's θ with a known profile."""
        self._apps[app] = AppBelief.known(theta, self.config.known_sd if sd is None else sd)

    def usable_theta(self, app: str) -> Vector | None:
        """θ̄ of the app as the γ update's feature, or None while it is not learned well enough: a tube, or an
        ellipse with a component's sd above ``theta_max_rel_sd``·|θ̄|. Negative components (a requirement is
        never negative; a noisy early ellipse can put one below 0) are clipped to 0 [R]."""
        belief = self._apps.get(app)
        if belief is None:
            return None
        mean, cov = belief.mean, belief.covariance
        if mean is None or cov is None:
            return None
        norm = float(np.linalg.norm(mean))
        sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
        if norm <= 0.0 or float(sd.max()) > self.config.theta_max_rel_sd * norm:
            return None
        return np.maximum(mean, 0.0)

    # observations -------------------------------------------------------------------------------------------

    def _node(self, node: str, nominal: Vector, omega_s: float, sigma_s: float) -> _Node:
        entry = self._nodes.get(node)
        if entry is not None and np.allclose(entry.belief.nominal, nominal, rtol=1e-9, atol=0.0):
            entry.omega_s, entry.sigma_s = omega_s, sigma_s
            return entry
        # New node, or re-probed with a different nominal: the probe is a new baseline (P5-C), start over.
        cfg = self.config
        fresh = _Node(
            SlowdownBelief.prior(nominal, cfg.prior_var * cfg.scale(nominal)),
            omega_s,
            sigma_s,
            rel_var=cfg.relative_sd**2,
        )
        self._nodes[node] = fresh
        return fresh

    def observe(
        self,
        node: str,
        app: str,
        duration_s: float,
        now: float,
        *,
        gamma_c: float,
        gamma_d: float,
        omega_s: float,
        sigma_s: float,
        group: str = "",
    ) -> tuple[NodeHealth, bool]:
        """One finished map of ``app`` on ``node`` that took ``duration_s``, at time ``now``, given the node's
        probed nominal γc, γd (= 1/κ), Ω and σ, and its hardware class ``group`` if known (its peers, for the
        peer check). Returns the node's health and whether its verdict changed.

        Alg 5.3.1 for this task: (2a) θ of the app ← update with feature γ̄ of the node, y = T − Ω (Ω of this
        node, I5-3); (2b) γ of the node ← random walk (V_low, or V_high if the change detector fires), then
        update with feature θ̄ of the app and the same y; (2c) the posterior is the next prior. Step 2b waits
        until the app's θ̄ is usable (:meth:`usable_theta`); the task still counts as an observation."""
        if not (gamma_c > 0.0 and gamma_d > 0.0) or not math.isfinite(duration_s):
            raise ValueError("nominal γ must be positive and the duration finite")
        cfg = self.config
        sigma = max(float(sigma_s) * cfg.sigma_scale, cfg.min_sigma_s)
        entry = self._node(node, np.array([gamma_c, gamma_d], dtype=np.float64), float(omega_s), sigma)
        belief = entry.belief
        entry.group = group
        y = float(duration_s) - float(omega_s)  # subtract Ω of the node that ran the task (Eq 5.10, I5-3)

        prior_theta = self.usable_theta(app)
        expected = (
            float(prior_theta @ belief.mean) if prior_theta is not None else abs(y)
        )  # ŷ, the task's predicted work
        probe_sigma = sigma
        sigma = math.sqrt(sigma * sigma + entry.rel_var * expected * expected)

        # 2a: the app's θ, with this node's current γ means as coefficients; not from a node judged degraded
        #     [R]: its slowdown would be learned into the app's profile and blamed on every healthy node.
        app_belief = self.app_belief(app)
        if not entry.degraded:
            app_belief.update(belief.mean, y, sigma)

        # 2b: the node's γ, with the app's θ means (after 2a) as coefficients.
        theta = self.usable_theta(app)
        if theta is not None:
            scale = cfg.scale(belief.nominal)
            predicted, variance = belief.predictive(theta, sigma)
            variance += float(theta @ (cfg.v_low * scale * theta))  # after the V_low step
            theta_cov = app_belief.covariance
            if theta_cov is not None:
                variance += float(belief.mean @ theta_cov @ belief.mean)
            z = abs(y - predicted) / math.sqrt(variance)
            entry.recent = [*entry.recent, z > cfg.detector_k][-cfg.detector_window :]
            if z <= cfg.detector_k and expected > probe_sigma:  # an inlier teaches the node's ρ_j
                relative = (y - expected) / expected
                entry.rel_var += cfg.relative_sd_rate * (relative * relative - entry.rel_var)
            change = sum(entry.recent) >= cfg.detector_n
            if change:  # m = 1: forget old evidence (Eq 6.8) and start counting afresh
                entry.recent = []
                entry.changes += 1
            step = (cfg.v_high if change else cfg.v_low) * scale
            if cfg.cap_drift and not change:
                step = np.clip(cfg.prior_var * scale - np.diag(belief.covariance), 0.0, step)
            belief.predict(step)
            belief.update(theta, y, sigma)
            belief.mean = np.maximum(belief.mean, cfg.gamma_floor * belief.nominal)
            entry.updates += 1
        entry.observations += 1
        entry.last_seen = now

        before = entry.degraded
        found = self._verdict(entry)
        # A resource newly found degraded is confirmed only after ``confirm_updates`` consecutive γ updates find
        # it so; clearing is immediate.
        new = set(found) - set(before)
        entry.pending = entry.pending + 1 if new and theta is not None else (entry.pending if new else 0)
        if new and entry.pending < self.config.confirm_updates:
            found = tuple(r for r in found if r in before)
        elif new:
            entry.pending = 0
        entry.degraded = found
        changed = entry.degraded != before
        if changed:
            entry.since = now
        return self._health(node, entry), changed

    # the decision -------------------------------------------------------------------------------------------

    def _verdict(self, entry: _Node) -> tuple[str, ...]:
        """Degraded in r when P(γ_r > (1+δ)·nominal_r) ≥ p_degraded (after ``min_updates`` updates); a resource
        already Degraded stays so until that probability falls below ``p_clear`` (hysteresis). Ordered by
        evidence: the resource whose posterior mean rose most relative to its nominal first."""
        cfg = self.config
        if entry.updates < cfg.min_updates:
            return ()
        p = entry.belief.p_above(1.0 + cfg.delta)
        found = []
        for r, resource in enumerate(RESOURCES):
            threshold = cfg.p_clear if resource in entry.degraded else cfg.p_degraded
            if p[r] >= threshold:
                found.append(resource)
        rise = entry.belief.mean / entry.belief.nominal
        peers = self._peer_rise(entry) if cfg.peer_check and found else None
        if peers is not None:
            found = [
                res
                for res in found
                if rise[RESOURCES.index(res)]
                >= (1.0 + (cfg.delta / 2 if res in entry.degraded else cfg.delta))
                * peers[RESOURCES.index(res)]
            ]
        return tuple(sorted(found, key=lambda res: -float(rise[RESOURCES.index(res)])))

    def _peer_rise(self, entry: _Node) -> Vector | None:
        """The median rise γ̄/nominal, per resource, of the node's peers (its hardware class when known, else
        nodes whose nominal γ is within ``peer_tolerance`` of its own; observed enough to judge), floored at 1;
        None without peers. Nominal γ alone cannot tell a 2-core node from a 4-core one of similar speed."""
        tolerance = self.config.peer_tolerance

        def peer(other: _Node) -> bool:
            if entry.group and other.group:
                return other.group == entry.group
            return bool(np.all(np.abs(other.belief.nominal / entry.belief.nominal - 1.0) <= tolerance))

        rises = [
            other.belief.mean / other.belief.nominal
            for other in self._nodes.values()
            if other is not entry and other.updates >= self.config.min_updates and peer(other)
        ]
        if not rises:
            return None
        return np.maximum(np.median(np.array(rises), axis=0), 1.0)

    def slowdown(self, node: str) -> tuple[float, float] | None:
        """What a policy should believe of a degraded node (``Node.slowdown``): for each resource it is judged
        degraded in, the posterior mean γ̄_r over its nominal; 1.0 for the others. None while it is healthy
        (or never observed): a healthy node's noise never reaches placement."""
        entry = self._nodes.get(node)
        if entry is None or not entry.degraded:
            return None
        rise = entry.belief.mean / entry.belief.nominal
        c, d = (
            max(1.0, float(rise[r])) if resource in entry.degraded else 1.0
            for r, resource in enumerate(RESOURCES)
        )
        return (c, d)

    def health(self, node: str) -> NodeHealth | None:
        """The node's current belief and verdict; None for a node never observed."""
        entry = self._nodes.get(node)
        return None if entry is None else self._health(node, entry)

    def _health(self, node: str, entry: _Node) -> NodeHealth:
        belief = entry.belief
        sd = belief.sd
        p = belief.p_above(1.0 + self.config.delta)
        return NodeHealth(
            node=node,
            gamma_c=float(belief.mean[0]),
            gamma_d=float(belief.mean[1]),
            sd_c=float(sd[0]),
            sd_d=float(sd[1]),
            nominal_c=float(belief.nominal[0]),
            nominal_d=float(belief.nominal[1]),
            p_degraded_c=float(p[0]),
            p_degraded_d=float(p[1]),
            degraded=entry.degraded,
            observations=entry.observations,
            since=entry.since,
            evidence=self._evidence(entry, p),
        )

    def _evidence(self, entry: _Node, p: Vector) -> str:
        """One sentence for people: the degraded resources' γ against nominal and their probability, or why
        the node is healthy (or not judged yet)."""
        cfg = self.config
        belief = entry.belief
        sd = belief.sd
        factor = 1.0 + cfg.delta

        def part(r: int) -> str:
            mean, nominal = float(belief.mean[r]), float(belief.nominal[r])
            spread = float(sd[r])
            return f"{_SYMBOL[RESOURCES[r]]} {mean:.3g} ± {spread:.2g} vs nominal {nominal:.3g} ({mean / nominal:.1f}×)"

        tasks = (
            f"over {entry.updates} tasks"
            if entry.updates == entry.observations
            else (f"over {entry.updates} usable of {entry.observations} tasks")
        )
        if entry.degraded:
            parts = [
                f"{part(RESOURCES.index(res))}; P({_SYMBOL[res]} > {factor:g}× nominal) = "
                f"{float(p[RESOURCES.index(res)]):.3f}"
                for res in entry.degraded
            ]
            return f"{'; '.join(parts)} {tasks}"
        if entry.updates < cfg.min_updates:
            return (
                f"{part(0)}, {part(1)} {tasks}; no verdict before {cfg.min_updates} tasks of apps with a learned "
                "profile"
            )
        return (
            f"{part(0)}, {part(1)} {tasks}; healthy: P(> {factor:g}× nominal) = {float(p[0]):.3f} (cpu), "
            f"{float(p[1]):.3f} (disk)"
        )

    # persistence --------------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The learned state, JSON-serialisable: every node's γ belief and verdict, every app's θ belief."""
        return {
            "version": STATE_VERSION,
            "nodes": {node: entry.to_dict() for node, entry in self._nodes.items()},
            "apps": {app: belief.to_dict() for app, belief in self._apps.items()},
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state`'s output. All or nothing: a malformed state raises and leaves the monitor as
        it was."""
        if int(state.get("version", STATE_VERSION)) != STATE_VERSION:
            raise ValueError(f"unsupported monitor state version {state.get('version')!r}")
        nodes_in, apps_in = state.get("nodes", {}), state.get("apps", {})
        if not isinstance(nodes_in, Mapping) or not isinstance(apps_in, Mapping):
            raise ValueError("monitor state: 'nodes' and 'apps' must be mappings")
        nodes = {str(node): _Node.from_dict(saved) for node, saved in nodes_in.items()}
        apps = {str(app): AppBelief.from_dict(saved) for app, saved in apps_in.items()}
        self._nodes, self._apps = nodes, apps
