"""Write seed 004's Table II workload (bench/scenarios/yao-four-users.yaml's job list) and its variant with one
user's job sizes made highly variable (bench/scenarios/yao-four-users-variable.yaml).

The draw is the one documented in yao-four-users.yaml's header (this script reproduces that file's job list
exactly); the variant draws user 2's PiEstimator jobs with a heavy-tailed map count (2-phase hyper-exponential,
mean 20 maps as Table II, CV 3) instead of 20 maps each, and leaves every other job as it is. Its purpose: LsPS
(seed 004 §II-C) must see user 2's coefficient of variation pass 1 and switch that user from FIFO to Fair,
and still beat FIFO and Fair overall.

Run: python bench/generators/yao_four_users.py [--check] (deterministic; --check compares with the files).
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
USERS = (  # user, app, jobs, mean gap s, mean size MB (None: no input), gap kind, size kind
    ("user1", "wordcount", 150, 20.0, 100.0, "h2", "exp"),
    ("user2", "pi", 100, 30.0, None, "uniform", None),
    ("user3", "grep", 30, 100.0, 500.0, "exp", "h2"),
    ("user4", "sort", 5, 600.0, 2048.0, "exp", "exp-capped"),
)
SORT_CAP_MB = 10240.0
PI_MAPS = 20


def h2(rng: random.Random, mean: float, cv: float = 3.0) -> float:
    """Balanced-means 2-phase hyper-exponential with the given mean and coefficient of variation."""
    p = 0.5 * (1 + math.sqrt((cv * cv - 1) / (cv * cv + 1)))
    if rng.random() < p:
        return rng.expovariate(2 * p / mean)
    return rng.expovariate(2 * (1 - p) / mean)


def draw(variable_user2: bool) -> list[dict[str, object]]:
    rng = random.Random("yao-lsps-table2")
    jobs: list[dict[str, object]] = []
    for user, app, count, gap_mean, size_mean, gap_kind, size_kind in USERS:
        gaps, sizes = [], []
        for i in range(count):
            if i:
                if gap_kind == "h2":
                    gaps.append(h2(rng, gap_mean))
                elif gap_kind == "uniform":
                    gaps.append(rng.uniform(0, 2 * gap_mean))
                else:
                    gaps.append(rng.expovariate(1 / gap_mean))
            if size_kind == "exp":
                sizes.append(rng.expovariate(1 / size_mean))  # type: ignore[operator]
            elif size_kind == "h2":
                sizes.append(h2(rng, size_mean))  # type: ignore[arg-type]
            elif size_kind == "exp-capped":
                sizes.append(min(rng.expovariate(1 / size_mean), SORT_CAP_MB))  # type: ignore[operator]
        # [ours] scale so the sample means equal Table II's
        scale = gap_mean / (sum(gaps) / len(gaps))
        gaps = [g * scale for g in gaps]
        if sizes:
            size_scale = size_mean / (sum(sizes) / len(sizes))  # type: ignore[operator]
            sizes = [
                min(s * size_scale, SORT_CAP_MB) if size_kind == "exp-capped" else s * size_scale
                for s in sizes
            ]
        t = 0.0
        pi_maps = _variable_pi_maps(count) if (variable_user2 and app == "pi") else None
        for i in range(count):
            if i:
                t += gaps[i - 1]
            entry: dict[str, object] = {"id": f"u{user[-1]}-{app}-{i + 1:03d}", "app": app, "user": user}
            entry["submitS"] = round(t, 1)
            if sizes:
                maps = max(1, math.ceil(sizes[i] / 64))
                entry.update(
                    maps=maps, reduces=11 if app == "sort" else 1, inputMBPerMap=round(sizes[i] / maps, 1)
                )
            else:
                entry.update(maps=pi_maps[i] if pi_maps else PI_MAPS, reduces=1, inputMBPerMap=0)
            jobs.append(entry)
    return jobs


def _variable_pi_maps(count: int) -> list[int]:
    """User 2's map counts for the variant: heavy-tailed (H2, CV 3), scaled to Table II's mean of 20 maps."""
    rng = random.Random("yao-lsps-table2-variable-user2")
    raw = [h2(rng, PI_MAPS) for _ in range(count)]
    scale = PI_MAPS / (sum(raw) / len(raw))
    return [max(1, round(r * scale)) for r in raw]


def job_lines(jobs: list[dict[str, object]]) -> list[str]:
    out = []
    for j in jobs:
        fields = ", ".join(f"{k}: {v}" for k, v in j.items())
        out.append(f"    - {{{fields}}}")
    return out


def replace_jobs(text: str, lines: list[str]) -> str:
    """The scenario text with its job list replaced (everything between 'jobs:' and the next top-level key)."""
    head, _, rest = text.partition("  jobs:\n")
    tail_start = next(
        i for i, line in enumerate(rest.splitlines(keepends=True)) if not line.startswith("    ")
    )
    tail = "".join(rest.splitlines(keepends=True)[tail_start:])
    return head + "  jobs:\n" + "\n".join(lines) + "\n" + tail


def main() -> int:
    check = "--check" in sys.argv
    status = 0
    for name, variable in (("yao-four-users", False), ("yao-four-users-variable", True)):
        path = SCENARIOS / f"{name}.yaml"
        text = replace_jobs(path.read_text(), job_lines(draw(variable)))
        if check:
            if text != path.read_text():
                print(f"{path} differs from the draw")
                status = 1
        else:
            path.write_text(text)
            print(f"wrote {path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
