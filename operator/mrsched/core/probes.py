"""Probe tasks that measure a node's capability: seed 002 §3.2, P3-A ``PROBE_MACHINES()``, Eq 3.3-3.5, Table 3.1.

A map task of application i takes ``T = θc/κc + θd/κd + Ω`` on node j (Eq 3.2). Four probe kinds, each run
alone on the node a few times, with zero reducers and no replication (no network in the measurement):

* ``unit``: an empty map, θ = (0, 0): its mean duration is the node's overhead Ω^j (P3-A step 2);
* ``base``: J^1 = ⟨θc0, θd0⟩ (Eq 3.3);
* ``cpu``: J^η = ⟨ηθc0, θd0⟩, the map routine repeated η times (Eq 3.4);
* ``disk``: ⟨θc0, ηθd0⟩, η times the bytes (the thesis says only "similarly" for κd; digest P3-A step 6).

Eq 3.5 then gives ``κc^j = θc0 (η − 1) / (T^{cpu,j} − T^{base,j})`` (Ω and the other resource cancel), and κd
alike. **Units.** The thesis fixes units by calling one machine the reference (κ = (1, 1)) and solving Eq 3.5
for θc0 there. On a cluster whose nodes come and go, a reference node may be gone before the next node is
probed, so here the probe's own work fixes the units instead: θc0 and θd0 are defined in reference seconds (the
time the work takes on a κ = (1, 1) machine: the simulator's physics, and the worker's calibrated probe loop).
It is the same equation with θc0 known rather than solved for; capabilities of nodes probed at different
times are then comparable, and a reference node would get κ = (1, 1) either way.

σ^j (the observation noise of Eq 3.12) is "learned along with the machine capabilities" without a method
(P3-A step 7): here the pooled sample standard deviation of each probe kind's repeated durations.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from mrsched.core.physics import REFERENCE_DISK_MBPS, TaskDemand

ProbeKind = Literal["unit", "base", "cpu", "disk"]
PROBE_KINDS: tuple[ProbeKind, ...] = ("unit", "base", "cpu", "disk")

#: η, the work multiplier of the scaled probes (not stated in the thesis, P3-A step 8).
PROBE_ETA = 4.0
#: θ of the base probe J^1 in reference seconds: 20 s of CPU, and 20 s of disk (2 GB at 100 MB/s). Large
#: against the overhead Ω, whose noise would otherwise swamp the difference T^η − T^1 on slow nodes.
PROBE_CPU_S = 20.0
PROBE_DISK_S = 20.0
#: Runs of each kind per node (the thesis averages "many" runs): with 5 % noise per task, κ to about 7 %.
PROBE_REPEATS = 4
#: σ below this (noise-free physics) would make one observation's weight 1/σ² infinite.
MIN_SIGMA_S = 0.01


@dataclass(frozen=True)
class Capability:
    """One node's probed parameters (Table 3.1): rates κc, κd, overhead Ω (s) and observation noise σ (s)."""

    kappa_c: float
    kappa_d: float
    omega_s: float
    sigma_s: float = 1.0

    def features(self) -> NDArray[np.float64]:
        """The observation's linear map a = (1/κc, 1/κd): E[T − Ω] = a·θ (Eq 3.2, 3.11)."""
        return np.array([1.0 / self.kappa_c, 1.0 / self.kappa_d])

    @property
    def weight(self) -> float:
        """Precision of one observation, 1/σ² (Eq 3.12)."""
        return 1.0 / (self.sigma_s * self.sigma_s)


def slowed(capability: Capability, slowdown: tuple[float, float] | None) -> Capability:
    """The capability a node has now: its probed κc, κd divided by the soft-fault monitor's slowdown factors
    (γ = 1/κ multiplies, seed 002 Eq 5.10), Ω and σ unchanged. No slowdown: the capability itself."""
    if slowdown is None:
        return capability
    factor_c, factor_d = slowdown
    return Capability(
        capability.kappa_c / max(factor_c, 1e-9),
        capability.kappa_d / max(factor_d, 1e-9),
        capability.omega_s,
        capability.sigma_s,
    )


def probe_work(kind: ProbeKind, scale: float = 1.0) -> tuple[float, float]:
    """(θc, θd) of a probe kind in reference seconds; ``scale`` shrinks or grows all of it (a real node's
    probes may be made shorter; Eq 3.5 then uses the scaled θ)."""
    cpu_s, disk_s = {
        "unit": (0.0, 0.0),
        "base": (PROBE_CPU_S, PROBE_DISK_S),
        "cpu": (PROBE_ETA * PROBE_CPU_S, PROBE_DISK_S),
        "disk": (PROBE_CPU_S, PROBE_ETA * PROBE_DISK_S),
    }[kind]
    return cpu_s * scale, disk_s * scale


def probe_demand(kind: ProbeKind, scale: float = 1.0) -> TaskDemand:
    """The probe as a physics demand: CPU work, and its disk work as bytes written then read back."""
    cpu_s, disk_s = probe_work(kind, scale)
    mb = disk_s * REFERENCE_DISK_MBPS
    return TaskDemand(cpu_s=cpu_s, read_mb=mb / 2, write_mb=mb / 2, memory_mb=64.0)


def probe_plan(repeats: int = PROBE_REPEATS) -> list[ProbeKind]:
    """The order in which a node's probes run, one at a time: every kind once, then again."""
    return [kind for _ in range(repeats) for kind in PROBE_KINDS]


def estimate_overhead(unit_times: Sequence[float]) -> float:
    """Ω^j: the mean duration of the unit map task (P3-A step 2, Eq 3.2 with θ = 0)."""
    if not unit_times:
        raise ValueError("no unit-task durations")
    return statistics.fmean(unit_times)


def estimate_rate(theta: float, eta: float, base_s: float, scaled_s: float) -> float:
    """Eq 3.5: ``κ = θ(η − 1) / (T^η − T^1)`` for one resource, with the probe's θ known."""
    delta = scaled_s - base_s
    if delta <= 0:
        raise ValueError(
            f"the scaled probe ({scaled_s:.3f} s) did not take longer than the base probe ({base_s:.3f} s)"
        )
    return theta * (eta - 1.0) / delta


def estimate_rates(
    base: Mapping[str, float], scaled: Mapping[str, float], eta: float, reference: str
) -> tuple[dict[str, float], float]:
    """The thesis' own form of Eq 3.3-3.5, with a reference machine fixing the units.

    ``base`` holds each machine's mean map time of J^1 (Eq 3.3), ``scaled`` that of J^η (Eq 3.4). κ = 1 on the
    reference gives ``θ = (T^{η,ref} − T^{1,ref}) / (η − 1)``, substituted into Eq 3.5 for every machine.
    Returns (κ per machine, θ of the probe in reference seconds).
    """
    if eta <= 1:
        raise ValueError("the work multiplier η must exceed 1")
    theta = (scaled[reference] - base[reference]) / (eta - 1.0)
    if theta <= 0:
        raise ValueError("the scaled probe must take longer than the base probe on the reference machine")
    return {m: estimate_rate(theta, eta, base[m], scaled[m]) for m in base}, theta


def estimate_sigma(runs: Mapping[ProbeKind, Sequence[float]]) -> float:
    """σ^j: pooled sample standard deviation of each probe kind's repeated durations (digest P3-A step 7, [R])."""
    squares, dof = 0.0, 0
    for times in runs.values():
        if len(times) > 1:
            mean = statistics.fmean(times)
            squares += sum((t - mean) ** 2 for t in times)
            dof += len(times) - 1
    return max(MIN_SIGMA_S, math.sqrt(squares / dof)) if dof else MIN_SIGMA_S


def estimate_capability(runs: Mapping[ProbeKind, Sequence[float]], scale: float = 1.0) -> Capability:
    """One node's Table 3.1 row from its probe durations (seconds), by Eq 3.5 with the probes' known θ
    (``scale`` as the probes were run with, :func:`probe_work`)."""
    missing = [k for k in PROBE_KINDS if not runs.get(k)]
    if missing:
        raise ValueError(f"no durations for probe kinds: {', '.join(missing)}")
    mean = {k: statistics.fmean(runs[k]) for k in PROBE_KINDS}
    return Capability(
        kappa_c=estimate_rate(PROBE_CPU_S * scale, PROBE_ETA, mean["base"], mean["cpu"]),
        kappa_d=estimate_rate(PROBE_DISK_S * scale, PROBE_ETA, mean["base"], mean["disk"]),
        omega_s=estimate_overhead(runs["unit"]),
        sigma_s=estimate_sigma(runs),
    )
