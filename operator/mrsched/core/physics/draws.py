"""Deterministic draws: a task's log-normal noise factor and its straggler slowdown.

Noise: each task's work is scaled by a log-normal factor with the node's σ, drawn deterministically from the
seed, the node and the task id.
"""

from __future__ import annotations

import _random  # random.Random's C generator: noise_factor
import hashlib
import math

_TWO_PI = 2.0 * math.pi  # random.TWOPI


def straggler_factor(
    seed: int, node: str, task_id: str, probability: float, shape: float, cap: float
) -> float:
    """1, or with ``probability`` a Pareto(``shape``) slowdown capped at ``cap``: the same for the same (seed,
    node, attempt), drawn apart from the noise (a speculative copy of a straggler on another node is no
    straggler, unless it draws one there)."""
    if probability <= 0:
        return 1.0
    digest = hashlib.blake2b(f"{seed}/{node}/{task_id}/straggler".encode(), digest_size=8).digest()
    rng = _random.Random(int.from_bytes(digest, "big"))
    if rng.random() >= probability:
        return 1.0
    return min(cap, float((1.0 - rng.random()) ** (-1.0 / shape)))


def noise_factor(seed: int, node: str, task_id: str, sigma: float) -> float:
    """Log-normal work multiplier with median 1, the same for the same (seed, node, task)."""
    if sigma <= 0:
        return 1.0
    digest = hashlib.blake2b(f"{seed}/{node}/{task_id}".encode(), digest_size=8).digest()
    # random.Random(n).gauss(0, sigma), unrolled on the C generator the class wraps: the same Mersenne Twister
    # state and the same two uniforms (tests/unit/core/test_physics.py pins it), without the Python-level seed and
    # gauss wrappers, which cost as much as the draw itself; the lower bound draws one per task and node.
    rng = _random.Random(int.from_bytes(digest, "big"))
    x2pi = rng.random() * _TWO_PI
    g2rad = math.sqrt(-2.0 * math.log(1.0 - rng.random()))
    return math.exp(math.cos(x2pi) * g2rad * sigma)
