"""Score plugins of kube-scheduler's default profile that tell these pods' nodes apart, in its integer
arithmetic (CPU in millicores, memory in bytes), and NodeResourcesFit's filter on requests. The default
profile's other scores are the same on every node for task pods (no affinities, topology spread or images to
tell nodes apart), so their sum ranks nodes as the real kube-scheduler v1.35 does, ties included
(``make bench-kube-peer`` compares)."""

from __future__ import annotations

from typing import Protocol


def _millis(cpu: float) -> int:
    return round(cpu * 1000)


def _bytes(memory_mb: float) -> int:
    return round(memory_mb * 1_000_000)


class ResourceScore(Protocol):
    name: str

    def score(self, cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> int:
        """0-100 for a node with ``cpu_used`` / ``mem_used`` requested, the pod's own included."""


class LeastAllocated:
    """NodeResourcesFit's LeastAllocated: Σ_r ((allocatable − requested)·100 // allocatable) over CPU and
    memory, weight 1 each, // 2 (``leastRequestedScore``)."""

    name = "NodeResourcesFit"

    def score(self, cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> int:
        allocatable, requested = (_millis(cpu_cap), _bytes(mem_cap)), (_millis(cpu_used), _bytes(mem_used))
        least = sum(
            ((a - r) * 100) // a if 0 <= r <= a and a > 0 else 0
            for r, a in zip(requested, allocatable, strict=True)
        )
        return least // 2


class BalancedAllocation:
    """NodeResourcesBalancedAllocation: int((1 − |f_cpu − f_mem| / 2)·100), f the requested fractions
    (``balancedResourceScorer``: one minus the standard deviation of the two)."""

    name = "NodeResourcesBalancedAllocation"

    def score(self, cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> int:
        allocatable, requested = (_millis(cpu_cap), _bytes(mem_cap)), (_millis(cpu_used), _bytes(mem_used))
        fractions = [min(1.0, r / a) if a > 0 else 1.0 for r, a in zip(requested, allocatable, strict=True)]
        return int((1 - abs(fractions[0] - fractions[1]) / 2) * 100)


def requests_fit(cpu_cap: float, mem_cap: float, cpu_used: float, mem_used: float) -> bool:
    """NodeResourcesFit's filter: requests (the pod's own included) within allocatable."""
    return cpu_used <= cpu_cap + 1e-9 and mem_used <= mem_cap + 1e-9


#: kube-scheduler's default profile's scores that differ between our task pods' nodes, weight 1 each.
DEFAULT_SCORES: tuple[ResourceScore, ...] = (LeastAllocated(), BalancedAllocation())
