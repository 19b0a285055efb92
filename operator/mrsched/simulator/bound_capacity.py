"""Capacity bounds: the least time to pack every task's pod-time into the nodes' places for pods, with release
dates (:mod:`mrsched.simulator.bounds` combines them).

The fractional relaxation: each task i may be split over nodes n (x_in ≥ 0, Σ_n x_in = 1), holding a share of
node n's places for its least pod-time there (:mod:`mrsched.simulator.bound_tasks`). A node has ``capacity``
of each resource at a time (pods of the smallest request; CPU; memory; or Hadoop's slots) and a task takes
``coefficient`` of it. For every release time R, what is released at or after R must fit between R and T:

    Σ_{pieces q released ≥ R} coef_q · w_qn · x_{i(q)n}  ≤  capacity_n · (T − R)      for every node n

(a reduce is two pieces: what must follow its job's last map, released at a lower bound of that time, and the
rest, released with its job). Any schedule gives a feasible x, so the least T is a lower bound on the makespan.
Solved exactly as an LP (HiGHS) while it is small; past ``EXACT_PAIRS`` (task, node) pairs by its Lagrangian
dual: for node weights y (Σ y_n = 1), T ≥ R + Σ_{q ≥ R} min_n y_n · coef_q · w_qn / capacity_n, for every R —
any y gives a bound, and y_n ∝ capacity_n / (mean w_qn) gives the exact optimum when the tasks are alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

#: The largest number of (task, node) pairs solved as an exact LP (about 20 s at this size here); past it, the
#: Lagrangian bound (a few seconds for the SWIM day's 4.4 million pairs).
EXACT_PAIRS = 200_000
#: Release times past this many are coarsened (every subset of them still gives a bound).
MAX_THRESHOLDS = 80
#: What is taken off an LP's optimum to stay below the true optimum (HiGHS's tolerances are about 1e-7).
LP_MARGIN = 1e-6


@dataclass(frozen=True)
class Pieces:
    """Work to pack: per piece its task row, release time and least pod-time on each node."""

    row: np.ndarray
    release: np.ndarray
    weight: np.ndarray  # pieces × nodes


@dataclass(frozen=True)
class Resource:
    """One kind of place on the nodes: how much each node has and each task row takes (by row index)."""

    capacity: np.ndarray  # per node
    coefficient: np.ndarray  # per task row


def _thresholds(release: np.ndarray) -> np.ndarray:
    values = np.unique(release)
    if len(values) > MAX_THRESHOLDS:  # keep the first, the last and evenly spread ones between
        values = values[np.unique(np.linspace(0, len(values) - 1, MAX_THRESHOLDS).round().astype(int))]
    return values


def exact(pieces: Pieces, resources: list[Resource], rows: np.ndarray) -> float:
    """The LP's optimum (module docstring) less :data:`LP_MARGIN`, over the task ``rows`` every piece's ``row``
    is one of; NaN when it cannot be solved."""
    n_rows, n_nodes = len(rows), pieces.weight.shape[1]
    local = {int(r): i for i, r in enumerate(rows)}
    thresholds = _thresholds(pieces.release)
    m = len(thresholds)
    # A piece counts from the last threshold at or before its release (coarsened thresholds stay a bound).
    group = np.searchsorted(thresholds, pieces.release, side="right") - 1
    n_x = n_rows * n_nodes
    n_c = len(resources) * n_nodes * m
    size = n_x + n_c + 1

    def c_index(res: int, node: int, k: int) -> int:
        return int(n_x + (res * n_nodes + node) * m + k)

    eq_rows: list[int] = []
    eq_cols: list[int] = []
    eq_vals: list[float] = []
    ub_rows: list[int] = []
    ub_cols: list[int] = []
    ub_vals: list[float] = []
    ub_rhs: list[float] = []
    eq = 0
    for res, resource in enumerate(resources):
        for node in range(n_nodes):
            base = eq  # equality row of (res, node, k) is base + k
            for k in range(m):
                eq_rows.append(base + k)
                eq_cols.append(c_index(res, node, k))
                eq_vals.append(1.0)
                if k + 1 < m:
                    eq_rows.append(base + k)
                    eq_cols.append(c_index(res, node, k + 1))
                    eq_vals.append(-1.0)
                ub_rows.append(len(ub_rhs))
                ub_cols.append(c_index(res, node, k))
                ub_vals.append(1.0)
                ub_rows.append(len(ub_rhs))
                ub_cols.append(size - 1)
                ub_vals.append(-float(resource.capacity[node]))
                ub_rhs.append(-float(resource.capacity[node]) * float(thresholds[k]))
            coef = resource.coefficient[pieces.row] * pieces.weight[:, node]
            keep = coef > 0
            eq_rows.extend((base + group[keep]).tolist())
            eq_cols.extend(
                np.array([local[int(r)] for r in pieces.row[keep]], dtype=np.int64) * n_nodes + node
            )
            eq_vals.extend((-coef[keep]).tolist())
            eq += m
    assign = n_rows
    a_rows = np.repeat(np.arange(assign), n_nodes) + eq
    a_cols = np.arange(n_x)
    a_eq = sparse.csr_matrix(
        (
            np.concatenate([np.array(eq_vals, dtype=float), np.ones(n_x)]),
            (
                np.concatenate([np.array(eq_rows, dtype=np.int64), a_rows]),
                np.concatenate([np.array(eq_cols), a_cols]),
            ),
        ),
        shape=(eq + assign, size),
    )
    b_eq = np.concatenate([np.zeros(eq), np.ones(assign)])
    a_ub = sparse.csr_matrix((ub_vals, (ub_rows, ub_cols)), shape=(len(ub_rhs), size))
    objective = np.zeros(size)
    objective[-1] = 1.0
    result = linprog(objective, A_ub=a_ub, b_ub=np.array(ub_rhs), A_eq=a_eq, b_eq=b_eq, bounds=(0, None))
    if not result.success:
        return float("nan")
    return float(result.x[-1]) * (1.0 - LP_MARGIN)


def _weights(mean_weight: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """y_n ∝ capacity_n / mean pod-time there (nodes that hold nothing get none), summing to 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where((capacity > 0) & (mean_weight > 0), capacity / mean_weight, 0.0)
    total = y.sum()
    return y / total if total > 0 else y


def least_shares(
    weight: np.ndarray, coefficient: np.ndarray, resource: Resource, y: np.ndarray
) -> np.ndarray:
    """Per piece, min_n y_n · coef · w_n / capacity_n (nodes with no capacity excluded): its Lagrangian share."""
    usable = resource.capacity > 0
    scaled = weight[:, usable] * (y[usable] / resource.capacity[usable])
    shares: np.ndarray = coefficient * scaled.min(axis=1)
    return shares


def lagrangian(pieces: Pieces, resources: list[Resource]) -> float:
    """The Lagrangian bound of the module docstring, with y from the pieces' mean pod-times."""
    best = 0.0
    order = np.argsort(pieces.release, kind="stable")
    release = pieces.release[order]
    for resource in resources:
        if not (resource.capacity > 0).any():
            continue
        y = _weights(pieces.weight.mean(axis=0), resource.capacity)
        shares = least_shares(pieces.weight, resource.coefficient[pieces.row], resource, y)[order]
        after = np.cumsum(shares[::-1])[::-1]  # what is released at or after each piece's release
        best = max(best, float((release + after).max()))
    return best


def capacity_bound(pieces: Pieces, resources: list[Resource], rows: np.ndarray) -> tuple[float, str]:
    """The exact LP while ``rows`` × nodes is at most :data:`EXACT_PAIRS`, else the Lagrangian bound; and
    which it was."""
    if not len(pieces.row):
        return 0.0, "none"
    if len(rows) * pieces.weight.shape[1] <= EXACT_PAIRS:
        value = exact(pieces, resources, rows)
        if not np.isnan(value):
            return max(value, lagrangian(pieces, resources)), "lp"
    return lagrangian(pieces, resources), "lagrangian"


def per_job(
    weight: np.ndarray,
    group: np.ndarray,
    groups: int,
    resources: list[Resource],
    coefficients: list[np.ndarray],
) -> np.ndarray:
    """Per group (a job's maps, or its reduces' post parts) the least time to pack them alone on the empty
    cluster: the Lagrangian bound with y from the group's own mean pod-times (exact for alike tasks)."""
    out = np.zeros(groups)
    if not len(group):
        return out
    counts = np.bincount(group, minlength=groups).astype(float)
    sums = np.zeros((groups, weight.shape[1]))
    np.add.at(sums, group, weight)
    means = sums / np.maximum(counts, 1.0)[:, None]
    for resource, coefficient in zip(resources, coefficients, strict=True):
        usable = resource.capacity > 0
        if not usable.any():
            continue
        ys = np.array([_weights(means[g], resource.capacity) for g in range(groups)])
        scaled = weight[:, usable] * (ys[group][:, usable] / resource.capacity[usable])
        shares = coefficient * scaled.min(axis=1)
        out = np.maximum(out, np.bincount(group, weights=shares, minlength=groups))
    return out
