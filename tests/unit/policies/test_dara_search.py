"""Eq 4.16's search past its enumeration limit (issue 24): ``feasible_vectors`` stops at the limit, the local
search returns a feasible local maximum never above the exhaustive optimum, and DARA and diagnosis say in their
explanations which search gave x*."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.core.model import ClusterSnapshot
from mrsched.policies.dara.model import load_ratios
from mrsched.policies.dara.search import (
    count_feasible,
    feasible_vectors,
    local_search,
    search_assignment,
    search_bounds,
    throughputs,
    too_many_to_enumerate,
)
from tests.unit.policies.test_dara import ALPHA_C, ALPHA_D, fitted_dara, make_job, make_node


def random_instance(rng: np.random.Generator, n: int) -> dict[str, object]:
    """Applications like Table 4.1's: sizes of 5-60 s, CPU-s and MB read+written, 200-3,000 MB per map."""
    return {
        "lam": rng.uniform(5.0, 60.0, n),
        "c": rng.uniform(0.5, 30.0, n),
        "d": rng.uniform(0.0, 500.0, n) * (rng.random(n) < 0.7),
        "mem": rng.choice([230.0, 280.0, 1024.0, 2048.0], n),
        "alpha_c": float(rng.uniform(0.002, 0.02)),
        "alpha_d": float(rng.uniform(0.0005, 0.003)),
        "memory_mb": float(rng.choice([4000.0, 12288.0])),
    }


@pytest.mark.parametrize("seed", range(20))
def test_the_count_is_the_enumerations_and_stops_past_its_limit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    bounds = [int(b) for b in rng.integers(0, 12, n)]
    mem = rng.choice([230.0, 280.0, 1000.0, 1024.0, 2048.0], n)
    cpu = rng.choice([0.5, 1.0, 2.0], n) if seed % 2 else None
    cores = 8.0 if cpu is not None else np.inf
    grid = feasible_vectors(bounds, mem, 6000.0, cpu, cores)
    assert count_feasible(bounds, mem, 6000.0, cpu, cores) == len(grid)
    limit = len(grid) // 2
    assert count_feasible(bounds, mem, 6000.0, cpu, cores, limit) > limit
    assert count_feasible(bounds, mem, 6000.0, cpu, cores, len(grid)) == len(grid)
    assert too_many_to_enumerate(limit, bounds, mem, 6000.0, cpu, cores)
    assert not too_many_to_enumerate(len(grid), bounds, mem, 6000.0, cpu, cores)
    assert not too_many_to_enumerate(None, bounds, mem, 6000.0, cpu, cores)


@pytest.mark.parametrize("seed", range(40))
def test_local_search_is_a_feasible_local_maximum_never_above_the_exhaustive_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, int(rng.integers(2, 5)))
    lam, c, d, mem = inst["lam"], inst["c"], inst["d"], inst["mem"]
    ac, ad, memory = inst["alpha_c"], inst["alpha_d"], inst["memory_mb"]
    exact = search_assignment(lam, c, d, mem, ac, ad, memory)  # type: ignore[arg-type]
    approx = search_assignment(lam, c, d, mem, ac, ad, memory, limit=1)  # type: ignore[arg-type]
    assert exact.exhaustive and not approx.exhaustive
    x = np.array(approx.x, dtype=np.float64)
    rc, rd = load_ratios(c, d)  # type: ignore[arg-type]
    k = c * ac * rc**2 + d * ad * rd**2  # type: ignore[operator]
    grid = feasible_vectors(search_bounds(lam, k, mem, memory, 2.0, 64), mem, memory)  # type: ignore[arg-type]
    assert float(x @ mem) < memory and np.all(x >= 0)

    def value(rows: np.ndarray) -> np.ndarray:
        return throughputs(rows, lam, c, d, ac, ad)  # type: ignore[arg-type]

    found, best = value(x[None])[0], value(np.array([exact.x], dtype=np.float64))[0]
    assert found <= best + 1e-12
    # no single add, drop or move improves on it (within the exhaustive search's own bounds)
    assert grid is not None
    neighbours = grid[np.abs(grid - x).sum(axis=1) <= 2]
    assert value(neighbours).max() <= found * (1 + 1e-12) + 1e-12


def test_local_search_finds_the_separable_optimum() -> None:
    # The A/B pair of test_dara: alone each peaks at 12 and 5 containers and they share no resource, so
    # x* = (12, 5) is reached container by container.
    lam, c, d, mem = (
        np.array([12.0, 10.0]),
        np.array([1.0, 0.0]),
        np.array([0.0, 1.0]),
        np.array([230.0, 280.0]),
    )

    def value(rows: np.ndarray) -> np.ndarray:
        return throughputs(rows, lam, c, d, ALPHA_C, ALPHA_D)

    assert local_search([64, 64], mem, 12288.0, value) == (12, 5)
    # the cores cap binds like the memory cap
    assert sum(local_search([64, 64], mem, 12288.0, value, cpu=np.array([1.0, 1.0]), cores=8.0)) == 8


def test_dara_says_when_its_optimum_came_from_the_local_search() -> None:
    def snapshot() -> ClusterSnapshot:  # assign marks its tasks running: one each
        return ClusterSnapshot(0.0, {"n0": make_node()}, {"n0": []}, [make_job("A", 30), make_job("B", 30)])

    exhaustive = fitted_dara(assignMultiple=True)
    local = fitted_dara(assignMultiple=True, exhaustiveLimit=1)
    exact = exhaustive.assign(snapshot(), "n0")
    approx = local.assign(snapshot(), "n0")
    assert "local search" not in exact[0].explanation.reason
    assert "local search (Eq 4.16 has over 1 mixes" in approx[0].explanation.reason
    # here the local search reaches the same x* = (11, 5)
    assert sorted(p.task.job_id for p in approx) == sorted(p.task.job_id for p in exact)
    assert local.searched_locally == {"n0"} and not exhaustive.searched_locally


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_diagnosis_past_the_limit_finds_the_enumerations_mix_under_the_belief(beta: float) -> None:
    # test_diagnosis's case (one application, a node believed 6x slower on CPU) with the enumeration forbidden:
    # the local search under the belief, and with β > 0 under its EIG bonus, gives the enumeration's x*.
    from mrsched.core.model import Node
    from tests.unit.policies.test_diagnosis import _policy

    found = []
    for limit in (None, 1):
        nodes = {name: Node(name, 8, 12_000.0, node_class="c") for name in ("healthy", "slowed")}
        policy = _policy(exhaustiveLimit=limit, beta=beta)
        policy.fitted_classes = {"c"}
        policy.belief("slowed").mean = np.array([6.0, 1.0])
        policy.belief("slowed").observations = 10
        policy.compute_optimal(nodes, ["j"])
        found.append(policy.optimal)
        assert policy.searched_locally == (set() if limit is None else {"healthy", "slowed"})
    assert found[0] == found[1]
    if beta == 0:
        assert found[1]["slowed"]["j"] < found[1]["healthy"]["j"]


def test_grids_are_kept_read_only_and_within_their_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # feasible_vectors keeps the grids it built (a refit asks again for the same bounds): a repeated call
    # returns the same rows, read-only so that no caller can change what the next one gets; other inputs get
    # their own grid; the kept grids never pass the byte budget, least recently used out first.
    from mrsched.policies.dara import search as dara_search

    monkeypatch.setattr(dara_search, "_GRIDS", type(dara_search._GRIDS)())
    monkeypatch.setattr(dara_search, "_grid_bytes", 0)
    monkeypatch.setattr(dara_search, "_GRID_BUDGET_BYTES", 64 * 1024)
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(1, 5))
        bounds = [int(b) for b in rng.integers(0, 10, n)]
        mem = rng.choice([230.0, 1024.0, 2048.0], n)
        memory = float(rng.choice([4000.0, 12288.0]))
        built = dara_search._build_feasible_vectors(bounds, mem, memory)
        first = feasible_vectors(bounds, mem, memory)
        again = feasible_vectors(list(bounds), mem.copy(), memory)
        assert np.array_equal(first, built) and np.array_equal(again, built)
        assert not again.flags.writeable
        with pytest.raises(ValueError):
            again[0, 0] = 99.0
        assert dara_search._grid_bytes == sum(g.nbytes for g in dara_search._GRIDS.values()) <= 64 * 1024
    assert 0 < len(dara_search._GRIDS) < 60  # some kept, some evicted
