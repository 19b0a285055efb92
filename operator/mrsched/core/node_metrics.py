"""Node metrics as every metric-driven policy sees them, wherever they come from.

One module decides what a sample means, for the operator (samples read from Prometheus by
``mrsched.operator.model.nodemetrics``) and the simulator (samples of its own node models,
``mrsched.simulator.scraped_metrics``):
how old it is, and whether a policy may trust it. Policies get a :class:`~mrsched.core.model.NodeMetrics` per
node in ``ClusterSnapshot.metrics``, with a status:

* ``fresh``: the node's latest sample is at most ``max_age_s`` old; its values are current (a value that is
  None is a series the node does not have);
* ``stale``: the node had samples once and has none newer than ``max_age_s`` (exporter down, target dropped);
* ``missing``: no sample of this node was ever seen;
* ``unavailable``: the metrics source itself did not answer this round (Prometheus down).

Only ``fresh`` metrics carry values: everything else reaches policies as *unknown* (None), never as zero, and
each metric-driven policy documents its fallback for unknown nodes (``adaptive-slots`` keeps the last slot
counts; ``learning`` treats the node as unknown to its classifier and places by Fair). docs/metrics.md has
the whole story.

Also here: the kernel's load average (:class:`LoadAverage`), which both the emulator's exporter and the
simulator model the same way (seed 000 relies on its 1-minute damping, digest dhok-varma A10).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mrsched.core.model import NodeMetrics

#: The kernel samples the run queue every 5 s and damps over 1, 5 and 15 minutes.
LOAD_SAMPLE_S = 5.0
LOAD_WINDOWS_S = {"load1": 60.0, "load5": 300.0, "load15": 900.0}
#: The values a sample may carry, as NodeMetrics fields.
FIELDS = ("load1", "cpu_utilisation", "memory_available_mb", "disk_bytes_per_s", "network_bytes_per_s")


class LoadAverage:
    """Linux's load average: load = load·e + n·(1 − e), e = exp(−5 s / window), sampled every 5 s."""

    def __init__(self) -> None:
        self.values = dict.fromkeys(LOAD_WINDOWS_S, 0.0)

    def sample(self, runnable: float, interval_s: float = LOAD_SAMPLE_S) -> None:
        decays = _DECAYS if interval_s == LOAD_SAMPLE_S else _decays(interval_s)
        for key, decay in decays:
            self.values[key] = self.values[key] * decay + runnable * (1.0 - decay)


def _decays(interval_s: float) -> tuple[tuple[str, float], ...]:
    return tuple((key, math.exp(-interval_s / window)) for key, window in LOAD_WINDOWS_S.items())


_DECAYS = _decays(LOAD_SAMPLE_S)  # the kernel's own interval: computed once, not per node per sample


@dataclass(frozen=True, slots=True)
class Sample:
    """One node's values (NodeMetrics field → value, None when the node lacks the series) and when the
    newest of them was taken."""

    sampled_at: float
    values: Mapping[str, float | None]


class MetricsTracker:
    """The latest sample of every node and the statuses derived from it (see the module docstring)."""

    def __init__(self, max_age_s: float = 30.0) -> None:
        self.max_age_s = max_age_s
        self._latest: dict[str, Sample] = {}
        self._finite: dict[str, tuple[Sample, dict[str, float | None]]] = {}  # node -> (sample, its values)
        #: False while the source does not answer; every node then reads ``unavailable``.
        self.available = True

    def record(self, samples: Mapping[str, Sample]) -> None:
        """The source answered: keep each node's newest sample (an older one never replaces a newer)."""
        self.available = True
        for node, sample in samples.items():
            known = self._latest.get(node)
            if known is None or sample.sampled_at >= known.sampled_at:
                self._latest[node] = sample

    def source_down(self) -> None:
        """The source did not answer this round."""
        self.available = False

    def source_up(self) -> None:
        """The source answered, possibly with nothing new (the simulator's Prometheus between scrapes)."""
        self.available = True

    def read(self, nodes: Iterable[str], now: float) -> dict[str, NodeMetrics]:
        return {node: self.node(node, now) for node in nodes}

    def node(self, node: str, now: float) -> NodeMetrics:
        sample = self._latest.get(node)
        age = None if sample is None else max(0.0, now - sample.sampled_at)
        if not self.available:
            return NodeMetrics(status="unavailable", age_s=age)
        if sample is None or age is None:
            return NodeMetrics(status="missing")
        if age > self.max_age_s:
            return NodeMetrics(status="stale", age_s=age)
        kept = self._finite.get(node)
        if kept is None or kept[0] is not sample:
            # Once per sample, not per read: a simulated day reads every node at every heartbeat.
            kept = self._finite[node] = (sample, {f: _finite(sample.values.get(f)) for f in FIELDS})
        return NodeMetrics(**kept[1], age_s=age, status="fresh")


def _finite(value: float | None) -> float | None:
    """NaN (e.g. a rate over a single sample) or infinity is as good as missing."""
    return value if value is not None and math.isfinite(value) else None
