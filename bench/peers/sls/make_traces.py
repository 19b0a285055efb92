"""The SLS comparison's traces (issue 22), written from a fixed seed so that they are the same on every machine:

    python bench/peers/sls/make_traces.py   # writes bench/peers/sls/traces/<name>.json and <name>.cluster.json

Three shapes, each under ten minutes of simulated time (SLS runs in wall-clock time), on one cluster of
8 nodes x 4 containers (4096 MB, 4 vcores; containers of 1024 MB, 1 vcore) on 2 racks:

* ``one-queue``: 14 jobs of mixed sizes (4-40 maps of 8-40 s, 1-4 reduces) into one queue, one every 12 s.
* ``two-queues``: two contended queues of equal share, one user with 3 long jobs (48 maps of 45-60 s), the
  other with 20 short ones (4 maps of 8-12 s, one reduce), one every 12 s: the shape on which our Fair and
  Capacity were found far from SLS's.
* ``tiny-burst``: 60 jobs of 1-3 maps of 2-5 s (and one reduce of 2-3 s), all submitted within 30 s.
* ``rumen-derived``: an SLS trace made by Hadoop's own ``RumenToSLSConverter`` from a Rumen trace
  (``rumen-derived.rumen.json``: job history as Rumen writes it, each task attempt with its start, finish and
  host; 16 jobs of two users into two queues, one every 10 s, with 6-24 maps of 10-30 s and 1-3 reduces).
  This machine has no job history of a real cluster to feed Rumen, so the Rumen trace is ours; the conversion
  is Hadoop's (``sls_peer.convert_rumen``).

A job's ``job.end.ms`` is only a label here (SLS copies it back into jobruntime.csv, and the harness tells
jobs apart by their start and end pair); task hosts spread over the nodes round-robin.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sls_peer  # noqa: E402

from mrsched.simulator.traces.jsonrecords import read_records  # noqa: E402

OUT = HERE / "traces"
NODES = [
    {"name": f"node{i}", "rack": f"rack{(i - 1) // 4 + 1}", "memoryMB": 4096, "vcores": 4}
    for i in range(1, 9)
]


def _host(k: int) -> str:
    node = NODES[k % len(NODES)]
    return f"/{node['rack']}/{node['name']}"


def _job(
    job_id: str, queue: str, user: str, start_ms: int, maps: list[int], reduces: list[int], k: int
) -> dict[str, Any]:
    tasks = [
        {
            "container.host": _host(k + i),
            "container.duration.ms": d,
            "container.priority": 20,
            "container.type": "map",
        }
        for i, d in enumerate(maps)
    ]
    tasks += [
        {
            "container.host": _host(k + i),
            "container.duration.ms": d,
            "container.priority": 10,
            "container.type": "reduce",
        }
        for i, d in enumerate(reduces)
    ]
    end = start_ms + max(maps) + max(reduces, default=0)
    return {
        "am.type": "mapreduce",
        "job.start.ms": start_ms,
        "job.end.ms": end + k,  # unique (start, end) pairs: the label that maps SLS's rows back to jobs
        "job.queue.name": queue,
        "job.id": job_id,
        "job.user": user,
        "job.tasks": tasks,
    }


def one_queue(rng: random.Random) -> list[dict[str, Any]]:
    jobs = []
    for k in range(14):
        maps = [rng.randint(8_000, 40_000) for _ in range(rng.randint(4, 40))]
        reduces = [rng.randint(5_000, 20_000) for _ in range(rng.randint(1, 4))]
        jobs.append(_job(f"job_{k:02d}", "sls_queue_1", "alice", k * 12_000, maps, reduces, k))
    return jobs


def two_queues(rng: random.Random) -> list[dict[str, Any]]:
    jobs = []
    for k in range(3):
        maps = [rng.randint(45_000, 60_000) for _ in range(48)]
        reduces = [rng.randint(10_000, 20_000) for _ in range(2)]
        jobs.append(_job(f"long_{k}", "sls_queue_1", "long", k * 20_000, maps, reduces, k))
    for k in range(20):
        maps = [rng.randint(8_000, 12_000) for _ in range(4)]
        jobs.append(_job(f"short_{k:02d}", "sls_queue_2", "short", 5_000 + k * 12_000, maps, [5_000], 3 + k))
    return sorted(jobs, key=lambda j: (j["job.start.ms"], j["job.id"]))


def tiny_burst(rng: random.Random) -> list[dict[str, Any]]:
    jobs = []
    for k in range(60):
        maps = [rng.randint(2_000, 5_000) for _ in range(rng.randint(1, 3))]
        reduces = [rng.randint(2_000, 3_000)]
        start = rng.randint(0, 30_000)
        jobs.append(_job(f"tiny_{k:02d}", "sls_queue_1", "alice", start, maps, reduces, k))
    return sorted(jobs, key=lambda j: (j["job.start.ms"], j["job.id"]))


def _rumen_tasks(k: int, kind: str, durations: list[int], begin: int) -> list[dict[str, Any]]:
    """Job ``k``'s Rumen ``LoggedTask`` records of one kind, all begun at ``begin``, one successful attempt each on
    a node in turn."""
    out = []
    for i, d in enumerate(durations):
        node = NODES[(k + i) % len(NODES)]
        attempt = {
            "hostName": f"/{node['rack']}/{node['name']}",
            "startTime": begin,
            "finishTime": begin + d,
            "result": "SUCCESS",
            "attemptID": f"attempt_{k:04d}_{kind[0]}_{i:06d}_0",
        }
        out.append(
            {
                "taskID": f"task_1795000000000_{k:04d}_{kind[0]}_{i:06d}",
                "taskType": kind.upper(),
                "startTime": begin,
                "finishTime": begin + d,
                "attempts": [attempt],
                "taskStatus": "SUCCESS",
            }
        )
    return out


def rumen(rng: random.Random) -> list[dict[str, Any]]:
    """Rumen ``LoggedJob`` records (the fields RumenToSLSConverter reads), times in ms from an epoch instant."""
    epoch = 1_795_000_000_000
    jobs = []
    for k in range(16):
        submit = epoch + k * 10_000
        started = submit + 2_000
        queue, user = ("sls_queue_1", "etl") if k % 3 else ("sls_queue_2", "adhoc")

        maps = [rng.randint(10_000, 30_000) for _ in range(rng.randint(6, 24))]
        reduces = [rng.randint(5_000, 15_000) for _ in range(rng.randint(1, 3))]
        map_end = started + max(maps)
        finish = map_end + max(reduces) + 1_000 + k  # unique (start, end) pairs, as for the other traces
        jobs.append(
            {
                "priority": "NORMAL",
                "jobID": f"job_1795000000000_{k:04d}",
                "user": user,
                "jobName": "wordcount" if k % 2 else "terasort",
                "submitTime": submit,
                "finishTime": finish,
                "queue": queue,
                "mapTasks": _rumen_tasks(k, "map", maps, started),
                "reduceTasks": _rumen_tasks(k, "reduce", reduces, map_end),
                "outcome": "SUCCESS",
            }
        )
    return jobs


RUMEN_QUEUES = [{"name": "sls_queue_1", "capacity": 70}, {"name": "sls_queue_2", "capacity": 30}]

TRACES = {
    "one-queue": (one_queue, [{"name": "sls_queue_1"}]),
    "two-queues": (
        two_queues,
        [{"name": "sls_queue_1", "capacity": 50}, {"name": "sls_queue_2", "capacity": 50}],
    ),
    "tiny-burst": (tiny_burst, [{"name": "sls_queue_1"}]),
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, (make, queues) in TRACES.items():
        jobs = make(random.Random(f"issue-22-{name}"))
        (OUT / f"{name}.json").write_text("".join(json.dumps(job, indent=1) + "\n" for job in jobs))
        (OUT / f"{name}.cluster.json").write_text(
            json.dumps({"nodes": NODES, "queues": queues}, indent=1) + "\n"
        )
        print(f"{name}: {len(jobs)} jobs")
    source = OUT / "rumen-derived.rumen.json"
    source.write_text(
        "".join(json.dumps(job, indent=1) + "\n" for job in rumen(random.Random("issue-22-rumen")))
    )
    with tempfile.TemporaryDirectory() as tmp:
        nodes_out = Path(tmp) / "nodes.json"
        sls_peer.convert_rumen(source, OUT / "rumen-derived.json", nodes_out)
        converted = {
            (rack.data["rack"].strip("/"), node["node"])
            for rack in read_records(nodes_out)
            for node in rack.data["nodes"]
        }
    named = {(node["rack"], node["name"]) for node in NODES}
    if converted - named:
        raise SystemExit(f"the converter's nodes {sorted(converted - named)} are not the trace's cluster's")
    (OUT / "rumen-derived.cluster.json").write_text(
        json.dumps({"nodes": NODES, "queues": RUMEN_QUEUES}, indent=1) + "\n"
    )
    print(f"rumen-derived: {source.name} converted by RumenToSLSConverter")


if __name__ == "__main__":
    main()
