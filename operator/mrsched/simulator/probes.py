"""Probe runs under the simulator's physics (seed 002 P3-A): each node's probe tasks, run alone and offline.

The thesis probes its machines once, before the experiments, on an otherwise idle cluster; so does the simulator,
before time 0, each probe task on a fresh copy of the node's hidden physics with the node's noise (the same
log-normal draw as a production task, keyed by the seed, the node and the probe's id). What the policy gets is
only :func:`mrsched.core.probes.estimate_capability` of the durations, never the physics.
"""

from __future__ import annotations

from collections import defaultdict

from mrsched.core.physics import NodeCapability, NodeModel
from mrsched.core.probes import Capability, ProbeKind, estimate_capability, probe_demand, probe_plan


def probe_durations(
    name: str, capability: NodeCapability, *, seed: int = 0, repeats: int | None = None
) -> dict[ProbeKind, list[float]]:
    """Durations (model seconds) of the node's probe plan, each probe alone on the idle node."""
    runs: dict[ProbeKind, list[float]] = defaultdict(list)
    plan = probe_plan() if repeats is None else probe_plan(repeats)
    for i, kind in enumerate(plan):
        model = NodeModel(name, capability, seed=seed)
        model.start(f"probe/{kind}/{i}", probe_demand(kind), 0.0)
        while model.running_ids:
            model.advance(model.next_event_s())
        (outcome,) = model.pop_finished()
        runs[kind].append(outcome.duration_s)
    return dict(runs)


def probe_node(name: str, capability: NodeCapability, *, seed: int = 0) -> Capability:
    """The node's κc, κd, Ω, σ as its probes measure them (Eq 3.3-3.5)."""
    return estimate_capability(probe_durations(name, capability, seed=seed))
