"""The soft-fault monitor itself: Alg 5.3.1 run one finished map at a time, and the verdict per node."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrsched.health.beliefs import (
    _SYMBOL,
    RESOURCES,
    STATE_VERSION,
    AppBelief,
    SlowdownBelief,
    Vector,
)
from mrsched.health.config import MonitorConfig, NodeHealth


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
