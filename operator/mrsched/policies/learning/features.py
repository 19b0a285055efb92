"""Features of a candidate (job, task type) on a heartbeating node, for seed 000's learning scheduler (Dhok &
Varma, digest §1.3), discretised for Naive Bayes and scaled to [0, 1] for the perceptron.

F = job features of the candidate's map-or-reduce part ⊕ node static features ⊕ node dynamic features. The
paper lists the features but says nothing of how continuous ones are binned or which were used; every choice
below marked **[ours]** follows the digest's recommended table or, where it has none, is ours:

=====  ===================================  ==============================================  ==========
index  feature                              categories                                      |V_i|
=====  ===================================  ==============================================  ==========
0-3    job hints cpu, memory, disk, network  hint 1-10 → 0-9 (paper: 1-10 scale)             10
4      task type [ours]                      map 0, reduce 1 (separates the two candidates)   2
5      cores [ours: cap]                     min(cores, 64)                                  65
6      memory GB [ours: cap]                 round(memory_mb / 1024), capped at 128          129
7      node class [ours: cap]                index in a growing vocabulary, capped at 31     32
8      load1 / cores                         10 equal bins on [0, 2θ) + overflow bin ≥ 2θ    11
9      CPU busy                              10 bins of 10 % (+ unknown)                     11
10     free memory / total memory            10 bins of 0.1 (+ unknown)                      11
11-12  disk, network rate / nominal rate     10 bins of 0.1 + overflow ≥ 1 (+ unknown)       12
13     running tasks on the node             count capped at 16                              17
=====  ===================================  ==============================================  ==========

Static features get a fixed cap because the Naive Bayes tables have a fixed number of features and categories
(|V_i| below). A dynamic value the node lacks (None while its metrics are fresh) is its own "unknown"
category [ours]: None means unknown, never zero. The nominal disk and network rates (``diskBytesPerS``,
``networkBytesPerS``) are options, not in the paper (it does not bin rates at all).

Perceptron inputs [ours; the paper gives no scaling]: hints (h−1)/9, type 0/1, cores/64, GB/128, class
index/31, load ratio/(2θ) capped at 1, CPU busy, free-memory fraction, rates/nominal capped at 1, running/16;
an unknown dynamic value is 0.5 (the middle of its range: neither idle nor busy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mrsched.core.model import ClusterSnapshot, Hints, NodeMetrics, TaskType

MAX_CORES = 64
MAX_MEMORY_GB = 128
MAX_CLASS_INDEX = 31
MAX_RUNNING = 16
BINS = 10

#: |V_i| per feature, in the order of the module docstring's table (CategoricalNB's ``min_categories``).
CARDINALITIES: tuple[int, ...] = (
    10,
    10,
    10,
    10,
    2,
    MAX_CORES + 1,
    MAX_MEMORY_GB + 1,
    MAX_CLASS_INDEX + 1,
    BINS + 1,
    BINS + 1,
    BINS + 1,
    BINS + 2,
    BINS + 2,
    MAX_RUNNING + 1,
)
FEATURE_NAMES: tuple[str, ...] = (
    "cpuHint",
    "memoryHint",
    "diskHint",
    "networkHint",
    "type",
    "cores",
    "memoryGB",
    "nodeClass",
    "loadRatio",
    "cpuBusy",
    "memoryFree",
    "diskRate",
    "networkRate",
    "running",
)
N_FEATURES = len(CARDINALITIES)


@dataclass(frozen=True, slots=True)
class Features:
    """One candidate's feature vector F: categories for NB, scaled values for the perceptron."""

    categories: tuple[int, ...]
    scaled: tuple[float, ...]


def hint_category(value: int) -> int:
    """A 1-10 hint as category 0-9 (out-of-range hints are clamped)."""
    return min(max(int(value), 1), 10) - 1


def bin_unit(value: float, *, overflow: bool) -> int:
    """``value`` on [0, 1) in 10 equal bins; ≥ 1 is the overflow bin (10) when ``overflow``, else bin 9."""
    if value >= 1.0:
        return BINS if overflow else BINS - 1
    return max(0, math.floor(value * BINS))


def load_bin(load_ratio: float, theta: float) -> int:
    """load1/cores in 10 equal bins on [0, 2θ) plus an overflow bin: θ falls on the edge of bins 4 and 5."""
    return bin_unit(load_ratio / (2.0 * theta), overflow=True)


class NodeClasses:
    """A stable vocabulary of node classes: an unseen class gets the next index (capped at 31, which then
    stands for "any later class"); saved in the policy's state so that indices survive restarts."""

    def __init__(self, names: list[str] | None = None) -> None:
        self.names: list[str] = list(names or [])

    def index(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return min(self.names.index(name), MAX_CLASS_INDEX)


def _optional_unit(value: float | None, *, overflow: bool) -> tuple[int, float]:
    """(category, scaled) of a [0, 1]-normalised dynamic value; None is the last (unknown) category, 0.5."""
    unknown = BINS + 1 if overflow else BINS
    if value is None or math.isnan(value):
        return unknown, 0.5
    return bin_unit(max(value, 0.0), overflow=overflow), min(max(value, 0.0), 1.0)


@dataclass(frozen=True, slots=True)
class NodeFeatures:
    """Features 5-13 of a heartbeating node, the same for every candidate of that heartbeat."""

    categories: tuple[int, ...]
    scaled: tuple[float, ...]


def node_features(
    snapshot: ClusterSnapshot,
    node_name: str,
    metrics: NodeMetrics,
    *,
    theta: float,
    classes: NodeClasses,
    disk_rate: float,
    network_rate: float,
) -> NodeFeatures:
    """Features 5-13 of ``node_name`` (digest §1.3); ``metrics.load1`` must be known."""
    node = snapshot.nodes[node_name]
    cores = max(1, node.cores)
    gb = min(round(node.memory_mb / 1024.0), MAX_MEMORY_GB)
    cls = classes.index(node.node_class)
    cats = [min(cores, MAX_CORES), gb, cls]
    scaled = [min(cores, MAX_CORES) / MAX_CORES, gb / MAX_MEMORY_GB, cls / MAX_CLASS_INDEX]
    assert metrics.load1 is not None  # the policy falls back to Fair without it
    ratio = metrics.load1 / cores
    cats.append(load_bin(ratio, theta))
    scaled.append(min(max(ratio / (2.0 * theta), 0.0), 1.0))
    free = None
    if metrics.memory_available_mb is not None and node.memory_mb > 0:
        free = metrics.memory_available_mb / node.memory_mb
    disk = None if metrics.disk_bytes_per_s is None else metrics.disk_bytes_per_s / disk_rate
    net = None if metrics.network_bytes_per_s is None else metrics.network_bytes_per_s / network_rate
    for value, overflow in ((metrics.cpu_utilisation, False), (free, False), (disk, True), (net, True)):
        cat, val = _optional_unit(value, overflow=overflow)
        cats.append(cat)
        scaled.append(val)
    running = min(snapshot.running_on(node_name), MAX_RUNNING)
    cats.append(running)
    scaled.append(running / MAX_RUNNING)
    return NodeFeatures(tuple(cats), tuple(scaled))


def candidate_features(hints: Hints, kind: TaskType, node: NodeFeatures) -> Features:
    """F of a candidate with ``hints`` of task type ``kind`` (features 0-4) on a node's features 5-13."""
    cats = [hint_category(h) for h in (hints.cpu, hints.memory, hints.disk, hints.network)]
    scaled = [c / 9.0 for c in cats]
    cats.append(0 if kind == "map" else 1)
    scaled.append(float(cats[-1]))
    return Features((*cats, *node.categories), (*scaled, *node.scaled))
