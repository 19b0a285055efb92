"""ThroughputScheduler (seed 002, Gupta thesis ch.3): heterogeneity-aware map placement with profiles learned online.

The thesis' model (Eq 3.2): a map task of application i takes ``T = θc/κc + θd/κd + Ω`` on machine j, where
κ = (κc, κd) are the machine's CPU and disk *rates* (reference machine κ = (1, 1)) and Ω its per-task start-up
overhead. The policy has three parts:

* **Machine capabilities** κ, Ω (and the noise σ) come from probe tasks (P3-A, Eq 3.3-3.5, Table 3.1;
  :mod:`mrsched.core.probes`): the policy sets ``needs_probes``, so the operator and the simulator run the
  probes on every node and hand the result in the snapshot (``Node.probe``). The thesis measures κ offline and
  never estimates it from production tasks (with θ unknown, one task's time cannot separate θ from κ), so
  neither does this policy. The ``capabilities`` option (keyed by node name or node class, e.g. Table 3.1)
  overrides probes. A node with neither is served in FIFO order (Hadoop's default, the thesis' baseline).
* **Explore** (§3.2.1): each application's θ = (θc, θd) gets a Gaussian posterior, updated in closed form from
  every finished map's duration minus Ω (Eq 3.10-3.24, information form; in
  :mod:`mrsched.policies.throughput.model`, :func:`bayes_update`, :func:`posterior_mean`). While the posterior
  is not yet tight, the app's tasks go to the machines that maximise the expected information gain (Eq
  3.31/3.33; :func:`explore_gains`): the machines whose κc/κd ratios differ most from those already used.
  Because the covariance does not depend on the observed times (Eq 3.22), tasks still running count as planned
  experiments. The app switches to exploit once ``det Σ < 0.007`` (:func:`explore_finished`).
* **Exploit** (§3.2.2): Alg 3.2.1 keeps Hadoop's locality tiers (node-local, rack-local, off-switch) and breaks
  ties within the best tier by SelectBestApplication (Alg 3.2.2, :func:`application_score`): the argmin of
  ``norm(θc)/norm(κc) + norm(θd)/norm(κd)``.

Where the thesis is silent (digest gupta-thesis.md §3.1.7, [R]): an exploring app's task launches on a node
that is among its design's argmax machines (oldest app first); otherwise Alg 3.2.1 runs over the learned apps;
if none of them has a pending map, an exploring app's task runs anyway (production never stops) and still
teaches its posterior. Reduces are handed out as by Hadoop 1's FIFO (the thesis schedules maps only). Slot
counts are never changed.

Determinant convention (digest I3-1): Eq 3.22 reads ``Σ⁻¹ = [[a20, a11/2], [a11/2, a02]]``, half the true
precision, so the thesis' ``|Σ|`` is 4 × the true determinant; its threshold 0.007 was set in that convention,
which is the default here (``detConvention: thesis``); ``true`` uses the true posterior determinant. The
posterior itself (mean and covariance) is always the true one.

**On Kubernetes** [ours]: the thesis decides *where* each map goes (Alg 3.2.2's match of an application's θd/θc to
a node's κ) within fixed slots, never how many run. By requests how many is what the node's allocatable holds (a
candidate node is one with room for a map's pod); the learned κ and θ then decide which application's map each
free place gets, so a node's mix follows its capability. A heartbeat of a by-requests node offers first the
reduces of jobs whose maps are all placed (``hadoop.slots.reduces_first``): maps and reduces share one allocatable
there, and maps placed first would leave such a reduce waiting until no map of any job is left to start; then
Hadoop's order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mrsched.core.locality import LEVEL_RANK
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement, Task, TaskOutcome
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.core.probes import Capability, slowed
from mrsched.policies.hadoop.fifo import fifo_order
from mrsched.policies.hadoop.slots import SlotPolicy, maps_placed, reduces_first
from mrsched.policies.throughput.model import (
    THESIS_DET_THRESHOLD,
    CandidateSet,
    DetConvention,
    Matrix,
    Vector,
    application_score,
    bayes_update,
    covariance_det,
    explore_finished,
    is_proper,
    posterior_covariance,
    posterior_mean,
)

# --- the policy -----------------------------------------------------------------------------------------------


class CapabilityOption(BaseModel):
    """A node's (or node class's) probe results, Table 3.1's row plus the noise σ."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    kappa_c: float = Field(alias="kappaC", gt=0)
    kappa_d: float = Field(alias="kappaD", gt=0)
    omega_s: float = Field(0.0, alias="omegaS", ge=0)
    sigma_s: float = Field(1.0, alias="sigmaS", gt=0)


class ProfileOption(BaseModel):
    """An app's known profile (e.g. Table 3.2), which skips its explore phase."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    theta_c: float = Field(alias="thetaC", ge=0)
    theta_d: float = Field(alias="thetaD", ge=0)


class ThroughputConfig(PolicyConfig):
    #: Probe results by node name or node class (node name wins). Nodes without any are served FIFO.
    capabilities: dict[str, CapabilityOption] = Field(default_factory=dict)
    #: Profiles known in advance by app (digest §3.2: the homogeneous runs of Table 3.5 cannot learn θ).
    profiles: dict[str, ProfileOption] = Field(default_factory=dict)
    det_threshold: float = Field(THESIS_DET_THRESHOLD, alias="detThreshold", gt=0)
    det_convention: DetConvention = Field("thesis", alias="detConvention")
    #: Digest I3-5 (b): stop exploring after this many observations even above the threshold (once proper).
    max_explore_tasks: int | None = Field(None, alias="maxExploreTasks", ge=2)


@dataclass
class _Profile:
    precision: Matrix
    h: Vector
    observations: int = 0
    known: Vector | None = None  # a configured profile


@register
class Throughput(Configured[ThroughputConfig], SlotPolicy):
    name = "throughput"
    # Its posteriors learn from outcomes only, its planned experiments change with launches, and the nodes it
    # remembers for outcomes are the snapshot's own dict (changed in place): a heartbeat with nothing to start
    # changes nothing.
    idle_when_nothing_pending = True
    Config = ThroughputConfig
    needs_probes = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._profiles: dict[str, _Profile] = {}
        # Running maps as planned experiments: task key -> (app, node).
        self._planned: dict[str, tuple[str, str]] = {}
        self._apps: dict[str, str] = {}  # job id -> app
        self._nodes: dict[str, Node] = {}  # the last snapshot's nodes: outcomes carry only a name
        self._candidate_set: CandidateSet | None = None
        for app, p in self.cfg.profiles.items():
            self._profile(app).known = np.array([p.theta_c, p.theta_d])

    # --- knowledge ----------------------------------------------------------------------------------------

    def capability(self, snapshot: ClusterSnapshot, node: str) -> Capability | None:
        """The node's capability: configured by its name or class, else probed; slowed down by the factors of
        the soft-fault monitor while it judges the node degraded (seed 002 ch.5 feeding ch.3's model: a node
        whose disk slowed gets fewer disk-heavy tasks, and its tasks' durations teach θ with the κ it has)."""
        n = snapshot.nodes[node]
        cap = self._capability_of(node, n.node_class, n.probe)
        return slowed(cap, n.slowdown) if cap is not None else None

    def _capability_of(self, node: str, node_class: str, probe: Capability | None) -> Capability | None:
        option = self.cfg.capabilities.get(node)
        if option is None and node_class:
            option = self.cfg.capabilities.get(node_class)
        if option is None:
            return probe
        return Capability(option.kappa_c, option.kappa_d, option.omega_s, option.sigma_s)

    def _profile(self, app: str) -> _Profile:
        profile = self._profiles.get(app)
        if profile is None:
            profile = self._profiles[app] = _Profile(np.zeros((2, 2)), np.zeros(2))
        return profile

    def mean(self, app: str) -> Vector | None:
        profile = self._profile(app)
        if profile.known is not None:
            return profile.known
        return posterior_mean(profile.precision, profile.h)

    def learned(self, app: str) -> bool:
        profile = self._profile(app)
        if profile.known is not None:
            return True
        if explore_finished(profile.precision, self.cfg.det_threshold, self.cfg.det_convention):
            return True
        cap = self.cfg.max_explore_tasks
        return cap is not None and profile.observations >= cap and is_proper(profile.precision)

    def _design_precision(self, app: str, snapshot: ClusterSnapshot) -> Matrix:
        """The precision of the app's finished observations plus its running explore tasks (planned experiments)."""
        precision = self._profile(app).precision.copy()
        for planned_app, node in self._planned.values():
            cap = self.capability(snapshot, node) if node in snapshot.nodes else None
            if planned_app == app and cap is not None:
                a = cap.features()
                precision += cap.weight * np.outer(a, a)
        return precision

    # --- scheduling ---------------------------------------------------------------------------------------

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        self._remember(snapshot)
        placements: list[Placement] = []
        beat = _Heartbeat(self, snapshot)
        ordered = fifo_order(snapshot.jobs)
        why = "first job in submission order"
        # A reduce whose maps are all placed first (reduces_first), then Hadoop's order; one reduce a heartbeat.
        first = (
            self.one_reduce(snapshot, node, [j for j in ordered if maps_placed(j)], why)
            if reduces_first(snapshot, node)
            else []
        )
        placements += first
        for _ in range(max(0, snapshot.free_slots(node, "map"))):
            placed = self._assign_map(snapshot, node, beat)
            if placed is None:
                break
            placements.append(placed)
        if not first:
            placements += self.one_reduce(snapshot, node, ordered, why)
        return placements

    def _launch(
        self,
        snapshot: ClusterSnapshot,
        task: Task,
        node: str,
        reason: str,
        score: float,
        runner_up: str | None,
    ) -> Placement:
        placement = Placement(task, node, Explanation(self.name, score, reason, runner_up))
        snapshot.commit(placement)
        return placement

    def _assign_map(self, snapshot: ClusterSnapshot, node: str, beat: _Heartbeat) -> Placement | None:
        jobs = [j for j in fifo_order(snapshot.jobs) if j.finished_maps + j.running_maps < len(j.maps)]
        if not jobs:
            return None
        cap = self.capability(snapshot, node)
        if cap is None:
            for job in jobs:
                found = self.pick_map(job, snapshot, node)
                if found is not None:
                    reason = (
                        f"no probed capability for {node}: first job in submission order; {found[1]}-local"
                    )
                    return self._explore_launch(snapshot, job, found[0], node, reason, 0.0, beat)
            return None
        exploring = [j for j in jobs if not beat.learned(j.app)]
        learned = [j for j in jobs if beat.learned(j.app)]
        # Explore: an unlearned app's task goes here if this node maximises its information gain (Eq 3.31/3.33).
        for job in exploring:
            if node not in beat.explore_machines(job.app):
                continue
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                gain = CandidateSet({node: cap}).gains(beat.design(job.app))
                reason = (
                    f"explore {job.app}: {node} maximises the information gain about θ (Eq 3.33); "
                    f"{found[1]}-local"
                )
                return self._explore_launch(snapshot, job, found[0], node, reason, float(gain[0]), beat)
        # Exploit: Alg 3.2.1 over the learned apps, SelectBestApplication within the best locality tier.
        placed = self._exploit(snapshot, node, cap, learned, beat)
        if placed is not None:
            return placed
        # Production never stops: run an exploring app's task anyway, and learn from it.
        for job in exploring:
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                reason = f"explore {job.app}: no learned app has a pending map; {found[1]}-local"
                return self._explore_launch(snapshot, job, found[0], node, reason, 0.0, beat)
        return None

    def _candidates(self, snapshot: ClusterSnapshot) -> CandidateSet:
        """The machines with a capability and room for a map, as arrays; the last heartbeat's set again while
        they are the same (a cluster's capabilities change only with probes, slowdowns and node changes)."""
        out = {}
        for name in snapshot.nodes:
            cap = self.capability(snapshot, name)
            if cap is not None and snapshot.capacity(name, "map") > 0:
                out[name] = cap
        if self._candidate_set is None or self._candidate_set.capabilities != out:
            self._candidate_set = CandidateSet(out)
        return self._candidate_set

    def _explore_launch(
        self,
        snapshot: ClusterSnapshot,
        job: Job,
        task: Task,
        node: str,
        reason: str,
        score: float,
        beat: _Heartbeat,
    ) -> Placement:
        if not beat.learned(job.app):
            self._planned[task.key] = (job.app, node)
            beat.planned(job.app)
        return self._launch(snapshot, task, node, reason, score, None)

    def _exploit(
        self,
        snapshot: ClusterSnapshot,
        node: str,
        cap: Capability,
        learned: list[Job],
        beat: _Heartbeat,
    ) -> Placement | None:
        tiers: dict[int, list[tuple[Job, Task, str]]] = {}
        for job in learned:
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                tiers.setdefault(LEVEL_RANK[found[1]], []).append((job, found[0], found[1]))
        if not tiers:
            return None
        tier = tiers[min(tiers)]
        candidates = beat.candidates()
        total_c, total_d = candidates.total_kappa_c, candidates.total_kappa_d
        scored = []
        for order, (job, task, level) in enumerate(tier):
            mean = beat.mean(job.app)
            assert mean is not None  # learned apps have a proper posterior or a known profile
            scored.append((application_score(mean, cap, total_c, total_d), order, job, task, level))
        scored.sort(key=lambda s: (s[0], s[1]))  # ties: FIFO order
        score, _, job, task, level = scored[0]
        runner_up = f"{scored[1][2].id} (score {scored[1][0]:.3f})" if len(scored) > 1 else None
        theta = self.mean(job.app)
        assert theta is not None
        reason = (
            f"best match for {node} among {level}-local apps (Alg 3.2.2): "
            f"{job.app} θ≈({theta[0]:.2f}, {theta[1]:.2f})"
        )
        return self._launch(snapshot, task, node, reason, score, runner_up)

    # --- learning -------------------------------------------------------------------------------------------

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        super().on_task_finished(outcome)
        task = outcome.task
        self._planned.pop(task.key, None)
        if task.kind != "map" or not outcome.succeeded:
            return
        known = self._nodes.get(outcome.node)
        cap = self._capability_of(
            outcome.node, known.node_class if known else "", known.probe if known else None
        )
        if cap is not None and known is not None:  # a degraded node's task taught with the κ it ran at
            cap = slowed(cap, known.slowdown)
        app = self._apps.get(task.job_id)
        if cap is None or app is None:
            return
        profile = self._profile(app)
        # Every finished map of the app, explore or exploit, updates its posterior (digest §3.1.7 step 3).
        profile.precision, profile.h = bayes_update(
            profile.precision, profile.h, cap, outcome.duration_s - cap.omega_s
        )
        profile.observations += 1

    def _remember(self, snapshot: ClusterSnapshot) -> None:
        """An outcome carries no snapshot: remember each job's app and the nodes when they are seen."""
        for job in snapshot.jobs:
            self._apps.setdefault(job.id, job.app)
        self._nodes = snapshot.nodes

    def on_job_submitted(self, job: Job, now: float) -> None:
        self._apps[job.id] = job.app

    def on_job_finished(self, job: Job, now: float) -> None:
        super().on_job_finished(job, now)
        self._apps.pop(job.id, None)
        prefix = f"{job.id}/"
        for key in [k for k in self._planned if k.startswith(prefix)]:
            del self._planned[key]

    def on_task_requeued(self, task: Task) -> None:
        super().on_task_requeued(task)
        self._planned.pop(task.key, None)

    def state(self) -> dict[str, Any]:
        """Each app's posterior in information form (Λ, h), its observation count, and for people reading the
        AppProfile: the posterior mean θ, the covariance, |Σ| in the configured convention and the phase."""
        apps: dict[str, Any] = {}
        for app, p in self._profiles.items():
            mean = self.mean(app)
            covariance = posterior_covariance(p.precision)
            det = covariance_det(p.precision, self.cfg.det_convention)
            apps[app] = {
                "precision": p.precision.tolist(),
                "h": p.h.tolist(),
                "observations": p.observations,
                "thetaC": None if mean is None else round(float(mean[0]), 4),
                "thetaD": None if mean is None else round(float(mean[1]), 4),
                "covariance": None if covariance is None else covariance.round(6).tolist(),
                "detSigma": None if math.isinf(det) else float(f"{det:.4g}"),
                "phase": "known" if p.known is not None else "exploit" if self.learned(app) else "explore",
            }
        return {"apps": apps}

    def load_state(self, state: dict[str, Any]) -> None:
        for app, saved in state.get("apps", {}).items():
            if "precision" not in saved or "h" not in saved:
                continue
            profile = self._profile(app)
            profile.precision = np.array(saved["precision"], dtype=float).reshape(2, 2)
            profile.h = np.array(saved["h"], dtype=float).reshape(2)
            profile.observations = int(saved.get("observations", 0))


@dataclass
class _Heartbeat:
    """What one heartbeat's map choices share, computed once each: the candidate machines, and per app whether
    it is learned, its posterior mean, its design (:meth:`Throughput._design_precision`) and the machines that
    maximise its explore gain. A posterior changes only on an outcome, between heartbeats; a launched explore
    task changes its own app's design (:meth:`planned`). At 1,000 nodes and 200 jobs of one app, recomputing
    these per job and per free slot cost 2 s per heartbeat."""

    policy: Throughput
    snapshot: ClusterSnapshot
    _candidates: CandidateSet | None = None
    _learned: dict[str, bool] = field(default_factory=dict)
    _means: dict[str, Vector | None] = field(default_factory=dict)
    _designs: dict[str, Matrix] = field(default_factory=dict)
    _explore: dict[str, set[str]] = field(default_factory=dict)

    def candidates(self) -> CandidateSet:
        if self._candidates is None:
            self._candidates = self.policy._candidates(self.snapshot)
        return self._candidates

    def learned(self, app: str) -> bool:
        if app not in self._learned:
            self._learned[app] = self.policy.learned(app)
        return self._learned[app]

    def mean(self, app: str) -> Vector | None:
        if app not in self._means:
            self._means[app] = self.policy.mean(app)
        return self._means[app]

    def design(self, app: str) -> Matrix:
        if app not in self._designs:
            self._designs[app] = self.policy._design_precision(app, self.snapshot)
        return self._designs[app]

    def explore_machines(self, app: str) -> set[str]:
        if app not in self._explore:
            self._explore[app] = self.candidates().best(self.design(app))
        return self._explore[app]

    def planned(self, app: str) -> None:
        """An explore task of ``app`` was launched: its design has one more planned experiment."""
        self._designs.pop(app, None)
        self._explore.pop(app, None)
