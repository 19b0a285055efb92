"""The hidden physics of a node: how long tasks take, alone and together.

One model serves two callers: the offline simulator and the node emulator's *model mode*. Schedulers never
see its parameters; they must learn them from task outcomes, as on a real cluster.

Modules (every public name is re-exported here, so ``from mrsched.core.physics import X`` works for all):

* :mod:`~mrsched.core.physics.parameters`: ``NodeCapability``, ``TaskDemand``, ``Fault`` and the module
  constants (``REFERENCE_DISK_MBPS``, ``OVERHEAD_CPU_SHARE``).
* :mod:`~mrsched.core.physics.draws`: the seeded draws, ``noise_factor`` and ``straggler_factor``.
* :mod:`~mrsched.core.physics.fluid_model`: ``NodeModel``, tasks sharing a node, integrated between events.
* :mod:`~mrsched.core.physics.phases`: the fluid model's state, a task's ``Phase`` sequence and sharing rates.
* :mod:`~mrsched.core.physics.outcomes`: what the model reports: ``TaskUsage``, ``RunOutcome``,
  ``NodeCounters``.
* :mod:`~mrsched.core.physics.durations`: ``isolated_duration`` and ``predicted_duration`` (closed forms), and
  ``run_alone`` (one task through the fluid model).
"""

from __future__ import annotations

from mrsched.core.physics.draws import noise_factor, straggler_factor
from mrsched.core.physics.durations import isolated_duration, predicted_duration, run_alone
from mrsched.core.physics.fluid_model import NodeModel
from mrsched.core.physics.outcomes import NodeCounters, RunOutcome, TaskUsage
from mrsched.core.physics.parameters import (
    OVERHEAD_CPU_SHARE,
    REFERENCE_DISK_MBPS,
    Fault,
    FaultKind,
    NodeCapability,
    TaskDemand,
)
from mrsched.core.physics.phases import Phase

__all__ = [
    "OVERHEAD_CPU_SHARE",
    "REFERENCE_DISK_MBPS",
    "Fault",
    "FaultKind",
    "NodeCapability",
    "NodeCounters",
    "NodeModel",
    "Phase",
    "RunOutcome",
    "TaskDemand",
    "TaskUsage",
    "isolated_duration",
    "noise_factor",
    "predicted_duration",
    "run_alone",
    "straggler_factor",
]
