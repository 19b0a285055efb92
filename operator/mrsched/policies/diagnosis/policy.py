"""Pervasive diagnosis: DARA with a belief over each node's state (seed 002, Gupta thesis, chapter 6).

Chapter 6's scheduler (the thesis calls it "ThroughputScheduler" again; it is chapter 4's DARA objective, not
chapter 3's algorithm, digest I6-1) keeps a Gaussian belief over every machine's state Π^i and places
containers to maximise the throughput expected under that belief, plus β times the information the placement
would yield about the state:

* State (§6.1.2 [R]): Π^i = node i's coefficients of Eq 4.12, held here as its slowdown factors
  s = (s_c, s_d) over its class's offline α: α_node = (s_c α_c, s_d α_d). Relative units make the thesis's
  V_low = 0.001 and V_high = 1 (Eq 6.8) meaningful: a prior of s = (1, 1) with variance ``priorVar``.
* Transition (Eq 6.7/6.8): before each update the belief takes a random-walk step, V_low added to each
  variance normally, V_high when a change detector fires (m = 1; digest I6-2 [R]: 2 of the last 4 residuals
  beyond 3σ). The V_low drift stops at the prior variance (as :mod:`mrsched.health`: a node that
  runs one application observes s along one direction only).
* Observation: each finished map of application j on the node, with the time-averaged loads L_c, L_d of its
  life (DARA's own bookkeeping), is linear-Gaussian in s (Eq 4.12 is linear in α):
  ``t − λ_j = s_c (c_j α_c L_c²) + s_d (d_j α_d L_d²) + ε``, ε ~ N(0, σ_j²), σ_j = ``sigmaScale`` · λ_j [R].
  The update is the rank-1 Kalman step (:func:`kalman_update`), the moment form of the thesis's closed form.
* Policy (Eq 6.5, 6.9, 6.16; P6-A): per node, x* = argmax over DARA's feasible container vectors of
  ``E_belief[τ̄(x)] + β · τ̄_best · EIG(x)``. E[τ̄] (Eq 6.2 = 4.9 under the belief, Eq 6.5) is a Monte Carlo
  mean over ``samples`` draws of s. EIG(x) is the expected information gain of one completion of each of the
  x containers, ``½ ln det(I + Σ Σ_j x_j a_j a_jᵀ / σ_j²)``: for a linear-Gaussian model this closed form is
  the expected KL divergence of Eq 6.17 exactly, so it replaces the thesis's sampler (digest §6.1.3 [D]). The
  thesis leaves β's units open (to be learned); here [R] β multiplies τ̄_best, the node's best expected
  throughput, so that β = 1 values one nat of information at the node's whole expected throughput. The
  experiments use β = 0 and β = 1.
* x* is capped at the offline model's x* per application (``capAtPrior``, [R]): a belief can take containers
  away from a node that slowed down, never add more than the node was trained for; Eq 4.12's quadratic load
  term extrapolates badly past the loads it was fitted at (uncapped, beliefs learned around 12-20 Pi
  containers asked for 17-26 and made Table 4.3's workloads 10-50 % slower in simulation).
* Recomputed only when the state is seen to change (§6.1.1): the detector fires, or a node's mean moved by
  more than ``recomputeShift`` since its x* was computed; and when an application arrives or leaves (DARA).
  [Ours] A recomputed x* is evaluated when a heartbeat first reads it, from the inputs and the
  Monte Carlo draws taken when it was due: the same x* and random stream, without the cost of those
  overwritten unread (:meth:`Diagnosis._defer`).
* ``exhaustiveLimit`` [ours] is DARA's: past that many mixes the argmax (the prior's and the
  belief's) is DARA's local search, over the same objective (the EIG bonus then scaled by the expected
  throughput's local maximum, the grid's maximum being unknown). A class's nodes share the prior's search and their
  grid's load terms within one recomputation.
* "Without Pervasive Diagnosis" (§6.2.2) is ``freeze: true``: the belief stays at its prior and x* is DARA's
  with the class α's. β = 0 with PD still updates beliefs: the two are different baselines (digest §6.3).

Everything else (profiling map, λ_j, dispatch toward x* with Alg 4.3.3/4.3.4, reduces by Fair) is DARA's.

**On Kubernetes** [ours]: as DARA's, the mix chosen under the belief keeps to the node's
cores by each application's CPU request as well as to its memory (``feasible_vectors``): a degraded node's
belief lowers its mix below what its requests allow. ``shortestFirst`` and ``reuseProfiles`` are DARA's.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
from pydantic import Field

from mrsched.core.model import ClusterSnapshot, Explanation, Node, Placement, Task, TaskOutcome
from mrsched.core.policy import register
from mrsched.policies.dara import Dara, DaraConfig
from mrsched.policies.dara.model import Observation, Vector, load_ratios, node_loads
from mrsched.policies.dara.search import (
    Assignment,
    feasible_vectors,
    local_search,
    search_bounds,
    too_many_to_enumerate,
)
from mrsched.policies.diagnosis.model import (
    S_FLOOR,
    Deferred,
    Matrix,
    Mixes,
    NodeBelief,
    expected_throughputs,
    grid_information_gains,
    information_gain,
    kalman_update,
    predict,
    throughput_terms,
)

__all__ = [  # the model's functions, re-exported where the policy's readers look for them
    "Diagnosis",
    "DiagnosisConfig",
    "NodeBelief",
    "expected_throughputs",
    "grid_information_gains",
    "information_gain",
    "kalman_update",
    "predict",
]


class DiagnosisConfig(DaraConfig):
    beta: float = Field(0.0, ge=0)
    #: "Without Pervasive Diagnosis": the belief stays at its prior (§6.2.2, digest §6.3 item 2).
    freeze: bool = False
    prior_var: float = Field(0.04, alias="priorVar", gt=0)
    v_low: float = Field(0.001, alias="vLow", ge=0)
    v_high: float = Field(1.0, alias="vHigh", gt=0)
    sigma_scale: float = Field(0.1, alias="sigmaScale", gt=0)
    detector_k: float = Field(3.0, alias="detectorK", gt=0)
    detector_n: int = Field(2, alias="detectorN", ge=1)
    detector_window: int = Field(4, alias="detectorWindow", ge=1)
    samples: int = Field(32, ge=1, le=1024)
    recompute_shift: float = Field(0.1, alias="recomputeShift", gt=0)
    #: x*_j never above the offline model's (the class α's) x*_j on the node [R]: a belief says a node got
    #: slower (fewer containers), never that it can take more than it was trained for, since Eq 4.12's
    #: quadratic load term extrapolates badly past the loads it was fitted at (measured on Table 4.3's
    #: workloads: beliefs fitted around 12-20 Pi containers asked for 17-26 and lengthened makespans 10-50 %).
    cap_at_prior: bool = Field(True, alias="capAtPrior")


@register
class Diagnosis(Dara):
    name = "diagnosis"
    Config = DiagnosisConfig

    @property
    def cfg(self) -> DiagnosisConfig:  # DARA's options and its own (build_policy validated them)
        return cast(DiagnosisConfig, self.config)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.beliefs: dict[str, NodeBelief] = {}
        self._rng = np.random.default_rng(self.seed)
        self._changed: set[str] = set()  # nodes whose belief changed since their x* was computed
        self._computed: dict[str, tuple[Any, Deferred]] = {}  # node -> (inputs, its x*)
        #: nodes whose x* is deferred (_defer) until read: (x*, the recomputation it belongs to)
        self._pending: dict[str, tuple[Deferred, Mixes]] = {}

    def belief(self, node: str) -> NodeBelief:
        found = self.beliefs.get(node)
        if found is None:
            found = self.beliefs[node] = NodeBelief(np.ones(2), np.eye(2) * self.cfg.prior_var)
        return found

    # --- state estimation (§6.1.2) -------------------------------------------------------------------

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        last = self.observations[-1] if self.observations else None
        super().on_task_finished(outcome)
        if self.cfg.freeze or not self.observations or self.observations[-1] is last:
            return
        self.observe(outcome.node, self.observations[-1])

    def observe(self, node: str, obs: Observation) -> bool:
        """One map's duration on ``node`` (DARA's observation, with its loads); returns whether it was used."""
        cls = obs.node_class
        alpha = self.fit.alpha.get(cls) or self.offline.get(cls)
        lam = self.fit.lam.get(obs.app)
        if alpha is None or lam is None or lam <= 0 or any(a not in self.profiles for a in obs.mix):
            return False
        apps = list(obs.mix)
        c = np.array([self.profiles[a].cpu_s for a in apps])
        d = np.array([self.profiles[a].io_mb for a in apps])
        rc, rd = load_ratios(c, d)
        lc, ld = node_loads(np.array([obs.mix[a] for a in apps]), rc, rd)
        p = self.profiles[obs.app]
        a = np.array([p.cpu_s * alpha[0] * lc**2, p.io_mb * alpha[1] * ld**2])
        y = obs.duration_s - lam
        noise_var = max(self.cfg.sigma_scale * lam, 1e-3) ** 2
        b = self.belief(node)
        cfg = self.cfg
        z = abs(y - float(a @ b.mean)) / math.sqrt(float(a @ b.cov @ a) + noise_var)
        b.recent = [*b.recent, z > cfg.detector_k][-cfg.detector_window :]
        change = sum(b.recent) >= cfg.detector_n
        if change:  # m = 1 (Eq 6.8): forget, and recompute this node's x*
            b.recent = []
            b.detections += 1
        b.cov = predict(b.cov, cfg.v_high if change else cfg.v_low, None if change else cfg.prior_var)
        b.mean, b.cov = kalman_update(b.mean, b.cov, a, y, noise_var)
        b.mean = np.maximum(b.mean, S_FLOOR)
        b.observations += 1
        if change or self._moved(b):
            self._changed.add(node)
        return True

    # --- policy search (§6.1.3) ----------------------------------------------------------------------

    @property
    def optimal(self) -> dict[str, dict[str, int]]:
        """x* per node and application, every deferred node's evaluated first."""
        for node in list(self._pending):
            self._x_star(node)
        return self._optimal

    @optimal.setter
    def optimal(self, value: dict[str, dict[str, int]]) -> None:
        self._optimal, self._pending = value, {}

    def _moved(self, b: NodeBelief) -> bool:
        """Whether the belief's mean moved by more than ``recomputeShift`` in either factor since x* was computed
        (or x* never was)."""
        if b.computed_at is None:
            return True
        shift = self.cfg.recompute_shift
        return bool(abs(b.mean[0] - b.computed_at[0]) > shift or abs(b.mean[1] - b.computed_at[1]) > shift)

    def _idle(self, snapshot: ClusterSnapshot, node: str) -> bool:
        """DARA's, reading x* (perhaps deferred) only for a node that runs no map."""
        return snapshot.running_on(node, "map") == 0 and sum(self._x_star(node).values()) == 0

    def _x_star(self, node: str) -> dict[str, int]:
        """x* of ``node``, evaluated now if it was deferred (:meth:`_defer`)."""
        pending = self._pending.pop(node, None)
        if pending is not None:
            deferred, mixes = pending
            x, exhaustive = deferred.value()
            self._optimal[node] = {a: 0 for a in mixes.apps} | dict(zip(mixes.known, x, strict=True))
            if exhaustive:
                self.searched_locally.discard(node)
            else:
                self.searched_locally.add(node)
        return self._optimal[node]

    def compute_optimal(self, snapshot_nodes: dict[str, Node], apps: list[str]) -> None:
        """x* per node under its belief (module docstring). A node whose belief has not moved by more than
        ``recomputeShift`` since its x* was computed for the same applications keeps it (DARA recomputes every
        node on each refit); a frozen or never-observed belief is the prior's point estimate, DARA's x*."""
        self._optimal, self._pending = {}, {}
        mixes = self._mixes(apps)
        for name, node in snapshot_nodes.items():
            if node.node_class in self.fitted_classes:
                self._optimal_for(name, node, mixes)

    def _mixes(self, apps: list[str]) -> Mixes:
        known = [a for a in apps if a in self.profiles and a in self.fit.lam]
        lam = np.array([self.fit.lam[a] for a in known], dtype=np.float64)
        cpu = self.request_cpus(known)
        return Mixes(
            apps=apps,
            known=known,
            lam=lam,
            c=np.array([self.profiles[a].cpu_s for a in known], dtype=np.float64),
            d=np.array([self.profiles[a].io_mb for a in known], dtype=np.float64),
            mem=np.array([self.profiles[a].memory_mb for a in known], dtype=np.float64),
            cpu=cpu,
            noise=np.maximum(self.cfg.sigma_scale * lam, 1e-3) ** 2,
            key=(tuple(known), tuple(np.round(lam, 6)), tuple(cpu)),
        )

    def _optimal_for(self, name: str, node: Node, mixes: Mixes) -> None:
        alpha_c, alpha_d = self.fit.alpha.get(node.node_class) or self.offline[node.node_class]
        cores = node.cores if node.by_requests else math.inf
        b = self.belief(name)
        key = (mixes.key, alpha_c, alpha_d, node.memory_mb, cores)  # mixes.key shared: compared by identity
        cached = self._computed.get(name)
        moved = self._moved(b)
        if cached is not None and cached[0] == key and not moved:
            deferred = cached[1]
        else:
            deferred = self._defer(mixes, alpha_c, alpha_d, node.memory_mb, cores, b)
            b.computed_at = b.mean.copy()
            self._computed[name] = (key, deferred)
        self._optimal[name] = {}  # evaluated when read (_x_star)
        self._pending[name] = (deferred, mixes)

    def _defer(
        self, q: Mixes, alpha_c: float, alpha_d: float, memory_mb: float, cores: float, b: NodeBelief
    ) -> Deferred:
        """x* of one node, evaluated when first read: a recomputation that no heartbeat reads before the next
        (several a round while applications come and go) costs nothing. Whatever it reads is taken now, and
        its Monte Carlo draws are drawn now, so the random stream, and so x*, are what computing it now gives."""

        def prior() -> Assignment:
            # the applications' arrays are q's, the same for every node: the rest is the node's part
            node_key = (alpha_c, alpha_d, memory_mb, cores)
            found = q.priors.get(node_key)
            if found is None:
                found = q.priors[node_key] = self._search_mix(
                    q.lam, q.c, q.d, q.mem, alpha_c, alpha_d, memory_mb, q.cpu, cores
                )
            return found

        if self.cfg.freeze or b.observations == 0:
            return Deferred(lambda: (prior().x, prior().exhaustive))
        if not q.known:
            return Deferred(lambda: ((), True))
        draws = self._draw(b)
        s, cov = np.maximum(b.mean, S_FLOOR), b.cov

        def under_belief() -> tuple[tuple[int, ...], bool]:
            found = prior()
            ceiling = found.x if self.cfg.cap_at_prior else None
            x, searched = self._argmax(q, alpha_c, alpha_d, memory_mb, cores, s, cov, draws, ceiling)
            return x, found.exhaustive and searched

        return Deferred(under_belief)

    def _draw(self, b: NodeBelief) -> Vector:
        """``samples`` draws of s from the belief, floored: numpy's ``multivariate_normal`` (its SVD method,
        draw for draw the same numbers), with the SVD kept while the covariance is the same array."""
        factor = b.factor
        if factor is None or b.factor_of is not b.cov:
            u, singular, _ = np.linalg.svd(b.cov)
            factor = b.factor = u * np.sqrt(singular)
            b.factor_of = b.cov
        z = self._rng.standard_normal((self.cfg.samples, 2))
        return np.maximum(b.mean + z @ factor.T, S_FLOOR)

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        """DARA's, after recomputing x* of this node alone if its belief changed (§6.1.1: on a state change)."""
        if node in self._changed and node in self._optimal and node in snapshot.nodes:
            self._changed.discard(node)
            self._optimal_for(node, snapshot.nodes[node], self._mixes(list(self._members)))
        return super().assign(snapshot, node)

    def _argmax(
        self,
        q: Mixes,
        alpha_c: float,
        alpha_d: float,
        memory_mb: float,
        cores: float,
        s: Vector,
        cov: Matrix,
        draws: Vector,
        ceiling: tuple[int, ...] | None = None,
    ) -> tuple[tuple[int, ...], bool]:
        """The mix of highest expected throughput under the belief (mean ``s``, covariance ``cov``, Monte Carlo
        ``draws``) (Eq 6.5, + β·EIG), and whether every mix was enumerated (False: :func:`local_search` [ours],
        past ``exhaustiveLimit``; the EIG bonus is then scaled by the expected throughput's local maximum, the
        enumeration's grid maximum being unknown)."""
        lam, c, d, mem, cpu = q.lam, q.c, q.d, q.mem, q.cpu
        rc, rd = load_ratios(c, d)
        k = c * alpha_c * s[0] * rc**2 + d * alpha_d * s[1] * rd**2
        bounds = search_bounds(lam, k, mem, memory_mb, self.cfg.bound_factor, self.cfg.max_per_app)
        if ceiling is not None:
            bounds = [min(bound, top) for bound, top in zip(bounds, ceiling, strict=True)]
        enumerate_all = not too_many_to_enumerate(
            self.cfg.exhaustive_limit, bounds, mem, memory_mb, cpu, cores
        )
        if not enumerate_all:

            def expected(rows: Vector) -> Vector:
                return expected_throughputs(rows, lam, c, d, alpha_c, alpha_d, draws)

            if self.cfg.beta == 0:
                return local_search(bounds, mem, memory_mb, expected, cpu, cores), False
            # τ̄_best, the enumeration's grid maximum, is unknown: the expected throughput's own local maximum
            best = np.array([local_search(bounds, mem, memory_mb, expected, cpu, cores)], dtype=np.float64)
            scale = float(expected(best)[0])

            def belief_value(rows: Vector) -> Vector:
                gains = grid_information_gains(rows, c, d, alpha_c, alpha_d, cov, q.noise)
                return expected(rows) + self.cfg.beta * scale * gains

            return local_search(bounds, mem, memory_mb, belief_value, cpu, cores), False
        grid = feasible_vectors(bounds, mem, memory_mb, cpu, cores)
        terms_key = (tuple(bounds), memory_mb, cores, alpha_c, alpha_d)
        terms = q.terms.get(terms_key)
        if terms is None:
            terms = q.terms[terms_key] = throughput_terms(grid, lam, c, d, alpha_c, alpha_d)
        value = expected_throughputs(grid, lam, c, d, alpha_c, alpha_d, draws, terms)
        if self.cfg.beta > 0:
            gains = grid_information_gains(grid, c, d, alpha_c, alpha_d, cov, q.noise)
            value = value + self.cfg.beta * float(value.max()) * gains
        return tuple(int(v) for v in grid[int(np.argmax(value))]), True

    # --- dispatch: DARA's, with the belief in the explanation -----------------------------------------

    def _place_map(
        self, snapshot: Any, task: Task, node: str, clock: Any, explanation: Explanation
    ) -> Placement:
        b = self.belief(node)
        reason = (
            f"{explanation.reason}; node state s = ({b.mean[0]:.2f}, {b.mean[1]:.2f}) over its class's α "
            f"({'frozen' if self.cfg.freeze else f'{b.observations} observations, {b.detections} changes'}"
            f"{f', β {self.cfg.beta:g}' if self.cfg.beta else ''}; Eq 6.5/6.16)"
        )
        return super()._place_map(
            snapshot,
            task,
            node,
            clock,
            Explanation(self.name, explanation.score, reason, explanation.runner_up),
        )

    # --- persistence -----------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """DARA's state plus each node's belief, ``{"nodes": {node: {slowdownC, slowdownD, covariance,
        observations, detections}}}`` (on its NodeProfile at ``status.policies.diagnosis``)."""
        out = super().state()
        out["nodes"] = {node: b.to_dict() for node, b in sorted(self.beliefs.items())}
        return out

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        for node, entry in (state.get("nodes") or {}).items():
            try:
                mean = np.array([float(entry["slowdownC"]), float(entry["slowdownD"])])
                cov = np.array(entry["covariance"], dtype=np.float64).reshape(2, 2)
            except (KeyError, TypeError, ValueError):
                continue
            if np.all(np.isfinite(mean)) and np.all(np.isfinite(cov)):
                self.beliefs[str(node)] = NodeBelief(
                    mean, cov, int(entry.get("observations", 0)), int(entry.get("detections", 0))
                )
