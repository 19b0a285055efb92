"""Apache Hadoop's Scheduler Load Simulator (SLS) 3.3.5 as a peer (issue 22): run the real YARN Fair or Capacity
scheduler on an SLS trace, and read each job's completion time back.

    python bench/peers/sls/sls_peer.py --trace T.json --cluster C.json --scheduler fair --out DIR

``C.json`` says the cluster and the scheduler's queues (:class:`Cluster`); the harness writes SLS's own files
from it (the node file, sls-runner.xml, yarn-site.xml, fair-scheduler.xml with its allocation file, or
capacity-scheduler.xml), runs ``SLSRunner`` under ``timeout`` with a lock (SLS binds fixed ports), and writes
``DIR/jobs.json``: per trace job, SLS's start and end (ms from the run's first job start) and its completion
time. Traps met running SLS here: Java 17 needs the ``--add-opens`` of :data:`OPENS`, or SLS hangs; the
scheduler's settings go in sls-runner.xml; ``yarn.sls.metrics.switch`` must be ON for jobruntime.csv; a job
it cannot parse makes it wait for ever (hence the timeout). The scheduler semantics are the real ones
(hadoop-yarn-server-resourcemanager's FairScheduler and CapacityScheduler, wrapped by SLS).

SLS runs in wall-clock time (no speed-up exists): a trace's span plus a few seconds.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from mrsched.simulator.traces.jsonrecords import read_records

HERE = Path(__file__).resolve().parent
VERSION = "3.3.5"
CACHE = Path(os.environ.get("MRSCHED_CACHE", Path.home() / ".cache" / "mrsched")) / f"sls-{VERSION}"
LIB = CACHE / "lib"
LOCK = CACHE / "run.lock"
#: Java 17 closes these packages; SLS's RM web app (Guice, cglib) and Hadoop's reflection need them open,
#: without which SLS hangs.
OPENS = [
    "java.base/java.lang",
    "java.base/java.lang.reflect",
    "java.base/java.io",
    "java.base/java.net",
    "java.base/java.nio",
    "java.base/java.util",
    "java.base/java.util.concurrent",
    "java.base/java.util.concurrent.atomic",
    "java.base/sun.nio.ch",
    "java.base/sun.nio.cs",
    "java.base/sun.security.action",
    "java.base/sun.util.calendar",
]
SCHEDULERS = {
    "fair": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
    "capacity": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
}


class PeerError(RuntimeError):
    """SLS could not be fetched or run, or its output could not be read."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    rack: str
    memory_mb: int
    vcores: int


@dataclass(frozen=True)
class QueueSpec:
    """One leaf queue under root. Fair: ``weight``; Capacity: ``capacity`` and ``maxCapacity`` in percent of the
    cluster, ``userLimitFactor``; both: ``maxAMShare`` (Fair's; Capacity's is the cluster-wide AM percent)."""

    name: str
    weight: float = 1.0
    capacity: float | None = None
    max_capacity: float = 100.0
    user_limit_factor: float = 1.0
    max_am_share: float = 0.5


@dataclass(frozen=True)
class Cluster:
    """The nodes and queues of a comparison, as the harness's JSON says them (keys in camelCase)::

    {"nodes": [{"name": "n1", "rack": "r1", "memoryMB": 4096, "vcores": 4}, ...],
     "queues": [{"name": "sls_queue_1", "weight": 1, "capacity": 50}, ...],
     "amMemoryMB": 1024, "amVcores": 1, "containerMemoryMB": 1024, "containerVcores": 1,
     "heartbeatMS": 1000, "preemption": false, "maxAMResourcePercent": 0.1}
    """

    nodes: list[NodeSpec]
    queues: list[QueueSpec]
    am_memory_mb: int = 1024
    am_vcores: int = 1
    container_memory_mb: int = 1024
    container_vcores: int = 1
    heartbeat_ms: int = 1000
    preemption: bool = False
    max_am_resource_percent: float = 0.1
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Cluster:
        def num(obj: dict[str, object], key: str, default: float) -> float:
            value = obj.get(key, default)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise PeerError(f"{key} must be a number, not {value!r}")
            return float(value)

        nodes_raw = data.get("nodes")
        queues_raw = data.get("queues")
        if not isinstance(nodes_raw, list) or not nodes_raw:
            raise PeerError("the cluster needs a non-empty list of nodes")
        if not isinstance(queues_raw, list) or not queues_raw:
            raise PeerError("the cluster needs a non-empty list of queues")
        try:
            nodes = [
                NodeSpec(
                    str(n["name"]), str(n.get("rack", "default-rack")), int(n["memoryMB"]), int(n["vcores"])
                )
                for n in nodes_raw
            ]
            queues = [
                QueueSpec(
                    str(q["name"]),
                    weight=num(q, "weight", 1.0),
                    capacity=num(q, "capacity", 0.0) if "capacity" in q else None,
                    max_capacity=num(q, "maxCapacity", 100.0),
                    user_limit_factor=num(q, "userLimitFactor", 1.0),
                    max_am_share=num(q, "maxAMShare", 0.5),
                )
                for q in queues_raw
            ]
        except KeyError as missing:
            raise PeerError(
                f"every node needs name, memoryMB and vcores, every queue a name: {missing} is missing"
            ) from None
        except (TypeError, ValueError) as bad:
            raise PeerError(f"a node or queue of the cluster is malformed: {bad}") from None
        return cls(
            nodes,
            queues,
            am_memory_mb=int(num(data, "amMemoryMB", 1024)),
            am_vcores=int(num(data, "amVcores", 1)),
            container_memory_mb=int(num(data, "containerMemoryMB", 1024)),
            container_vcores=int(num(data, "containerVcores", 1)),
            heartbeat_ms=int(num(data, "heartbeatMS", 1000)),
            preemption=bool(data.get("preemption", False)),
            max_am_resource_percent=num(data, "maxAMResourcePercent", 0.1),
        )


# --- SLS's files ---------------------------------------------------------------------------------------


def _configuration(properties: dict[str, object]) -> str:
    rows = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(str(v))}</value></property>\n"
        for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def node_file(cluster: Cluster) -> str:
    """SLS's node file: one ``{"rack": ..., "nodes": [{"node": ..., "memory-mb": ..., "vcores": ...}]}`` per
    rack, concatenated (SLSUtils.parseNodesFromNodeFile)."""
    racks: dict[str, list[NodeSpec]] = {}
    for node in cluster.nodes:
        racks.setdefault(node.rack, []).append(node)
    return "".join(
        json.dumps(
            {
                "rack": rack,
                "nodes": [{"node": n.name, "memory-mb": n.memory_mb, "vcores": n.vcores} for n in members],
            },
            indent=1,
        )
        + "\n"
        for rack, members in racks.items()
    )


def config_files(cluster: Cluster, scheduler: str) -> dict[str, str]:
    """Every file SLS reads from its configuration folder (first on the classpath), by name."""
    if scheduler not in SCHEDULERS:
        raise PeerError(f"scheduler must be one of {sorted(SCHEDULERS)}, not {scheduler!r}")
    top = max(cluster.nodes, key=lambda n: (n.memory_mb, n.vcores))
    runner: dict[str, object] = {
        "yarn.sls.runner.pool.size": 100,
        "yarn.sls.nm.memory.mb": top.memory_mb,
        "yarn.sls.nm.vcores": top.vcores,
        "yarn.sls.nm.heartbeat.interval.ms": cluster.heartbeat_ms,
        "yarn.sls.am.heartbeat.interval.ms": cluster.heartbeat_ms,
        "yarn.sls.am.type.mapreduce": "org.apache.hadoop.yarn.sls.appmaster.MRAMSimulator",
        "yarn.sls.am.container.memory": cluster.am_memory_mb,
        "yarn.sls.am.container.vcores": cluster.am_vcores,
        "yarn.sls.container.memory.mb": cluster.container_memory_mb,
        "yarn.sls.container.vcores": cluster.container_vcores,
        "yarn.sls.metrics.switch": "ON",  # jobruntime.csv is written by the metrics code
        "yarn.sls.metrics.web.address.port": 10001,
        "yarn.resourcemanager.scheduler.class": SCHEDULERS[scheduler],
        SCHEDULERS["fair"]: "org.apache.hadoop.yarn.sls.scheduler.FairSchedulerMetrics",
        SCHEDULERS["capacity"]: "org.apache.hadoop.yarn.sls.scheduler.CapacitySchedulerMetrics",
    }
    site: dict[str, object] = {
        "yarn.resourcemanager.scheduler.class": SCHEDULERS[scheduler],
        "yarn.resourcemanager.webapp.address": "localhost:18088",
        "yarn.resourcemanager.resource-tracker.address": "localhost:18031",
        "yarn.resourcemanager.scheduler.address": "localhost:18030",
        "yarn.resourcemanager.address": "localhost:18032",
        "yarn.resourcemanager.admin.address": "localhost:18033",
        "hadoop.security.token.service.use_ip": "false",
        "yarn.scheduler.minimum-allocation-mb": min(cluster.am_memory_mb, cluster.container_memory_mb),
        "yarn.scheduler.maximum-allocation-mb": top.memory_mb,
        "yarn.scheduler.maximum-allocation-vcores": top.vcores,
    }
    files: dict[str, str] = {}
    if scheduler == "fair":
        fair = {
            "yarn.scheduler.fair.allocation.file": "fair-scheduler-allocation.xml",
            "yarn.scheduler.fair.preemption": str(cluster.preemption).lower(),
            "yarn.scheduler.fair.assignmultiple": "true",
            "yarn.scheduler.fair.user-as-default-queue": "false",
            "yarn.scheduler.fair.allow-undeclared-pools": "false",
        }
        runner |= fair
        site |= fair
        queues = "".join(
            f'  <queue name="{escape(q.name)}">\n    <weight>{q.weight:g}</weight>\n'
            f"    <maxAMShare>{q.max_am_share:g}</maxAMShare>\n  </queue>\n"
            for q in cluster.queues
        )
        files["fair-scheduler.xml"] = _configuration(fair)
        files["fair-scheduler-allocation.xml"] = (
            f'<?xml version="1.0"?>\n<allocations>\n{queues}</allocations>\n'
        )
    else:
        given = [q.capacity for q in cluster.queues if q.capacity is not None]
        rest = [q for q in cluster.queues if q.capacity is None]
        share = (100.0 - sum(given)) / len(rest) if rest else 0.0
        capacity: dict[str, object] = {
            "yarn.scheduler.capacity.root.queues": ",".join(q.name for q in cluster.queues),
            "yarn.scheduler.capacity.maximum-am-resource-percent": cluster.max_am_resource_percent,
            "yarn.scheduler.capacity.maximum-applications": 10000,
        }
        for q in cluster.queues:
            prefix = f"yarn.scheduler.capacity.root.{q.name}"
            capacity[f"{prefix}.capacity"] = f"{q.capacity if q.capacity is not None else share:g}"
            capacity[f"{prefix}.maximum-capacity"] = f"{q.max_capacity:g}"
            capacity[f"{prefix}.user-limit-factor"] = f"{q.user_limit_factor:g}"
        files["capacity-scheduler.xml"] = _configuration(capacity)
    files["sls-runner.xml"] = _configuration(runner | cluster.extra)
    files["yarn-site.xml"] = _configuration(site)
    files["log4j.properties"] = (
        "log4j.rootLogger=INFO, file\n"
        "log4j.appender.file=org.apache.log4j.FileAppender\n"
        "log4j.appender.file.File=${sls.log}\n"
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.file.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n\n"
    )
    return files


# --- SLS's output ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlsJob:
    """One trace job as SLS ran it: ``start_ms`` and ``end_ms`` from the run's first job start."""

    job_id: str
    start_ms: int
    end_ms: int

    @property
    def completion_s(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0


def trace_keys(trace: Path) -> dict[tuple[int, int], str]:
    """(job.start.ms, job.end.ms) -> job.id for every job of an SLS trace (read by the simulator's own reader
    of concatenated JSON objects). SLS copies the pair back into jobruntime.csv as real_start_time,
    real_end_time: the only link from its YARN application ids to the trace's jobs, so the pairs must be
    unique."""
    keys: dict[tuple[int, int], str] = {}
    for job in read_records(trace):
        if not job.has("job.tasks"):
            continue  # a cluster header such as {"num.nodes": ..}
        pair = (job.integer("job.start.ms"), job.integer("job.end.ms", -1))
        name = job.text("job.id", str(len(keys)))
        if pair in keys:
            raise PeerError(f"jobs {keys[pair]} and {name} share job.start.ms/job.end.ms {pair}")
        keys[pair] = name
    return keys


def parse_jobruntime(csv_text: str, keys: dict[tuple[int, int], str]) -> list[SlsJob]:
    """SLS 3.3.5's jobruntime.csv (``JobID,real_start_time,real_end_time,simulate_start_time,
    simulate_end_time``; simulate_* in epoch ms) as trace jobs, times from the earliest simulated start. 3.3.5
    writes most apps twice about a second apart (YARN-10427): the first row is the RM's finish, the one kept."""
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    if not rows or "simulate_end_time" not in rows[0]:
        raise PeerError("jobruntime.csv has no rows, or not the columns of SLS 3.3.5")
    first: dict[str, dict[str, str]] = {}
    for row in rows:
        first.setdefault(row["JobID"], row)
    by_job: dict[str, tuple[int, int]] = {}
    for row in first.values():
        pair = (int(row["real_start_time"]), int(row["real_end_time"]))
        job_id = keys.get(pair)
        if job_id is None:
            raise PeerError(f"jobruntime.csv row {row['JobID']} matches no trace job by {pair}")
        by_job[job_id] = (int(row["simulate_start_time"]), int(row["simulate_end_time"]))
    missing = sorted(set(keys.values()) - set(by_job))
    if missing:
        raise PeerError(f"SLS reported no completion for {len(missing)} jobs: {missing[:5]}")
    origin = min(start for start, _ in by_job.values())
    return sorted(
        (SlsJob(j, start - origin, end - origin) for j, (start, end) in by_job.items()),
        key=lambda job: (job.start_ms, job.job_id),
    )


# --- running it ------------------------------------------------------------------------------------------


def fetch(lib: Path = LIB) -> Path:
    """hadoop-sls 3.3.5 and its run-time dependencies into ``lib`` with Maven (once; about 194 jars)."""
    if lib.is_dir() and any(lib.glob("hadoop-sls-*.jar")):
        return lib
    lib.mkdir(parents=True, exist_ok=True)
    command = ["mvn", "-q", "-B", "-f", str(HERE / "pom.xml"), "dependency:copy-dependencies"]
    command += ["-DincludeScope=runtime", f"-DoutputDirectory={lib}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not any(lib.glob("hadoop-sls-*.jar")):
        raise PeerError(
            f"mvn could not fetch hadoop-sls {VERSION}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return lib


def convert_rumen(rumen: Path, jobs_out: Path, nodes_out: Path) -> None:
    """Hadoop's own ``RumenToSLSConverter`` (in hadoop-sls): a Rumen trace into an SLS trace and SLS's node file.
    Each task attempt becomes a container of its recorded start and end, on its recorded host."""
    lib = fetch()
    for path in (jobs_out, nodes_out):
        path.unlink(missing_ok=True)  # the converter refuses to overwrite
    command = ["java", "-cp", f"{lib}/*", "org.apache.hadoop.yarn.sls.RumenToSLSConverter"]
    command += ["-input", str(rumen), "-outputJobs", str(jobs_out), "-outputNodes", str(nodes_out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0 or not jobs_out.exists():
        raise PeerError(
            f"RumenToSLSConverter failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )


@contextmanager
def _port_lock() -> Iterator[None]:
    """SLS binds fixed ports (the RM's 18030-18033, 18088, its web UI 10001): one run at a time."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(
    trace: Path, cluster: Cluster, scheduler: str, out: Path, timeout_s: float
) -> tuple[list[SlsJob], float, int]:
    """SLS on ``trace`` with ``cluster`` under ``scheduler``: its per-job times, the run's wall seconds and the
    containers the ResourceManager preempted (:func:`preempted_containers` of its log)."""
    lib = fetch()
    out.mkdir(parents=True, exist_ok=True)
    conf = out / "conf"
    conf.mkdir(exist_ok=True)
    for name, text in config_files(cluster, scheduler).items():
        (conf / name).write_text(text)
    nodes = out / "nodes.json"
    nodes.write_text(node_file(cluster))
    sls_out = out / "sls"
    sls_out.mkdir(exist_ok=True)
    log = out / "sls.log"
    command = [
        "java",
        *(f"--add-opens={module}=ALL-UNNAMED" for module in OPENS),
        "-Duser.timezone=UTC",
        f"-Dsls.log={log}",
        "-Xmx1g",
        "-cp",
        f"{conf}:{lib}/*",
        "org.apache.hadoop.yarn.sls.SLSRunner",
        "-tracetype",
        "SLS",
        "-tracelocation",
        str(trace),
        "-nodes",
        str(nodes),
        "-output",
        str(sls_out),
    ]
    with _port_lock():
        began = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as expired:
            raise PeerError(
                f"SLS did not finish in {timeout_s:.0f} s (a job it could not parse?): see {log}"
            ) from expired
        wall = time.monotonic() - began
    (out / "stdout.txt").write_text(done.stdout + done.stderr)
    csv_path = sls_out / "jobruntime.csv"
    if done.returncode != 0 or not csv_path.exists():
        raise PeerError(f"SLS exited {done.returncode} without jobruntime.csv: see {out / 'stdout.txt'}")
    return (
        parse_jobruntime(csv_path.read_text(), trace_keys(trace)),
        wall,
        preempted_containers(log.read_text()),
    )


def preempted_containers(log_text: str) -> int:
    """Containers the ResourceManager preempted in a run, summed over its ApplicationSummary log lines
    (``preemptedAMContainers`` and ``preemptedNonAMContainers`` of each finished application)."""
    found = re.findall(r"preempted(?:AM|NonAM)Containers=(\d+)", log_text)
    if not found:
        raise PeerError("the SLS log has no ApplicationSummary lines: was it a complete run at INFO level?")
    return sum(int(n) for n in found)


def result_json(
    scheduler: str, jobs: list[SlsJob], wall_s: float, preempted: int | None = None
) -> dict[str, object]:
    """What the harness keeps of a run (``jobs.json``): per trace job, SLS's start, end and completion time;
    and how many containers the ResourceManager preempted (YARN mode does not model preemption)."""
    return {
        "scheduler": scheduler,
        "slsVersion": VERSION,
        "wallS": round(wall_s, 1),
        **({"preemptedContainers": preempted} if preempted is not None else {}),
        "jobs": [
            {"id": j.job_id, "startMS": j.start_ms, "endMS": j.end_ms, "completionS": j.completion_s}
            for j in jobs
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--cluster", type=Path, required=True)
    parser.add_argument("--scheduler", choices=sorted(SCHEDULERS), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    cluster = Cluster.from_json(json.loads(args.cluster.read_text()))
    jobs, wall, preempted = run(args.trace, cluster, args.scheduler, args.out, args.timeout)
    result = result_json(args.scheduler, jobs, wall, preempted)
    (args.out / "jobs.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"SLS {args.scheduler}: {len(jobs)} jobs in {wall:.0f} s of wall time -> {args.out / 'jobs.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
