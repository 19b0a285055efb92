"""The pod streams the kube-scheduler peer check replays (issue 49), written to streams/<name>.json.

    python bench/peers/kube-scheduler/streams.py

A stream is what the operator hands kube-scheduler for kube-default jobs: nodes of several sizes; pods, each
with its requests, priority and how long it runs once bound; created at a time (a job's map pods when the job
arrives) or once every pod of a group is bound (``after``: a job's reduce pods,
operator/scheduling/unbound.py:unbound_pods).
Every stream asks for more than the nodes hold at once, so pods fit nowhere for a while and wait, fail and
back off in kube-scheduler's queue. Sizes and times are drawn from a seeded generator: the same files each time.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIZES = {
    "small": (2, 4096),
    "medium": (4, 8192),
    "large": (8, 16384),
}  # cores, MiB: the catalog's dev classes


def nodes(counts: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"name": f"{size}-{i}", "cpu": SIZES[size][0], "memoryMiB": SIZES[size][1]}
        for size, n in counts.items()
        for i in range(n)
    ]


def job(
    rng: random.Random,
    name: str,
    at: float,
    maps: int,
    reduces: int,
    *,
    cpu: float = 1.0,
    memory: int = 1024,
    priority: int = 0,
    map_s: tuple[float, float] = (3.0, 8.0),
    reduce_s: tuple[float, float] = (4.0, 9.0),
) -> list[dict[str, Any]]:
    """A MapReduce job's pods: its maps created at ``at``, its reduces once its maps are all bound."""
    pods = [
        {
            "name": f"{name}-m-{i}",
            "group": f"{name}/map",
            "createS": at,
            "cpu": cpu,
            "memoryMiB": memory,
            "priority": priority,
            "durationS": round(rng.uniform(*map_s), 2),
        }
        for i in range(maps)
    ]
    pods += [
        {
            "name": f"{name}-r-{i}",
            "group": f"{name}/reduce",
            "after": f"{name}/map",
            "cpu": 1.0,
            "memoryMiB": 2048,
            "priority": priority,
            "durationS": round(rng.uniform(*reduce_s), 2),
        }
        for i in range(reduces)
    ]
    return pods


def streams() -> dict[str, dict[str, Any]]:
    rng = random.Random(49)
    out: dict[str, dict[str, Any]] = {}
    out["mapreduce-three-sizes"] = {
        "about": "four MapReduce jobs (1-CPU, 1 GiB maps; reduces once their maps are bound) arriving over 10 s "
        "on five nodes of three sizes (20 cores)",
        "nodes": nodes({"small": 2, "medium": 2, "large": 1}),
        "pods": [
            p
            for i, (at, m, r) in enumerate([(0.0, 24, 4), (3.0, 16, 2), (6.0, 20, 3), (10.0, 12, 2)])
            for p in job(rng, f"j{i}", at, m, r)
        ],
    }
    out["mixed-requests-priorities"] = {
        "about": "jobs of three request shapes (500m/1 GiB, 2 CPU/2 GiB, 1 CPU/6 GiB: fits medium and large "
        "nodes only) and a later job at priority 1000 that overtakes the waiting pods",
        "nodes": nodes({"small": 2, "medium": 1, "large": 1}),
        "priorityClasses": {"mrsched-peer-high": 1000},
        "pods": [
            *job(rng, "half", 0.0, 24, 2, cpu=0.5, memory=1024),
            *job(rng, "double", 2.0, 10, 1, cpu=2.0, memory=2048),
            *job(rng, "wide", 4.0, 8, 1, cpu=1.0, memory=6144, map_s=(6.0, 12.0)),
            *job(rng, "urgent", 8.0, 10, 1, priority=1000, map_s=(2.0, 5.0)),
        ],
    }
    out["bursts-full-cluster"] = {
        "about": "bursts of 30 short pods every 15 s onto two 4-core nodes (8 places): long queues, pods failing "
        "again and again and backing off to 10 s",
        "nodes": nodes({"medium": 2}),
        "pods": [p for i in range(4) for p in job(rng, f"b{i}", 15.0 * i, 30, 0, map_s=(1.0, 3.5))],
    }
    return out


def main() -> int:
    for name, stream in streams().items():
        path = HERE / "streams" / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"name": name, **stream}, indent=1) + "\n")
        print(f"{path}: {len(stream['pods'])} pods on {len(stream['nodes'])} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
