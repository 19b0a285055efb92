"""Placement policies: Hadoop's baselines, kube-scheduler's default, greedy-informed, and the papers' policies.

Each policy's module (by family: ``hadoop/``, ``yarn/``, ``kube/``, one module or package per paper) registers
it by name; :func:`make_policy` builds one with validated options.
"""

from __future__ import annotations

from typing import Any

from mrsched.core.policy import Policy, TruePhysics, build_policy, registered

# Registration: importing a policy module registers its policy (one line per module).
from mrsched.policies import (
    adaptive_slots,  # noqa: F401
    coupling,  # noqa: F401
    dara,  # noqa: F401
    learning,  # noqa: F401
)
from mrsched.policies import greedy_informed as _greedy_informed  # noqa: F401
from mrsched.policies.diagnosis import policy as _diagnosis  # noqa: F401
from mrsched.policies.hadoop import capacity, fair, fifo  # noqa: F401
from mrsched.policies.kube import default as _kube_default  # noqa: F401
from mrsched.policies.lsps import policy as _lsps  # noqa: F401
from mrsched.policies.mrsched import policy as _mrsched  # noqa: F401
from mrsched.policies.throughput import policy as _throughput  # noqa: F401


def make_policy(
    name: str, options: dict[str, Any] | None = None, *, seed: int = 0, truth: TruePhysics | None = None
) -> Policy:
    """A policy by name; unknown names and bad options raise PolicyConfigError naming them."""
    return build_policy(name, options, seed=seed, truth=truth)


def policy_names() -> list[str]:
    return sorted(registered())
