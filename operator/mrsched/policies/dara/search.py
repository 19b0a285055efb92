"""COMPUTE_OPTIMAL_ASSIGNMENT (seed 002, Gupta thesis, Eq 4.16): each node's mix x*, the container count per
application that maximises the node's predicted throughput (Eq 4.9 with Eq 4.12's task times) under its memory
cap. The thesis enumerates every feasible vector (:func:`feasible_vectors`); the count grows exponentially with
the applications mixed, so past a limit [ours] a local search stands in (:func:`local_search`),
measured against the enumeration by bench/dara_search_gap.py."""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mrsched.policies.dara.model import Vector, load_ratios, single_app_optimum

#: The grids :func:`feasible_vectors` built last, by their exact inputs, within a byte budget: a refit or a
#: node's moved belief asks again for the grid of the same bounds (in a whole SWIM day, 13,311 builds of
#: 737 distinct grids, 11 % of diagnosis's run). Least recently used first out.
_GRIDS: OrderedDict[tuple[object, ...], Vector] = OrderedDict()
_GRID_BUDGET_BYTES = 64 * 2**20
_grid_bytes = 0
_grid_lock = threading.Lock()  # kopf runs sync handlers in threads


def feasible_vectors(
    bounds: list[int], mem: Vector, memory_mb: float, cpu: Vector | None = None, cores: float = math.inf
) -> Vector:
    """Every integer vector 0 ≤ x_j ≤ bounds[j] with Σ_j mem_j x_j < memory_mb (the memory cap of §4.3.1),
    as rows in lexicographic order (read-only: the array may be shared with later calls of the same inputs).

    [Kubernetes, ours] With ``cpu`` (each application's CPU request per container) also Σ_j cpu_j x_j ≤
    ``cores``: the kubelet admits a node's pods only while their requests fit its allocatable, so a mix past it
    cannot run (and the search stays small on a large node: a mix of 8 one-core containers over 4 applications
    is 495 vectors, where the memory cap alone allows 65^4)."""
    global _grid_bytes
    key = (tuple(bounds), mem.tobytes(), memory_mb, None if cpu is None else cpu.tobytes(), cores)
    with _grid_lock:
        grid = _GRIDS.get(key)
        if grid is not None:
            _GRIDS.move_to_end(key)
            return grid
    grid = _build_feasible_vectors(bounds, mem, memory_mb, cpu, cores)
    grid.flags.writeable = False
    if grid.nbytes <= _GRID_BUDGET_BYTES:
        with _grid_lock:
            if key not in _GRIDS:
                _GRIDS[key] = grid
                _grid_bytes += grid.nbytes
                while _grid_bytes > _GRID_BUDGET_BYTES:
                    _grid_bytes -= _GRIDS.popitem(last=False)[1].nbytes
    return grid


def _build_feasible_vectors(
    bounds: list[int], mem: Vector, memory_mb: float, cpu: Vector | None = None, cores: float = math.inf
) -> Vector:
    """:func:`feasible_vectors`, built one application at a time, dropping infeasible prefixes early."""
    grid = np.zeros((1, 0), dtype=np.float64)
    used = np.zeros(1, dtype=np.float64)
    used_cpu = np.zeros(1, dtype=np.float64)
    for j, bound in enumerate(bounds):
        values = np.arange(bound + 1, dtype=np.float64)
        rows = np.repeat(np.arange(len(grid)), len(values))
        column = np.tile(values, len(grid))
        total = used[rows] + column * mem[j]
        total_cpu = used_cpu[rows] + (column * cpu[j] if cpu is not None else 0.0)
        keep = (total < memory_mb) & (total_cpu <= cores + 1e-9)
        grid = np.column_stack([grid[rows[keep]], column[keep]])
        used = total[keep]
        used_cpu = total_cpu[keep]
    return grid


def count_feasible(
    bounds: list[int],
    mem: Vector,
    memory_mb: float,
    cpu: Vector | None = None,
    cores: float = math.inf,
    limit: int | None = None,
) -> int:
    """How many rows :func:`feasible_vectors` returns, without building them: the same prefix-by-prefix
    construction over the distinct (memory, CPU) sums of the prefixes, each with how many prefixes reach it (the
    same float sums, so the same prefixes are kept). The count only grows as applications are added (a
    feasible prefix's zero extension stays feasible), so past ``limit`` it stops and returns what it has."""
    used = np.zeros(1, dtype=np.float64)
    used_cpu = np.zeros(1, dtype=np.float64)
    ways = np.ones(1, dtype=np.int64)
    for j, bound in enumerate(bounds):
        values = np.arange(bound + 1, dtype=np.float64)
        rows = np.repeat(np.arange(len(used)), len(values))
        column = np.tile(values, len(used))
        total = used[rows] + column * mem[j]
        total_cpu = used_cpu[rows] + (column * cpu[j] if cpu is not None else 0.0)
        keep = (total < memory_mb) & (total_cpu <= cores + 1e-9)
        if cpu is None:  # one sum per prefix: a 1-D unique (the 2-D one is several times slower)
            used, index = np.unique(total[keep], return_inverse=True)
            used_cpu = np.zeros(len(used))
        else:
            sums, index = np.unique(
                np.column_stack([total[keep], total_cpu[keep]]), axis=0, return_inverse=True
            )
            used, used_cpu = sums[:, 0], sums[:, 1]
        ways = np.bincount(index.ravel(), weights=ways[rows[keep]], minlength=len(used)).astype(np.int64)
        if limit is not None and int(ways.sum()) > limit:
            break
    return int(ways.sum())


def too_many_to_enumerate(
    limit: int | None,
    bounds: list[int],
    mem: Vector,
    memory_mb: float,
    cpu: Vector | None = None,
    cores: float = math.inf,
) -> bool:
    """Whether :func:`feasible_vectors` would return more than ``limit`` rows (never, with no limit); counted
    only where the bounds alone allow more."""
    if limit is None or math.prod(b + 1 for b in bounds) <= limit:
        return False
    cpu_bytes = None if cpu is None else np.asarray(cpu, dtype=np.float64).tobytes()
    return _counted_past(
        tuple(bounds), np.asarray(mem, dtype=np.float64).tobytes(), memory_mb, cpu_bytes, cores, limit
    )


@functools.lru_cache(maxsize=4096)
def _counted_past(
    bounds: tuple[int, ...], mem: bytes, memory_mb: float, cpu: bytes | None, cores: float, limit: int
) -> bool:
    """:func:`too_many_to_enumerate`'s count, kept by its exact inputs (the arrays as float64 bytes), as the grids
    are: the same bounds recur from one recomputation to the next."""
    return (
        count_feasible(
            list(bounds),
            np.frombuffer(mem),
            memory_mb,
            None if cpu is None else np.frombuffer(cpu),
            cores,
            limit,
        )
        > limit
    )


def throughputs(grid: Vector, lam: Vector, c: Vector, d: Vector, alpha_c: float, alpha_d: float) -> Vector:
    """Eq 4.16's summand for every row x of ``grid``: Σ_j λ_j x_j / t_j(x), t_j of Eq 4.12 at x's loads."""
    rc, rd = load_ratios(c, d)
    lc = grid @ rc
    ld = grid @ rd
    t = lam[None, :] + c[None, :] * alpha_c * lc[:, None] ** 2 + d[None, :] * alpha_d * ld[:, None] ** 2
    return np.asarray(np.sum(np.where(grid > 0, lam[None, :] * grid / np.where(t > 0, t, 1.0), 0.0), axis=1))


def search_bounds(
    lam: Vector, k: Vector, mem: Vector, memory_mb: float, bound_factor: float, max_per_app: int
) -> list[int]:
    """Each x_j's bound in the search: the memory cap, ``max_per_app`` and ``bound_factor``·sqrt(λ_j/K_j) + 2
    (digest §4.1.5/4.1.6; K_j the load coefficient of j alone on the node)."""
    bounds = []
    for j in range(len(lam)):
        cap = math.ceil(memory_mb / mem[j]) if mem[j] > 0 else max_per_app
        opt = single_app_optimum(float(lam[j]), float(k[j]))
        model_bound = math.ceil(bound_factor * opt) + 2 if math.isfinite(opt) else max_per_app
        bounds.append(max(0, min(cap, max_per_app, model_bound)))
    return bounds


@dataclass(frozen=True)
class Assignment:
    """A node's mix x* and how it was found: ``exhaustive`` (the thesis's enumeration of every feasible
    vector, the exact argmax) or not (:func:`local_search` [ours], where the enumeration would pass its
    limit)."""

    x: tuple[int, ...]
    exhaustive: bool


#: The local search's exchange: one container of a held application for up to this many of another, so that a
#: large container can give way to several small ones under the memory cap. Measured on 300 random thesis-like
#: mixes: exchanges of one alone (no extra starts) left a worst case at 0.39 of the optimum, up to four with the
#: extra starts 0.97 (bench/results/dara-search-gap.txt, 1,000 mixes: 0.935 at worst, 0.9996 on average).
EXCHANGE = 4
#: Besides x = 0, the local search also starts from the best single-application mixes of the applications whose
#: mixes alone are best, so that a mix of few applications is reached even where x = 0's ascent fills the node
#: with others first.
EXTRA_STARTS = 2


def local_search(
    bounds: list[int],
    mem: Vector,
    memory_mb: float,
    value: Callable[[Vector], Vector],
    cpu: Vector | None = None,
    cores: float = math.inf,
) -> tuple[int, ...]:
    """[Ours] Steepest ascent of ``value`` over the vectors :func:`feasible_vectors` would enumerate,
    for mixes of too many applications to enumerate (the count grows exponentially with them: a whole SWIM
    day runs dozens of jobs at once). Each step takes the best neighbour — one container more of any
    application, one fewer of any held, or one of a held application exchanged for 1 to :data:`EXCHANGE` of
    another — and an ascent stops where none improves (by more than a relative 1e-12, so that float noise
    cannot cycle). Ascents start from x = 0 and from the :data:`EXTRA_STARTS` best single-application mixes;
    the best end wins (the earlier on a tie). A local maximum, not necessarily x*: bench/dara_search_gap.py
    measures the gap where the enumeration still runs."""
    n = len(bounds)
    top = np.asarray(bounds, dtype=np.float64)
    eye = np.eye(n)

    def fits(rows: Vector) -> npt.NDArray[np.bool_]:
        """The rows under the memory cap (and the cores by request), as :func:`feasible_vectors` keeps them."""
        ok = rows @ mem < memory_mb
        return ok & (rows @ cpu <= cores + 1e-9) if cpu is not None else ok

    def feasible(rows: Vector) -> Vector:
        ok = np.all(rows >= 0, axis=1) & np.all(rows <= top[None, :], axis=1) & fits(rows)
        return np.asarray(rows[ok], dtype=np.float64)

    def ascend(x: Vector) -> tuple[Vector, float]:
        best = float(value(x[None, :])[0])
        while True:
            held = eye[x > 0]
            exchanges = [
                (r * eye[None, :, :] - held[:, None, :]).reshape(-1, n) for r in range(1, EXCHANGE + 1)
            ]
            steps = np.vstack([eye, -held, *exchanges])
            candidates = feasible(x[None, :] + steps[np.any(steps > 0, axis=1) | (steps.sum(axis=1) < 0)])
            if len(candidates) == 0:
                return x, best
            values = value(candidates)
            i = int(np.argmax(values))
            if not values[i] - best > 1e-12 * max(1.0, abs(best)):
                return x, best
            x, best = candidates[i], float(values[i])

    # every single-application mix at once: app j's rows are 0..bounds[j] containers of j alone
    owner = np.repeat(np.arange(n), np.asarray(bounds) + 1)
    counts = np.concatenate([np.arange(b + 1) for b in bounds]).astype(np.float64)
    single = np.zeros((len(owner), n))
    single[np.arange(len(owner)), owner] = counts
    single_values = np.where(fits(single) & (counts > 0), value(single), -np.inf)
    first = np.concatenate([[0], np.cumsum(np.asarray(bounds) + 1)])
    best_row = [int(first[j] + np.argmax(single_values[first[j] : first[j + 1]])) for j in range(n)]
    ranked = sorted(range(n), key=lambda j: (-single_values[best_row[j]], j))
    starts = [np.zeros(n)] + [
        single[best_row[j]] for j in ranked[:EXTRA_STARTS] if np.isfinite(single_values[best_row[j]])
    ]
    found, found_value = ascend(starts[0])
    for start in starts[1:]:
        x, v = ascend(start)
        if v - found_value > 1e-12 * max(1.0, abs(found_value)):
            found, found_value = x, v
    return tuple(int(v) for v in found)


def search_assignment(
    lam: Vector,
    c: Vector,
    d: Vector,
    mem: Vector,
    alpha_c: float,
    alpha_d: float,
    memory_mb: float,
    *,
    bound_factor: float = 2.0,
    max_per_app: int = 64,
    cpu: Vector | None = None,
    cores: float = math.inf,
    limit: int | None = None,
) -> Assignment:
    """COMPUTE_OPTIMAL_ASSIGNMENT (Eq 4.16): the integer vector x ≥ 0 with Σ_j mem_j x_j < memory_mb that
    maximises Σ_j λ_j x_j / t_j(x) under Eq 4.12, by exhaustive search — while it has at most ``limit``
    vectors to enumerate (None: always); past it, by :func:`local_search` (ours), and the result says so.

    Each x_j is bounded by :func:`search_bounds` (see the module docstring). Ties go to the first vector in
    lexicographic order (fewest containers of app 0...). On a by-requests node the mix also keeps to its cores
    by CPU request (``cpu``, ``cores``: :func:`feasible_vectors`).
    """
    n = len(lam)
    if n == 0:
        return Assignment((), True)
    rc, rd = load_ratios(c, d)
    k = c * alpha_c * rc**2 + d * alpha_d * rd**2
    bounds = search_bounds(lam, k, mem, memory_mb, bound_factor, max_per_app)
    if too_many_to_enumerate(limit, bounds, mem, memory_mb, cpu, cores):

        def value(rows: Vector) -> Vector:
            return throughputs(rows, lam, c, d, alpha_c, alpha_d)

        return Assignment(local_search(bounds, mem, memory_mb, value, cpu, cores), False)
    grid = feasible_vectors(bounds, mem, memory_mb, cpu, cores)
    best = int(np.argmax(throughputs(grid, lam, c, d, alpha_c, alpha_d)))
    return Assignment(tuple(int(v) for v in grid[best]), True)
