"""The soft-fault monitor's parameters and its published verdict per node (seed 002 Eq 6.8; readings [R])."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mrsched.health.beliefs import Vector

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
