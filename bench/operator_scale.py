"""The operator at scale, against the real kube-scheduler on the same API server and nodes:

    python bench/operator_scale.py [--nodes 1000] [--jobs 200] [--maps-per-job 50]
        [--policies fifo,fair,diagnosis] [--out bench/results/operator-scale.txt]

A fresh local cluster per run (kube-apiserver, etcd, controller manager, kube-scheduler, kwok, Prometheus) with
one node emulator in model mode and ``--nodes`` nodes of class ``large`` (8 cores, 16 GiB), each renewing its
Lease every 10 s as a kubelet does (the controller manager's node-monitor grace lengthened to 600 s: NODE_GRACE_S
says why): every run starts on empty nodes (deleting 10,000 pods through one API server
on two cores takes longer than a new cluster). kube-scheduler runs first, then each policy.

For each policy, the operator's ``SchedulingLoop`` runs in this process on the operator's ``ClusterApi`` with its
watch caches (informers.py) and its garbage-collector settings (gcsettings.py), as ``mrsched run`` runs it:
``--jobs`` wordcount jobs of ``--maps-per-job`` maps (10,000 task pods in flight by default), each map 64 GiB of
model input so that none ends during the run, maps requesting 500m and 256Mi, no slot cap (concurrency by requests).
Rounds run back to back until no round places anything more; then, once every pod runs (at most ``--running-wait``
s: the emulated kubelets start pods more slowly than they are created, and the loop pauses meanwhile), rounds until
one reads no job again (their statuses record the pods' start; at most 30), and then ``--idle-rounds`` rounds with
nothing to place. Prometheus scrapes the emulated nodes every 30 s here, not every second: no run reads metrics, and
the 1,000 nodes' exporters share one emulator process. In its own cluster, the same task pods (the kube-default
manifests the operator would create, without its owner reference and finalizer) are created unbound by 32 threads
and bound by the real kube-scheduler, no mrsched involved.

Measured:

* pods placed per second, end to end: pods / (first round's start -> last round's end, its creates answered);
  kube-scheduler's: pods / (first create sent -> last pod seen bound through a watch); their ratio;
* round latency (p50, p95) of placing rounds and of idle rounds;
* the operator's CPU per pod placed (this process: the loop, its create threads and its watch threads), and the
  loop's own: the CPU time of the thread running the rounds (reading the caches, rebuilding the jobs that
  changed, the policy's decisions, the pods' manifests), without the pool threads' API round trips (pod creates,
  status patches) and the watch threads' decoding; the aim, at most 1 ms per pod, is the loop's;
* the operator's resident memory (this process) after the idle rounds, and its peak, against the chart's
  512Mi limit; the caches' sync time at start.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.dataclaim import data_claim_manifests
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.kube.kubeclient import api_client
from mrsched.operator.kube.watchcache import WatchedList
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.gcsettings import tune_gc
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION, PLURAL, JobSpec
from mrsched.operator.model.operator_metrics import OperatorMetrics
from mrsched.operator.model.pods import task_pod
from mrsched.operator.scheduling.loop import SchedulingLoop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_harness import LiveBench, common_arguments, machine, pct, wordcount_job

REPO = Path(__file__).resolve().parents[1]
GIB = 1 << 30
NODE_CLASS = "large"
HEARTBEAT_S = 10.0  # the kubelet's Lease renew interval
# The node-monitor grace (Kubernetes' default: 50 s), lengthened here: the 1,000 emulated kubelets are one
# process on the two cores that also run the API server, kube-scheduler and the loop, and while 10,000 pods are
# created their Lease renewals fell 77-172 s behind (four renewing threads; measured, printed per run). With
# the default grace most nodes went NotReady and their pods were evicted: the run then measured the emulator,
# not the scheduler. A real kubelet has its node's CPU to itself.
NODE_GRACE_S = 600.0
CHART_MEMORY_LIMIT_MIB = 512  # charts/mrsched/values.yaml resources.limits.memory
MAP_REQUEST = {"cpu": "500m", "memory": "256Mi"}
STALL_ROUNDS = 5  # rounds in a row that place nothing: placement is over
SETTLE_ROUNDS = 30  # at most, after every pod runs, until a round reads no job again
# No run here reads metrics (the loop has no Prometheus URL, kube-scheduler none at all), but Prometheus scrapes
# every emulated node's exporter, and the 1,000 of them are one emulator process: at the clusters' usual 1 s it
# spent four fifths of that process's core (py-spy), and the emulator's pods started minutes late.
SCRAPE = "30s"


def _changes(caches: list[WatchedList]) -> int:
    return sum(c.changes for c in caches)


def rss_mib() -> tuple[float, float]:
    """(resident, peak resident) MiB of this process."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def cpu_s() -> float:
    return time.process_time()


class Bench(LiveBench):
    def setup(self) -> float:
        self.install_crds()
        t0 = time.monotonic()
        self.emulator = self.emulate_pool("scale", NODE_CLASS, self.args.nodes, HEARTBEAT_S, timeout_s=1200)
        return time.monotonic() - t0

    def kubelets_health(self) -> dict[str, Any]:
        """How late the emulated kubelets ran during the run: the longest gap between two Lease renewals of any
        node (NotReady past NODE_GRACE_S), and how many nodes are not Ready now. A run whose nodes went NotReady
        measured the emulator, not the scheduler."""
        try:
            gaps = list(self.emulator.client.heartbeat_gaps().values())
            nodes = json.loads(self.core.list_node(_preload_content=False).data)["items"]
        except Exception as err:  # a report line must never cost the run measured before it
            print(f"kubelets' health unknown: {err}", file=sys.stderr)
            return {"heartbeat_gap_max_s": float("nan"), "nodes_not_ready": -1}
        not_ready = sum(
            not any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (n.get("status") or {}).get("conditions", [])
            )
            for n in nodes
        )
        return {"heartbeat_gap_max_s": max(gaps, default=0.0), "nodes_not_ready": not_ready}

    @contextlib.contextmanager
    def namespace(self, clean: bool = True) -> Iterator[str]:
        name = f"scale-{uuid.uuid4().hex[:6]}"
        self.core.create_namespace({"metadata": {"name": name}}, _preload_content=False).data  # noqa: B018
        # The task pods' data claim, bound: without it kube-scheduler finds the pods unschedulable.
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(data_claim_manifests(name)))
        try:
            yield name
        finally:
            if clean:
                self.clean(name)

    def clean(self, name: str) -> None:
        """Remove the task pods' finalizers (the operator is stopped) and delete everything, waiting for it."""

        def release_all(namespace: str) -> None:
            pods = json.loads(self.core.list_namespaced_pod(namespace, _preload_content=False).data)["items"]

            def release(pod: dict[str, Any]) -> None:
                if pod["metadata"].get("finalizers"):
                    with contextlib.suppress(ApiException):
                        _ = self.core.patch_namespaced_pod(
                            pod["metadata"]["name"],
                            namespace,
                            {"metadata": {"finalizers": None}},
                            _content_type="application/merge-patch+json",
                            _preload_content=False,
                        ).data

            with ThreadPoolExecutor(32) as pool:
                list(pool.map(release, pods))

        if self.delete_namespace(name, timeout_s=600, poll_s=1, before=release_all):
            return
        self.kubectl("delete", "pv", f"data-{name}", "--ignore-not-found")

    def job_body(self, i: int, policy: str, maps: int) -> dict[str, Any]:
        # reduceSlowStart 1.0: every pod in flight is a map, the count stays what was asked
        return wordcount_job(f"wc-{i:03d}", policy, maps, MAP_REQUEST, reduceSlowStart=1.0)

    # --- mrsched ---------------------------------------------------------------------------------------------

    def run_mrsched(self, policy: str, jobs: int, maps: int, idle_rounds: int) -> dict[str, Any]:
        args = self.args
        with self.namespace(clean=idle_rounds == 0) as ns:  # the measured run's cluster is torn down
            # The emulator's 1,000 kubelets start 10,000 pods more slowly than the operator creates them (minutes
            # of Pending): the operator's start and pending timeouts would re-place pods that are only queued at
            # their kubelet, and the idle rounds would not be idle. kube-scheduler has no such timeouts.
            patience = self.args.running_wait + 600
            config = OperatorConfig(
                policy=policy,
                namespaces=(ns,),
                probe_nodes="never",
                pending_timeout_s=patience,
                pod_start_grace_s=patience,
            )
            api = ClusterApi(api_client(self.cluster.kubeconfig), config.namespaces)
            loop = SchedulingLoop(api, config, OperatorMetrics())
            t0 = time.monotonic()
            caches = api.start_caches(config.node_selector, loop.wake)
            if not caches.wait_synced(120):
                raise RuntimeError("the caches did not sync in 120 s")
            synced = time.monotonic() - t0
            for i in range(jobs):
                _ = self.custom.create_namespaced_custom_object(
                    API_GROUP, API_VERSION, ns, PLURAL, self.job_body(i, policy, maps), _preload_content=False
                ).data
            deadline = time.monotonic() + 120
            while len(api.list_jobs()) < jobs and time.monotonic() < deadline:
                time.sleep(0.1)
            placing: list[float] = []
            created, stall = 0, 0
            cpu0, start = cpu_s(), time.monotonic()
            loop_cpu = 0.0  # this thread's, in the rounds
            end = start
            placing_profile, idle_profile = cProfile.Profile(), cProfile.Profile()
            while stall < STALL_ROUNDS and time.monotonic() - start < args.max_seconds:
                if args.profile:
                    placing_profile.enable()
                thread0 = time.thread_time()
                stats = loop.round()
                loop_cpu += time.thread_time() - thread0
                placing_profile.disable()
                if stats.created:
                    placing.append(stats.seconds)
                    created += stats.created
                    end = time.monotonic()
                    stall = 0
                else:
                    stall += 1
            cpu_placing = cpu_s() - cpu0
            print(f"  {policy}: {created} pods in {end - start:.1f} s", file=sys.stderr, flush=True)
            # The loop pauses while the emulated kubelets start the pods: their writes are one emulator
            # thread's round trips to an API server the loop's status writes would slow further (with rounds
            # each second, 7,015 of the 10,000 pods ran after 600 s). Then rounds until one reads no job again
            # (each job's status records its pods' start), so that the idle rounds measure a cluster where
            # nothing changed, not the catching up.
            running = self.wait_running(api, created)
            settle = 0
            while settle < SETTLE_ROUNDS and loop.round().read:
                settle += 1
                time.sleep(args.idle_gap)
            idle, read, skipped = [], [], 0
            why: Counter[str] = Counter()  # why the idle rounds read jobs again (JobCache.misses)
            # What changed in the cluster during the idle rounds: an idle round is one with nothing to place,
            # but pods, nodes and jobs may still change (a kubelet's late status, a node's readiness).
            before = {
                "pods": sum(caches.pod_changes()),
                "nodes": caches.nodes.changes,
                "jobs": _changes(caches.jobs),
            }
            for _ in range(idle_rounds):
                if args.profile:
                    idle_profile.enable()
                stats = loop.round()
                idle_profile.disable()
                idle.append(stats.seconds)
                read.append(stats.read)
                skipped += bool(stats.skipped)
                why.update(stats.read_why)
                time.sleep(args.idle_gap)
            changed = {
                "pods": sum(caches.pod_changes()) - before["pods"],
                "nodes": caches.nodes.changes - before["nodes"],
                "jobs": _changes(caches.jobs) - before["jobs"],
            }
            rss, peak = rss_mib()
            if args.profile and idle_rounds:
                for what, prof in (("placing", placing_profile), ("idle", idle_profile)):
                    out = io.StringIO()
                    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
                    Path(f"{args.profile}-{policy}-{what}.txt").write_text(out.getvalue())
            loop.stop()
            loop.close()
            api.stop_caches()
        return {
            "who": f"mrsched {policy}",
            "pods": created,
            "seconds": end - start,
            "rate": created / max(1e-9, end - start),
            "placing_rounds": placing,
            "idle_rounds": idle,
            "cpu_ms_per_pod": 1e3 * cpu_placing / max(1, created),
            "loop_cpu_ms_per_pod": 1e3 * loop_cpu / max(1, created),
            "idle_skipped": skipped,
            "rss_mib": rss,
            "peak_rss_mib": peak,
            "synced_s": synced,
            "running": running,
            "idle_changes": changed,
            "settle_rounds": settle,
            "idle_jobs_read": read,
            "idle_read_why": dict(why),
        }

    def wait_running(self, api: ClusterApi, count: int) -> int:
        deadline = time.monotonic() + self.args.running_wait
        running = 0
        while time.monotonic() < deadline:
            running = sum((p.get("status") or {}).get("phase") == "Running" for p in api.list_task_pods())
            if running >= count:
                break
            time.sleep(1)
        return running

    # --- kube-scheduler ----------------------------------------------------------------------------------------

    def run_kube_scheduler(self) -> dict[str, Any]:
        args = self.args
        config = OperatorConfig()
        with self.namespace(clean=False) as ns:  # the cluster is torn down after the run
            pods = []
            for i in range(args.jobs):
                body = self.job_body(i, "kube-default", args.maps_per_job)
                body["metadata"].update(namespace=ns, uid=f"{uuid.uuid4()}")
                spec = JobSpec.from_resource(body)
                for m in range(args.maps_per_job):
                    pod = task_pod(spec, "map", m, 0, config, node=None, explanation=None)
                    # The same pod as the operator's kube-default pods, without the operator's bookkeeping:
                    # no job owns it (the garbage collector would delete it), no finalizer (nobody records it).
                    del pod["metadata"]["ownerReferences"], pod["metadata"]["finalizers"]
                    pods.append(pod)
            creator = ClusterApi(api_client(self.cluster.kubeconfig, pool_size=32), (ns,))
            bound = WatchedList(
                "bound",
                lambda **kw: self.core.list_namespaced_pod(ns, field_selector="spec.nodeName!=", **kw),
            ).start()
            if not bound.wait_synced(60):
                raise RuntimeError("the watch of bound pods did not sync")
            cpu0 = cpu_s()
            start = time.monotonic()
            with ThreadPoolExecutor(32) as pool:
                futures = [pool.submit(creator.create_pod, pod) for pod in pods]
                first_bound = None
                last_count, last_change = 0, time.monotonic()
                while True:
                    n = len(bound)
                    now = time.monotonic()
                    if n and first_bound is None:
                        first_bound = now
                    if n != last_count:
                        last_count, last_change = n, now
                    if n >= len(pods) or now - last_change > 60:
                        break
                    time.sleep(0.02)
                for f in futures:
                    f.result()
            end = last_change
            bound.stop()
            cpu = cpu_s() - cpu0
        return {
            "who": "kube-scheduler",
            "pods": last_count,
            "seconds": end - start,
            "rate": last_count / max(1e-9, end - start),
            "first_bound_s": (first_bound or start) - start,
            "bench_cpu_ms_per_pod": 1e3 * cpu / max(1, last_count),
        }


def report(args: argparse.Namespace, registered: float, runs: list[dict[str, Any]], tool: Toolchain) -> str:
    kube = next((r for r in runs if r["who"] == "kube-scheduler"), {"rate": 0.0})
    lines = [
        "# Operator at scale: the scheduling loop with watch caches vs the real kube-scheduler, same apiserver",
        f"# machine: {machine()}",
        f"# control plane: {tool.kube_apiserver.parent.name}, {tool.etcd.parent.name} (kwokctl binary runtime), "
        f"Prometheus (scraping every {SCRAPE}), the node emulator and the loop: all on the same cores",
        f"# command: {' '.join(['.venv/bin/python', 'bench/operator_scale.py', *sys.argv[1:]])}",
        f"# nodes: {args.nodes} emulated ({NODE_CLASS}: 8 cores, 16 GiB, model mode), registered and Ready in "
        f"{registered:.0f} s",
        f"# work: {args.jobs} wordcount jobs x {args.maps_per_job} maps = {args.jobs * args.maps_per_job} task "
        f"pods in flight, map request {MAP_REQUEST['cpu']}/{MAP_REQUEST['memory']}, no slot cap; "
        f"kube-scheduler: the same pods (the operator's kube-default manifests), created by 32 threads",
        "",
        "## Pods placed per second (end to end) and the ratio to kube-scheduler's (aim >= 1.0)",
        f"{'who':22} {'pods':>6} {'seconds':>8} {'pods/s':>8} {'ratio':>6}",
    ]
    for r in runs:
        ratio = r["rate"] / kube["rate"] if kube["rate"] else float("nan")
        lines.append(f"{r['who']:22} {r['pods']:6d} {r['seconds']:8.1f} {r['rate']:8.0f} {ratio:6.2f}")
    lines += [
        "",
        "## The operator: round latency (ms, p50 / p95), CPU per pod placed, memory (chart limit "
        f"{CHART_MEMORY_LIMIT_MIB} MiB)",
        f"{'who':22} {'placing n':>9} {'p50':>7} {'p95':>7} {'idle n':>6} {'p50':>6} {'p95':>6} "
        f"{'cpu ms/pod':>10} {'loop ms/pod':>11} {'rss MiB':>8} {'peak':>6} {'sync s':>6} {'Running':>7} {'settle':>6} "
        f"{'changed while idle: pods':>24} {'nodes':>5} {'jobs':>4} {'jobs read/round':>15} {'skipped':>7}",
    ]
    for r in runs:
        if r["who"] == "kube-scheduler":
            continue
        placing, idle = r["placing_rounds"], r["idle_rounds"]
        lines.append(
            f"{r['who']:22} {len(placing):9d} {pct(placing, 0.5) * 1e3:7.0f} {pct(placing, 0.95) * 1e3:7.0f} "
            f"{len(idle):6d} {pct(idle, 0.5) * 1e3:6.0f} {pct(idle, 0.95) * 1e3:6.0f} "
            f"{r['cpu_ms_per_pod']:10.2f} {r['loop_cpu_ms_per_pod']:11.2f} "
            f"{r['rss_mib']:8.0f} {r['peak_rss_mib']:6.0f} {r['synced_s']:6.2f} "
            f"{r['running']:7d} {r['settle_rounds']:6d} {r['idle_changes']['pods']:24d} "
            f"{r['idle_changes']['nodes']:5d} {r['idle_changes']['jobs']:4d} "
            f"{statistics.mean(r['idle_jobs_read'] or [0]):15.1f} {r['idle_skipped']:7d}"
        )
    for r in runs:
        if r.get("idle_read_why"):
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["idle_read_why"].items()))
            lines.append(f"# {r['who']}: jobs read again in its idle rounds, by why (jobcache): {reasons}")
    for r in runs:
        if "heartbeat_gap_max_s" in r:
            lines.append(
                f"# {r['who']}: emulated kubelets' longest Lease renewal gap {r['heartbeat_gap_max_s']:.1f} s "
                f"(renewal every {HEARTBEAT_S:.0f} s, node-monitor grace {NODE_GRACE_S:.0f} s), "
                f"{r['nodes_not_ready']} nodes not Ready at the end"
            )
    idle_all = [t for r in runs if r["who"] != "kube-scheduler" for t in r["idle_rounds"]]
    lines += [
        "",
        f"# idle round p50 over every policy: {statistics.median(idle_all) * 1e3 if idle_all else float('nan'):.0f} ms "
        "(aim < 100 ms)",
        "# the peak RSS is this benchmark process's: the loop and its caches, plus the benchmark's own objects",
        "# cpu ms/pod: this whole process's CPU while placing (the loop, its write pool's API round trips, the "
        "watch threads); loop ms/pod: the loop thread's own (aim <= 1 ms)",
        "# skipped: idle rounds in which the policy was not asked (no task to start, nothing changed: "
        "operator/mrsched/operator/scheduling/quiet.py)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common_arguments(parser, nodes=1000, jobs=200, maps_per_job=50)
    parser.add_argument("--policies", default="fifo,fair,diagnosis")
    parser.add_argument("--idle-rounds", type=int, default=20)
    parser.add_argument("--idle-gap", type=float, default=0.25)
    parser.add_argument("--max-seconds", type=float, default=600)
    parser.add_argument(
        "--running-wait",
        type=float,
        default=900,
        help="seconds to wait for every pod to run before idle rounds",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the kube-scheduler run (a policy's numbers only)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--profile", help="cProfile the loop's rounds into <PROFILE>-<policy>-<placing|idle>.txt"
    )
    args = parser.parse_args()
    tune_gc()  # the loop runs in this process: with the collector settings of `mrsched run` (gcsettings)
    tool = Toolchain.locate()
    runs: list[dict[str, Any]] = []
    registered: list[float] = []
    # A fresh cluster per run: deleting 10,000 finalized pods through one API server on two cores takes longer
    # than starting a cluster with 1,000 nodes, and a run must start on empty nodes. The reference first.
    for who in [*([] if args.no_reference else ["kube-scheduler"]), *args.policies.split(",")]:
        with tempfile.TemporaryDirectory(prefix="mrsched-scale-") as tmp:
            cluster = LocalCluster.up(
                "opscale", state_dir=Path(tmp), tool=tool, node_grace_s=NODE_GRACE_S, scrape_interval=SCRAPE
            )
            try:
                bench = Bench(cluster, tool, args)
                registered.append(bench.setup())
                print(
                    f"{args.nodes} nodes Ready in {registered[-1]:.0f} s; {who} ...",
                    file=sys.stderr,
                    flush=True,
                )
                if who == "kube-scheduler":
                    runs.append(bench.run_kube_scheduler())
                    runs[-1].update(bench.kubelets_health())
                else:
                    # The runs share this process; the operator runs one loop. The last run's objects (cycles
                    # the collector's thresholds leave for a full collection, gcsettings) go now, and the
                    # peak resident size starts again from here (Linux: clear_refs 5 resets VmHWM).
                    gc.collect()
                    Path("/proc/self/clear_refs").write_text("5")
                    # Warm-up, not reported: connections, the API server's caches, the profiles' first writes.
                    bench.run_mrsched("fifo", 5, 20, 0)
                    runs.append(bench.run_mrsched(who, args.jobs, args.maps_per_job, args.idle_rounds))
                    runs[-1].update(bench.kubelets_health())
            finally:
                cluster.down(tool)
        text = report(args, max(registered), runs, tool)
        if args.out:  # after every run: a partial table survives an interrupted sweep
            args.out.write_text(text + "\n")
            args.out.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    threading.stack_size(0)
    main()
