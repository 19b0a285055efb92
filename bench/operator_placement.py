"""Pods placed per second by the operator's scheduling loop, on the real local control plane with 200 nodes:

    python bench/operator_placement.py [--nodes 200] [--map-slots 8] [--jobs 10] [--maps-per-job 200]
        [--create-workers 8,32] [--out bench/results/operator-placement.txt] [--profile /tmp/round.prof]

One local cluster (kube-apiserver, etcd, controller manager, kube-scheduler, kwok, Prometheus) and one node
emulator in model mode with ``--nodes`` nodes of class ``large`` (8 cores, 16 GiB), renewing their Leases every
10 s as a kubelet does (node grace 50 s). The operator's ``SchedulingLoop`` runs in this process on the
operator's own ``ClusterApi``, its rounds called back to back (the operator waits for the heartbeat or a watch
event between rounds; here the loop's own capacity is measured), once per ``--create-workers`` value; an
unreported warm-up run comes first. For each scenario: ``--jobs`` wordcount jobs of
``--maps-per-job`` maps, each map 64 GiB of model input so that no task ends during the run; rounds run until
every map slot (``--map-slots`` per node) holds a pod, then ``--idle-rounds`` rounds that place nothing (slots
full, maps still pending: the steady-state cost of a heartbeat), then the scenario's pods are deleted.

Measured:

* pods/s (loop): pods created / summed duration of the rounds that created them;
* pods/s (end to end): pods created / time from the first round's start to the last create's answer;
* round duration of placing rounds and of idle rounds (p50, p95, max), with the reads/policy/writes split;
* placement latency per pod: from the policy's decision (``schedule_round`` returned) to the create call's
  answer, when the pod exists bound to its node (``spec.nodeName``: there is no separate binding); and from the
  decision to the pod's ``Running`` status written by the emulated kubelet (seen through a watch);
* CPU seconds of every process during the placing rounds (two cores shared by everything).

Aim: >= 200 pods/s.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import multiprocessing
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from mrsched.emulator.kube import KubeClient
from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.kubeclient import api_client
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION, PLURAL
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.scheduling.loop import SchedulingLoop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_harness import LiveBench, common_arguments, machine, pct, wordcount_job

REPO = Path(__file__).resolve().parents[1]
AIM = 200.0
GIB = 1 << 30
NODE_CLASS = "large"
HEARTBEAT_S = 10.0  # the kubelet's Lease renew interval (leaseDuration 40 s / 4)
NODE_GRACE_S = 50.0  # kube-controller-manager's --node-monitor-grace-period default
OPERATOR = "operator loop (bench)"


@dataclass(frozen=True)
class Scenario:
    name: str
    policy: str
    options: dict[str, Any]
    what: str


SCENARIOS = (
    Scenario("fifo", "fifo", {}, "fifo: every free map slot of every node, each round"),
    Scenario("fair-multi", "fair", {"assignMultiple": True}, "fair, assignMultiple: every free slot"),
    Scenario("fair", "fair", {}, "fair (Hadoop 1 default): one map per node per round"),
)


# --- timing the operator's API calls -------------------------------------------------------------------------


class TimedApi(ClusterApi):
    """The operator's ClusterApi, recording how long each call takes and when each pod create answered."""

    def __init__(self, api: client.ApiClient, namespaces: tuple[str, ...]) -> None:
        super().__init__(api, namespaces)
        self.lock = threading.Lock()
        self.spent: dict[str, float] = {}
        self.creates: list[tuple[str, float, float]] = []  # pod name, call start, answer (time.monotonic)
        self.profile_creates = False
        self.profiles: list[cProfile.Profile] = []
        self._local = threading.local()

    def reset(self) -> None:
        with self.lock:
            self.spent = {}

    def _timed(self, what: str, call: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        try:
            return call()
        finally:
            with self.lock:
                self.spent[what] = self.spent.get(what, 0.0) + time.monotonic() - t0

    def list_nodes(self) -> list[dict[str, Any]]:
        return self._timed("read", super().list_nodes)  # type: ignore[no-any-return]

    def list_task_pods(self) -> list[dict[str, Any]]:
        return self._timed("read", super().list_task_pods)  # type: ignore[no-any-return]

    def list_other_pods_on(self) -> list[dict[str, Any]]:
        return self._timed("read", super().list_other_pods_on)  # type: ignore[no-any-return]

    def list_jobs(self) -> list[dict[str, Any]]:
        return self._timed("read", super().list_jobs)  # type: ignore[no-any-return]

    def patch_job_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._timed("status", lambda: super(TimedApi, self).patch_job_status(namespace, name, status))

    def event(self, job: dict[str, Any], kind: str, reason: str, message: str) -> None:
        self._timed("status", lambda: super(TimedApi, self).event(job, kind, reason, message))

    def create_pod(self, pod: dict[str, Any]) -> bool:
        profile = None
        if self.profile_creates:
            profile = getattr(self._local, "profile", None)
            if profile is None:
                profile = self._local.profile = cProfile.Profile()
                with self.lock:
                    self.profiles.append(profile)
            profile.enable()
        t0 = time.monotonic()
        try:
            return super().create_pod(pod)
        finally:
            t1 = time.monotonic()
            if profile is not None:
                profile.disable()
            with self.lock:
                self.creates.append((pod["metadata"]["name"], t0, t1))


def _watch_running(kubeconfig: str, ready: Any, stop: Any, count: Any, out: Any) -> None:
    """In a child process: when each pod was first seen Running, on the monotonic clock all processes share."""
    gc.disable()  # short-lived; every event is a few small dicts
    kube = KubeClient(Path(kubeconfig), pool_size=1)
    running: dict[str, float] = {}
    _, version = kube.list_pods_on_nodes()
    ready.set()
    while not stop.is_set():
        try:
            for event in kube.watch_pods_on_nodes(version, 2):
                pod = event["object"]
                meta = pod.get("metadata") or {}
                version = meta.get("resourceVersion", version)
                name = meta.get("name", "")
                if (pod.get("status") or {}).get("phase") == "Running" and name not in running:
                    running[name] = time.monotonic()
                    count.value = len(running)
                if stop.is_set():
                    break
        except Exception:
            time.sleep(0.2)  # resumed from the last version seen
    out.send(running)


class RunningWatch:
    """A watch on the pods in a child process (no GIL or CPU of the loop's process spent on it)."""

    def __init__(self, kubeconfig: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._ready, self._stop = ctx.Event(), ctx.Event()
        self._receive, send = ctx.Pipe(duplex=False)
        self._count = ctx.Value("i", 0)
        self.process = ctx.Process(
            target=_watch_running,
            args=(str(kubeconfig), self._ready, self._stop, self._count, send),
            daemon=True,
        )
        self.process.start()
        if not self._ready.wait(60):
            raise RuntimeError("the Running watch did not start")
        self.running: dict[str, float] = {}

    def wait_running(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self._count.value < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return bool(self._count.value >= count)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._receive.poll(30):
            self.running = self._receive.recv()
        self.process.join(10)
        return self.running


# --- CPU of every process ------------------------------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[name] = (int(fields[11]) + int(fields[12])) / _TICKS
    return out


def processes(cluster: LocalCluster) -> dict[str, int]:
    pids = {OPERATOR: os.getpid()}
    for pid in cluster.plane.pids():
        with contextlib.suppress(OSError):
            pids[Path(f"/proc/{pid}/comm").read_text().strip()] = pid
    pids["prometheus"] = cluster.prometheus.pid
    for handle in cluster.emulators.values():
        pids["node emulator"] = handle.pid
    return pids


# --- results -------------------------------------------------------------------------------------------------


def ms(values: list[float]) -> str:
    top = max(values, default=float("nan"))
    return f"{pct(values, 0.5) * 1e3:8.1f} {pct(values, 0.95) * 1e3:8.1f} {top * 1e3:8.1f}"


@dataclass
class RoundRecord:
    seconds: float
    created: int
    read_s: float
    policy_s: float
    status_s: float
    create_s: float  # from the decision to the last create's answer


@dataclass
class Result:
    scenario: Scenario
    workers: int
    pods: int
    rounds: list[RoundRecord]
    idle: list[RoundRecord]
    first_start: float
    last_create: float
    to_bound: list[float]
    to_running: list[float]
    cpu: dict[str, float]
    wall: float
    errors: int
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def loop_rate(self) -> float:
        return self.pods / sum(r.seconds for r in self.rounds)

    @property
    def e2e_rate(self) -> float:
        return self.pods / (self.last_create - self.first_start)


# --- the cluster ---------------------------------------------------------------------------------------------


class Bench(LiveBench):
    def setup(self) -> float:
        self.install_crds()
        t0 = time.monotonic()
        handle = self.emulate_pool("bench", NODE_CLASS, self.args.nodes, HEARTBEAT_S, timeout_s=600)
        registered = time.monotonic() - t0
        ready = self.ready_nodes()
        if ready < len(handle.nodes):
            raise RuntimeError(f"only {ready} of {len(handle.nodes)} nodes Ready")
        return registered

    @contextlib.contextmanager
    def namespace(self, name: str) -> Iterator[str]:
        self.core.create_namespace({"metadata": {"name": name}}, _preload_content=False).data  # noqa: B018
        try:
            yield name
        finally:
            self.delete_namespace(name, timeout_s=180, poll_s=0.5)

    def submit(self, namespace: str, policy: str, jobs: int, maps: int) -> None:
        for i in range(jobs):
            body = wordcount_job(
                f"wc-{i:02d}", policy, maps, {"cpu": "500m", "memory": "256Mi"}, user=f"user-{i % 4}"
            )
            _ = self.custom.create_namespaced_custom_object(
                API_GROUP, API_VERSION, namespace, PLURAL, body, _preload_content=False
            ).data

    def run(
        self,
        scenario: Scenario,
        workers: int,
        *,
        jobs: int,
        maps: int,
        idle_rounds: int,
        profile: Path | None = None,
    ) -> Result:
        args = self.args
        ns = f"bench-{scenario.name}-{uuid.uuid4().hex[:4]}"
        expected = min(args.nodes * args.map_slots, jobs * maps)
        with self.namespace(ns):
            config = OperatorConfig(
                policy=scenario.policy,
                policy_options=scenario.options,
                namespaces=(ns,),
                map_slots=args.map_slots,
                reduce_slots=0,
                create_workers=workers,
                allow_user_override=True,  # its jobs name four users (spec.user), not their namespace
            )
            api = TimedApi(api_client(self.cluster.kubeconfig), config.namespaces)
            metrics = OperatorMetrics()
            loop = SchedulingLoop(api, config, metrics)
            policy = loop.policy(scenario.policy)
            decisions: list[tuple[float, float]] = []  # schedule_round called, returned
            schedule_round = policy.schedule_round

            def timed_schedule(*a: Any, **kw: Any) -> Any:
                t0 = time.monotonic()
                placements = schedule_round(*a, **kw)
                decisions.append((t0, time.monotonic()))
                return placements

            policy.schedule_round = timed_schedule  # type: ignore[method-assign]
            self.submit(ns, scenario.policy, jobs, maps)
            watcher = RunningWatch(self.cluster.kubeconfig)
            pids = {**processes(self.cluster), "Running watch (bench)": watcher.process.pid or 0}
            decided_at: dict[str, float] = {}
            rounds: list[RoundRecord] = []
            created = 0
            profiler = cProfile.Profile() if profile else None
            cpu0 = cpu_seconds(pids)
            first_start = time.monotonic()
            while created < expected and len(rounds) < args.max_rounds:
                record, stats_created = self._round(loop, api, decisions, decided_at, profiler)
                profiler = None  # only the first round
                api.profile_creates = False
                created += stats_created
                rounds.append(record)
            cpu1 = cpu_seconds(pids)
            last_create = max((t1 for _, _, t1 in api.creates), default=first_start)
            all_running = watcher.wait_running(created, timeout_s=300)
            idle: list[RoundRecord] = []
            for _ in range(idle_rounds):  # every slot full, maps still pending, pods Running
                idle.append(self._round(loop, api, decisions, decided_at, None)[0])
                time.sleep(args.idle_gap)
            running = watcher.stop()
            loop.stop()
            loop.close()
            to_bound = [t1 - decided_at[name] for name, _, t1 in api.creates if name in decided_at]
            to_running = [
                running[name] - decided_at[name]
                for name, _, _ in api.creates
                if name in decided_at and name in running
            ]
            if profile is not None and self._profiler is not None:
                write_profile(self._profiler, api.profiles, profile)
            errors = sum(
                s.value for m in metrics.bind_errors.collect() for s in m.samples if s.name.endswith("_total")
            )
            return Result(
                scenario,
                workers,
                created,
                [r for r in rounds if r.created],
                idle,
                first_start,
                last_create,
                to_bound,
                to_running,
                {k: cpu1.get(k, 0.0) - v for k, v in cpu0.items()},
                time.monotonic() - first_start,
                int(errors),
                {"all_running": float(all_running), "rounds_total": float(len(rounds))},
            )

    _profiler: cProfile.Profile | None = None

    def _round(
        self,
        loop: SchedulingLoop,
        api: TimedApi,
        decisions: list[tuple[float, float]],
        decided_at: dict[str, float],
        profiler: cProfile.Profile | None,
    ) -> tuple[RoundRecord, int]:
        api.reset()
        decisions.clear()
        n_creates = len(api.creates)
        if profiler is not None:
            self._profiler = profiler
            api.profile_creates = True
            profiler.enable()
        stats = loop.round()
        if profiler is not None:
            profiler.disable()
        new = api.creates[n_creates:]
        decided = decisions[-1][1] if decisions else 0.0
        for name, _, _ in new:
            decided_at[name] = decided
        last = max((t1 for _, _, t1 in new), default=decided)
        record = RoundRecord(
            stats.seconds,
            stats.created,
            api.spent.get("read", 0.0),
            sum(t1 - t0 for t0, t1 in decisions),
            api.spent.get("status", 0.0),
            last - decided if new else 0.0,
        )
        return record, stats.created


def write_profile(main: cProfile.Profile, threads: list[cProfile.Profile], path: Path) -> None:
    main.dump_stats(str(path))
    with open(path.with_suffix(".txt"), "w") as out:
        out.write("# main thread (the round), by cumulative time\n")
        pstats.Stats(main, stream=out).sort_stats("cumulative").print_stats(40)
        out.write("# main thread, by own time\n")
        pstats.Stats(main, stream=out).sort_stats("tottime").print_stats(30)
        if threads:
            stats = pstats.Stats(threads[0], stream=out)
            for p in threads[1:]:
                stats.add(p)
            out.write("# create threads (ClusterApi.create_pod), by own time\n")
            stats.sort_stats("tottime").print_stats(30)
    print(f"profile of the first placing round: {path} and {path.with_suffix('.txt')}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common_arguments(parser, nodes=200, jobs=10, maps_per_job=200)
    parser.add_argument("--map-slots", type=int, default=8)
    parser.add_argument(
        "--create-workers",
        default=f"{OperatorConfig().create_workers},32",
        help="comma-separated: every scenario runs with each (default: the operator's default, and 32)",
    )
    parser.add_argument("--idle-rounds", type=int, default=20)
    parser.add_argument("--idle-gap", type=float, default=0.25, help="seconds between idle rounds")
    parser.add_argument("--max-rounds", type=int, default=40)
    parser.add_argument("--scenarios", default=",".join(s.name for s in SCENARIOS))
    parser.add_argument("--profile", type=Path, help="cProfile the first placing round of the first run")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    chosen = [s for name in args.scenarios.split(",") for s in SCENARIOS if s.name == name]
    workers = [int(w) for w in args.create_workers.split(",")]
    tool = Toolchain.locate()
    with tempfile.TemporaryDirectory(prefix="mrsched-bench-") as tmp:
        cluster = LocalCluster.up("opbench", state_dir=Path(tmp), tool=tool, node_grace_s=NODE_GRACE_S)
        try:
            bench = Bench(cluster, tool, args)
            registered = bench.setup()
            print(
                f"{args.nodes} nodes registered and Ready in {registered:.1f} s", file=sys.stderr, flush=True
            )
            # Warm-up, not reported: connections, the API server's caches, lazily built client code.
            bench.run(chosen[0], workers[0], jobs=1, maps=100, idle_rounds=0)
            results: list[Result] = []
            for w in workers:
                for scenario in chosen:
                    print(f"scenario {scenario.name}, {w} create workers ...", file=sys.stderr, flush=True)
                    profile = args.profile if not results else None
                    result = bench.run(
                        scenario,
                        w,
                        jobs=args.jobs,
                        maps=args.maps_per_job,
                        idle_rounds=args.idle_rounds,
                        profile=profile,
                    )
                    results.append(result)
                    print(f"  {result.loop_rate:.0f} pods/s", file=sys.stderr, flush=True)
            ready_after = bench.ready_nodes()
        finally:
            cluster.down(tool)
    report = format_report(args, results, registered, ready_after, tool)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


def format_report(
    args: argparse.Namespace,
    results: list[Result],
    registered: float,
    ready_after: int,
    tool: Toolchain,
) -> str:
    argv = " ".join(sys.argv[1:])
    versions = ", ".join(f"{p.parent.name}" for p in (tool.kube_apiserver, tool.etcd))
    slots = args.nodes * args.map_slots

    def label(r: Result) -> str:
        return f"{r.scenario.name}/w{r.workers}"

    lines = [
        "# Operator placement: mrsched.operator.scheduling.loop.SchedulingLoop on the real local kube-apiserver",
        f"# machine: {machine()}",
        f"# control plane: {versions} (kwokctl binary runtime), Prometheus, the node emulator and the loop: "
        "all on the same cores",
        f"# command: .venv/bin/python bench/operator_placement.py {argv}".rstrip(),
        f"# nodes: {args.nodes} emulated ({NODE_CLASS}: 8 cores, 16 GiB, model mode), Lease renewed every "
        f"{HEARTBEAT_S:.0f} s, node grace {NODE_GRACE_S:.0f} s; registered and Ready in {registered:.1f} s; "
        f"{ready_after}/{args.nodes} still Ready at the end",
        f"# work: {args.jobs} wordcount jobs x {args.maps_per_job} maps (64 GiB each: no task ends during the run), "
        f"map request 500m/256Mi; {args.map_slots} map slots per node = {slots} slots",
        "# loop: in process on the operator's ClusterApi; rounds back to back until every slot holds a pod (the "
        "operator waits for its heartbeat or a watch event between rounds); /wN = create_workers N",
        "",
        f"## Pods placed per second (aim >= {AIM:.0f})",
        "## loop = pods / summed duration of the rounds that created them; end-to-end = pods / (first round's "
        "start -> last create answered)",
        f"{'run':<15} {'policy':<52} {'pods':>5} {'rounds':>6} {'loop pods/s':>11} {'e2e pods/s':>10} "
        f"{'errors':>6}  verdict",
    ]
    for r in results:
        lines.append(
            f"{label(r):<15} {r.scenario.what:<52} {r.pods:>5} {len(r.rounds):>6} {r.loop_rate:>11.0f} "
            f"{r.e2e_rate:>10.0f} {r.errors:>6}  {'met' if r.loop_rate >= AIM else 'MISSED'}"
        )
    lines += [
        "",
        "## Round duration, ms: p50 p95 max; then the mean split of a round, ms: reads = list nodes, task pods, "
        "jobs, other pods on nodes;",
        "## policy = schedule_round; status = job status patches and Events; creates = decision -> last create "
        "answered; rest = parsing and state",
        f"{'run':<15} {'rounds':<18} {'n':>3} {'p50':>8} {'p95':>8} {'max':>8}   {'reads':>6} {'policy':>6} "
        f"{'status':>6} {'creates':>7} {'rest':>6}",
    ]
    for r in results:
        for kind, rounds in (("placing", r.rounds), ("idle (no placing)", r.idle)):
            if not rounds:
                continue

            def mean(get: Callable[[RoundRecord], float], rs: list[RoundRecord] = rounds) -> float:
                return statistics.fmean(get(x) for x in rs) * 1e3

            parts = [
                mean(lambda x: x.read_s),
                mean(lambda x: x.policy_s),
                mean(lambda x: x.status_s),
                mean(lambda x: x.create_s),
            ]
            rest = mean(lambda x: x.seconds) - sum(parts)
            lines.append(
                f"{label(r):<15} {kind:<18} {len(rounds):>3} {ms([x.seconds for x in rounds])}   "
                + " ".join(f"{v:>6.0f}" for v in parts[:3])
                + f" {parts[3]:>7.0f} {rest:>6.0f}"
            )
    lines += [
        "",
        "## Placement latency per pod, ms: p50 p95 max",
        "## bound = policy decision -> create answered (the pod exists with spec.nodeName: no separate binding)",
        "## Running = policy decision -> Running status written by the emulated kubelet (seen by a watch)",
        f"{'run':<15} {'pods':>5}   {'bound p50':>9} {'p95':>8} {'max':>8}   {'Running p50':>11} {'p95':>8} "
        f"{'max':>8}",
    ]
    for r in results:
        bound, running = ms(r.to_bound).split(), ms(r.to_running).split()
        lines.append(
            f"{label(r):<15} {len(r.to_bound):>5}   {bound[0]:>9} {bound[1]:>8} {bound[2]:>8}   "
            f"{running[0]:>11} {running[1]:>8} {running[2]:>8}"
        )
    names = sorted(
        {k for r in results for k in r.cpu}, key=lambda k: -sum(r.cpu.get(k, 0.0) for r in results)
    )
    lines += [
        "",
        f"## CPU seconds used during the placing rounds (at most {os.cpu_count()} x wall), and per pod placed",
        f"{'process':<24}" + "".join(f" {label(r):>15}" for r in results),
        f"{'(wall s)':<24}" + "".join(f" {r.last_create - r.first_start:>15.2f}" for r in results),
    ]
    for name in names:
        lines.append(f"{name:<24}" + "".join(f" {r.cpu.get(name, 0.0):>15.2f}" for r in results))
    lines.append(
        f"{'all, ms per pod':<24}" + "".join(f" {1e3 * sum(r.cpu.values()) / r.pods:>15.1f}" for r in results)
    )
    lines.append(
        f"{'loop, ms per pod':<24}"
        + "".join(f" {1e3 * r.cpu.get(OPERATOR, 0.0) / r.pods:>15.2f}" for r in results)
    )
    lines += [
        "",
        "## Notes",
        "# - Round duration is RoundStats.seconds, the value the operator observes into mrsched_loop_seconds; the "
        "policy split is what",
        "#   mrsched_placement_seconds{policy} observes.",
        "# - fair (Hadoop 1 default, assignMultiple false) hands out one map per node per round: at most "
        f"{args.nodes} pods a round,",
        "#   so its rate is nodes / round duration, and the operator's own heartbeat (1 s) caps it further; "
        "assignMultiple fills every slot.",
        "# - Idle rounds list every task pod once (allocatable adds the other tenants' bound pods, listed apart): "
        f"with {slots} running pods",
        "#   that list is the bulk of a heartbeat's cost, on the API server as much as in the loop.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
