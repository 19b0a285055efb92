"""How far DARA's local search (ours, issue 24) falls from Eq 4.16's exhaustive argmax, where both run:

    python bench/dara_search_gap.py [--out bench/results/dara-search-gap.txt]

Eq 4.16 is searched exhaustively while it has at most ``exhaustiveLimit`` vectors to enumerate and by
``dara.search.local_search`` past it (a whole SWIM day mixes dozens of jobs at once, and the enumeration grows
exponentially with them). Past the limit there is no exact optimum to compare with, so the gap is measured on
the instances where the enumeration still runs, with the local search forced (limit 0):

* the Eq 4.16 searches DARA itself made in replays of the thesis's workloads and of the first four hours of the
  SWIM day (seed 1), each distinct search once;
* random mixes of 2-6 applications like Table 4.1's (sizes 5-60 s, 0.5-30 CPU-s, 0-500 MB read+written per
  map, 230-2,048 MB per map, α's around the thesis's), on 4,000 and 12,288 MB nodes.

Printed per set: the share of searches where the local search finds the same vector, and the ratio of its Eq
4.16 objective to the optimum's (mean, 5th percentile, worst); and each search's time. Last, how many of DARA's
searches on the whole SWIM day (seed 1, swim-day-100-nodes's limit of 200,000) went past the limit.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from swim_cut import SWIM_DAY, four_hours

import mrsched.policies.dara.optimiser as dara_optimiser
from mrsched.policies.dara.search import Assignment, search_assignment, throughputs
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
#: The replays whose searches are measured: (scenario, mode). WL14-16's searches enumerate up to 2 million
#: vectors each and take minutes to replay; WL10, 12 and 13 already hold three- and four-application mixes.
REPLAYS = [
    ("dara-wl10", "hadoop"),
    ("dara-wl12", "hadoop"),
    ("dara-wl13", "hadoop"),
    ("dara-wl13", "kubernetes"),
    ("swim-day-100-nodes", "hadoop"),
]


@dataclass(frozen=True)
class Instance:
    """One Eq 4.16 search: search_assignment's arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def key(self) -> str:
        digest = hashlib.sha1()
        for value in (*self.args, *sorted(self.kwargs.items())):
            digest.update(repr(value.tolist() if isinstance(value, np.ndarray) else value).encode())
        return digest.hexdigest()


def recorded_searches(scenario_name: str, mode: str) -> list[Instance]:
    """The distinct Eq 4.16 searches DARA makes in one replay (seed 1) of ``scenario_name``."""
    seen: dict[str, Instance] = {}
    real = dara_optimiser.search_assignment

    def recording(*args: Any, **kwargs: Any) -> Assignment:
        instance = Instance(args, {k: v for k, v in kwargs.items() if k != "limit"})
        if len(args[0]) > 0:  # no application to mix: nothing to search
            seen.setdefault(instance.key(), instance)
        return real(*args, **kwargs)

    dara_optimiser.search_assignment = recording  # type: ignore[assignment]
    try:
        scenario = load_scenario(ROOT / "bench" / "scenarios" / f"{scenario_name}.yaml")
        if scenario_name == SWIM_DAY:
            scenario = four_hours(scenario)  # the day's first four hours, searched exhaustively (swim_cut.py)
        run_scenario(scenario, ["dara"], [1], mode=mode, with_bound=False)  # type: ignore[arg-type]
    finally:
        dara_optimiser.search_assignment = real  # type: ignore[assignment]
    return list(seen.values())


def whole_day_share() -> tuple[int, int]:
    """DARA's Eq 4.16 searches on the whole SWIM day (seed 1) under the scenario's limit: (all, local)."""
    counts = [0, 0]
    real = dara_optimiser.search_assignment

    def counting(*args: Any, **kwargs: Any) -> Assignment:
        found = real(*args, **kwargs)
        counts[0] += 1
        counts[1] += not found.exhaustive
        return found

    dara_optimiser.search_assignment = counting  # type: ignore[assignment]
    try:
        scenario = load_scenario(ROOT / "bench" / "scenarios" / f"{SWIM_DAY}.yaml")
        run_scenario(scenario, ["dara"], [1], mode="hadoop", with_bound=False)
    finally:
        dara_optimiser.search_assignment = real  # type: ignore[assignment]
    return counts[0], counts[1]


def random_searches(count: int, seed: int = 0) -> list[Instance]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.integers(2, 7))
        args = (
            rng.uniform(5.0, 60.0, n),
            rng.uniform(0.5, 30.0, n),
            rng.uniform(0.0, 500.0, n) * (rng.random(n) < 0.7),
            rng.choice([230.0, 280.0, 1024.0, 2048.0], n),
            float(rng.uniform(0.002, 0.02)),
            float(rng.uniform(0.0005, 0.003)),
            float(rng.choice([4000.0, 12288.0])),
        )
        out.append(Instance(args, {}))
    return out


def gap(instances: list[Instance]) -> dict[str, float]:
    ratios, same, exact_s, local_s = [], 0, 0.0, 0.0
    for inst in instances:
        lam, c, d, _, alpha_c, alpha_d, _ = inst.args
        started = time.perf_counter()
        exact = search_assignment(*inst.args, **inst.kwargs)
        exact_s += time.perf_counter() - started
        started = time.perf_counter()
        local = search_assignment(*inst.args, **inst.kwargs, limit=0)
        local_s += time.perf_counter() - started
        assert exact.exhaustive and not local.exhaustive
        values = throughputs(np.array([exact.x, local.x], dtype=np.float64), lam, c, d, alpha_c, alpha_d)
        if values[1] > values[0] * (1 + 1e-9) + 1e-12:  # a bound: nothing beats the enumeration's argmax
            raise AssertionError(f"local search above the exhaustive optimum: {inst}")
        ratios.append(float(values[1] / values[0]) if values[0] > 0 else 1.0)
        same += exact.x == local.x
    r = np.array(ratios)
    return {
        "searches": len(instances),
        "same": same / len(instances),
        "mean": float(r.mean()),
        "p5": float(np.percentile(r, 5)),
        "worst": float(r.min()),
        "exact_ms": 1000 * exact_s / len(instances),
        "local_ms": 1000 * local_s / len(instances),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dara-search-gap.txt")
    parser.add_argument("--random", type=int, default=1000, help="random mixes (default 1000)")
    args = parser.parse_args()
    sets = [
        (f"{name} ({mode}, seed 1): DARA's own searches", recorded_searches(name, mode))
        for name, mode in REPLAYS
    ]
    sets.append((f"{args.random} random mixes of 2-6 applications", random_searches(args.random)))
    lines = [
        "DARA's Eq 4.16: local search (forced) against the exhaustive argmax, where the enumeration runs",
        "command: python bench/dara_search_gap.py",
        "",
        f"{'set':<62} {'searches':>8} {'same x':>7} {'mean':>7} {'p5':>7} {'worst':>7} {'exact':>9} {'local':>9}",
    ]
    for label, instances in sets:
        g = gap(instances)
        lines.append(
            f"{label:<62} {g['searches']:>8} {g['same']:>7.1%} {g['mean']:>7.4f} {g['p5']:>7.4f} "
            f"{g['worst']:>7.4f} {g['exact_ms']:>7.2f}ms {g['local_ms']:>7.2f}ms"
        )
        print(lines[-1], flush=True)
    searches, local = whole_day_share()
    lines += [
        "",
        f"whole SWIM day (swim-day-100-nodes, hadoop, seed 1, exhaustiveLimit 200,000): {searches} Eq 4.16 "
        f"searches by DARA, {local} ({local / max(searches, 1):.1%}) past the limit, by the local search",
        "mean, p5, worst: the local search's Eq 4.16 objective over the exhaustive optimum's (1 = optimal);",
        "exact, local: each search's mean time on this machine.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
