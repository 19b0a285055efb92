"""Fit application profiles and a machine's contention constants to measured task times.

Why this exists: the physics (:mod:`mrsched.core.physics`) decides which policy wins, so its parameters must
come from our own workers measured on a real machine, not from the paper figures they are meant to reproduce.
``bench/calibrate.py`` runs each application's map task k at a time (all k started together, each on its own
input) and records, per concurrency, the mean wall time and the mean CPU seconds (user + system) per task. This
module then asks the physics the same question — k identical tasks started at t = 0 on one
:class:`~mrsched.core.physics.NodeModel`, noise off: mean duration, and mean CPU seconds as the physics counts
them in each task's usage — and fits by least squares on the *relative* errors of both (so a 2 s task and a
20 s task weigh the same, and so do a wall time and a CPU time):

* per application, the profile θc (CPU work, core-seconds at this machine's cpu_rate 1), θd (disk work in
  reference-disk seconds, i.e. bytes / 100 MB/s, as :class:`~mrsched.core.physics.TaskDemand` counts it) and
  the start-up overhead Ω;
* per machine, one pair of contention constants (cpu_contention, disk_contention) shared by every
  application: they describe the node, not the job, so fitting them per application would let each
  application absorb its own misfit into them.

Why CPU seconds are a target: wall time alone cannot tell CPU work from disk work. When other work holds cores
the model counts as free, a CPU-bound task's wall time grows with k just as a disk-bound one's does, and a fit
on wall times alone moved every application's work into θd with small errors (Pi fitted θc 0.01 where its tasks
measured 2.9 CPU-s). The CPU seconds a task used pin θc (and, as they grow with k, the CPU contention); the
wall error left over is then the physics' real shortfall, reported rather than hidden. A measurement without
CPU seconds is fitted on its wall time alone.

It imports only the core physics (no cluster, no worker processes), so a test can feed it synthetic data made
by the physics itself and check that the fit recovers known parameters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

from mrsched.core.physics import REFERENCE_DISK_MBPS, NodeCapability, NodeModel, TaskDemand

#: Unknowns per application, in the order they sit in the optimiser's vector.
_APP_PARAMS = ("cpu_s", "disk_s", "overhead_s")
#: Finite-difference step (relative): well above the physics' float snapping (1e-9), far below any effect.
_DIFF_STEP = 1e-6


@dataclass(frozen=True)
class Measurement:
    """One application's measured mean task wall time, and mean CPU seconds per task (user + system, None if
    not measured), when ``concurrency`` of its tasks start together."""

    app: str
    concurrency: int
    wall_s: float
    cpu_s: float | None = None


@dataclass(frozen=True)
class AppProfile:
    """What one task of an application costs on the calibrated machine: θc, θd and Ω.

    ``read_share`` splits θd into read and written megabytes; the physics charges both to the same disk, so it
    changes no duration, but the demand then reports bytes the way the worker's usage report does.
    """

    cpu_s: float
    disk_s: float
    overhead_s: float
    read_share: float = 0.5

    def demand(self) -> TaskDemand:
        """The physics' demand of one task (θd in MB at the reference disk's 100 MB/s)."""
        mb = self.disk_s * REFERENCE_DISK_MBPS
        return TaskDemand(cpu_s=self.cpu_s, read_mb=mb * self.read_share, write_mb=mb * (1 - self.read_share))


def profile_from_usage(
    cpu_s: float, read_bytes: float, written_bytes: float, overhead_s: float
) -> AppProfile:
    """A starting profile from one task's usage report alone: its CPU seconds as θc, its bytes as θd.

    Both overstate the fit's answer when start-up burns CPU or reads hit the page cache; that is why they are
    only where the optimiser starts."""
    moved = read_bytes + written_bytes
    return AppProfile(
        cpu_s=max(cpu_s, 0.0),
        disk_s=moved / 1e6 / REFERENCE_DISK_MBPS,
        overhead_s=max(overhead_s, 0.0),
        read_share=read_bytes / moved if moved > 0 else 0.5,
    )


def mean_outcome(node: NodeCapability, profile: AppProfile, concurrency: int) -> tuple[float, float]:
    """(mean duration, mean CPU seconds) of ``concurrency`` identical tasks started together at t = 0 on
    ``node``, noise off. The CPU seconds are the physics' usage report (``RunOutcome.usage.cpu_s``): time held
    on a core in the CPU phase (longer than θc when contention slows the work) plus ``OVERHEAD_CPU_SHARE`` of Ω.

    Runs the real :class:`NodeModel` rather than a closed form, so that the calibration tests the physics the
    simulator uses and keeps doing so if the physics changes."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    cap = replace(node, overhead_s=profile.overhead_s, noise_sigma=0.0)
    model = NodeModel("calibration", cap)
    demand = profile.demand()
    for i in range(concurrency):
        model.start(f"t{i}", demand, 0.0)
    while model.running_ids:
        model.advance(model.next_event_s())
    outcomes = model.pop_finished()
    n = len(outcomes)
    return math.fsum(o.duration_s for o in outcomes) / n, math.fsum(o.usage.cpu_s for o in outcomes) / n


def mean_duration(node: NodeCapability, profile: AppProfile, concurrency: int) -> float:
    """Mean duration of ``concurrency`` identical tasks started together at t = 0 on ``node``, noise off."""
    return mean_outcome(node, profile, concurrency)[0]


@dataclass(frozen=True)
class Comparison:
    """The model's mean wall and CPU seconds per (application, concurrency) and their relative errors,
    (modelled − measured) / measured; CPU errors only where the CPU seconds were measured."""

    modelled: dict[str, dict[int, float]]
    modelled_cpu: dict[str, dict[int, float]]
    errors: dict[str, dict[int, float]]
    cpu_errors: dict[str, dict[int, float]]


def compare(
    node: NodeCapability, profiles: Mapping[str, AppProfile], measurements: Iterable[Measurement]
) -> Comparison:
    """Run the model once per measurement and compare both of its outputs with what was measured."""
    out = Comparison({}, {}, {}, {})
    for m in measurements:
        wall, cpu = mean_outcome(node, profiles[m.app], m.concurrency)
        out.modelled.setdefault(m.app, {})[m.concurrency] = wall
        out.modelled_cpu.setdefault(m.app, {})[m.concurrency] = cpu
        out.errors.setdefault(m.app, {})[m.concurrency] = (wall - m.wall_s) / m.wall_s
        if m.cpu_s is not None:
            out.cpu_errors.setdefault(m.app, {})[m.concurrency] = (cpu - m.cpu_s) / m.cpu_s
    return out


def relative_errors(
    node: NodeCapability, profiles: Mapping[str, AppProfile], measurements: Iterable[Measurement]
) -> dict[str, dict[int, float]]:
    """Wall-time (modelled − measured) / measured per application and concurrency."""
    return compare(node, profiles, measurements).errors


def mean_abs_error(errors: Mapping[int, float]) -> float:
    """Mean absolute relative error over an application's concurrencies (of wall times: the issue's figure of
    merit; also used for CPU seconds)."""
    return math.fsum(abs(e) for e in errors.values()) / len(errors) if errors else math.nan


@dataclass(frozen=True)
class CalibrationFit:
    """The fitted machine and profiles, the model's wall and CPU seconds at each measured concurrency and their
    errors. ``mean_errors`` (wall) is the issue's figure of merit; ``mean_cpu_errors`` covers the applications
    with measured CPU seconds."""

    node: NodeCapability
    profiles: dict[str, AppProfile]
    modelled: dict[str, dict[int, float]]
    errors: dict[str, dict[int, float]]
    success: bool
    message: str
    cost: float
    modelled_cpu: dict[str, dict[int, float]] = field(default_factory=dict)
    cpu_errors: dict[str, dict[int, float]] = field(default_factory=dict)
    mean_errors: dict[str, float] = field(init=False)
    mean_cpu_errors: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean_errors", {a: mean_abs_error(e) for a, e in self.errors.items()})
        object.__setattr__(
            self, "mean_cpu_errors", {a: mean_abs_error(e) for a, e in self.cpu_errors.items()}
        )


def fit(
    node: NodeCapability,
    measurements: Sequence[Measurement],
    initial: Mapping[str, AppProfile],
    *,
    fit_contention: bool = True,
) -> CalibrationFit:
    """Least-squares fit of every application's (θc, θd, Ω) and the node's (cpu_contention, disk_contention).

    One residual per measured wall time and one per measured CPU seconds, each a relative error, equally
    weighted. ``node`` gives the machine (cores, rates) and the contention constants' starting point;
    ``initial`` one starting profile per application measured (its ``read_share`` is kept). Every unknown is
    bounded below by zero and nothing else: a shortfall against the data is reported, not tuned away. With
    ``fit_contention=False`` the node's constants are held (to fit new applications on a calibrated machine).
    """
    apps = sorted({m.app for m in measurements})
    missing = [a for a in apps if a not in initial]
    if missing:
        raise ValueError(f"no starting profile for {', '.join(missing)}")
    if any(m.wall_s <= 0 for m in measurements):
        raise ValueError("measured wall times must be positive")
    if any(m.cpu_s is not None and m.cpu_s <= 0 for m in measurements):
        raise ValueError("measured CPU seconds must be positive (or None)")
    if len({(m.app, m.concurrency) for m in measurements}) < len(measurements):
        raise ValueError("one measurement per application and concurrency (average repeats first)")
    base = replace(node, noise_sigma=0.0)
    n_app = len(_APP_PARAMS) * len(apps)
    x0 = [getattr(initial[a], p) for a in apps for p in _APP_PARAMS]
    if fit_contention:
        x0 += [base.cpu_contention, base.disk_contention]
    measured = np.array([m.wall_s for m in measurements])
    cpu_rows = [row for row, m in enumerate(measurements) if m.cpu_s is not None]
    measured_cpu = np.array([measurements[row].cpu_s for row in cpu_rows], dtype=float)

    def unpack(x: np.ndarray) -> tuple[NodeCapability, dict[str, AppProfile]]:
        values = [max(float(v), 0.0) for v in x]  # the '2-point' step may graze a bound from above
        profiles = {
            a: replace(initial[a], **dict(zip(_APP_PARAMS, values[3 * i : 3 * i + 3], strict=True)))
            for i, a in enumerate(apps)
        }
        cap = (
            replace(base, cpu_contention=values[n_app], disk_contention=values[n_app + 1])
            if fit_contention
            else base
        )
        return cap, profiles

    def residuals(x: np.ndarray) -> np.ndarray:
        cap, profiles = unpack(x)
        modelled = np.array([mean_outcome(cap, profiles[m.app], m.concurrency) for m in measurements])
        wall = modelled[:, 0] / measured - 1.0
        cpu = modelled[cpu_rows, 1] / measured_cpu - 1.0 if cpu_rows else np.empty(0)
        errors: np.ndarray = np.concatenate([wall, cpu])
        return errors

    # Each application's unknowns touch only its own measurements (wall rows, then CPU rows): telling the
    # optimiser so lets it perturb every application's θc at once when it differentiates, 6 model sweeps per
    # Jacobian instead of 3·apps+2.
    sparsity = lil_matrix((len(measurements) + len(cpu_rows), len(x0)), dtype=int)
    for row, m in enumerate([*measurements, *(measurements[r] for r in cpu_rows)]):
        i = apps.index(m.app)
        sparsity[row, 3 * i : 3 * i + 3] = 1
        if fit_contention:
            sparsity[row, n_app:] = 1
    result = least_squares(
        residuals,
        np.asarray(x0, dtype=float),
        bounds=(0.0, np.inf),
        jac_sparsity=sparsity,
        diff_step=_DIFF_STEP,
        x_scale="jac",
        method="trf",
    )
    cap, profiles = unpack(result.x)
    c = compare(cap, profiles, measurements)
    return CalibrationFit(
        node=cap,
        profiles=profiles,
        modelled=c.modelled,
        errors=c.errors,
        success=bool(result.success),
        message=str(result.message),
        cost=float(result.cost),
        modelled_cpu=c.modelled_cpu,
        cpu_errors=c.cpu_errors,
    )
