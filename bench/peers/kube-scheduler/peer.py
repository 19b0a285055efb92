"""The simulator's kube-default against the real kube-scheduler on the same pod streams (issue 49).

    python bench/peers/kube-scheduler/peer.py [--streams a,b] [--out bench/results/kube-scheduler-peer.md]

For each stream of streams/ (streams.py makes them): on a fresh local control plane (kwokctl: the real
kube-apiserver, etcd, kube-controller-manager and kube-scheduler v1.35.4, kwok playing the kubelet of nodes of
the stream's sizes), this process plays the operator and the pods' run: it creates each pod when the stream says
(a group's pods once every pod of the group it waits for is bound, as the operator creates reduce pods), and
deletes each pod its run time after it is bound (a finished task pod leaves kube-scheduler's informer: a delete
event for it). The real kube-scheduler binds them. Then the simulator's kube-default (mrsched.policies:
kube_queue's queue, kube_default's scores) replays the same stream on the same nodes, its clock aligned to the
real one's 1 s back-off window, and whenever several nodes tie for the best score it takes the node the real
scheduler took, if that node is among them (both break ties at random: a tie taken differently is no
disagreement, and the two runs stay comparable after it).

Reported per stream: the share of pods placed on the real scheduler's node (exactly, and counting a tie the
real node was part of), the rank correlation of the two bind orders (Kendall's tau), each pod's wait from its
creation to its binding (mean, both), and where they differ, the pods that did and why as far as the run tells.
Written to bench/results/kube-scheduler-peer.md and .json.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import itertools
import json
import math
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from scipy.stats import kendalltau

from mrsched.core.model import Node, Resources, Task
from mrsched.localcluster.controlplane import start_control_plane, stop_control_plane
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.kubeclient import api_client
from mrsched.policies.kube_default import best_nodes
from mrsched.policies.kube_queue import SchedulingQueue

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
NAMESPACE = "peer"


@dataclass
class Placed:
    node: str
    bound_s: float
    order: int
    ties: list[str] = field(default_factory=list)  # the nodes of the best score when it was bound (simulated)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "boundS": round(self.bound_s, 3), "order": self.order, "ties": self.ties}


@dataclass
class Real:
    """What the real run did: each pod's binding, when it was created and deleted (seconds from the start, as
    the apiserver saw it: half a round trip after the call was sent), the clock's fraction of a second at 0."""

    placed: dict[str, Placed]
    created: dict[str, float]
    ended: dict[str, float]
    offset: float
    #: kube-scheduler's attempts in this run (:func:`scheduler_attempts`)
    attempts: dict[str, float] = field(default_factory=dict)


def _created_at(stream: dict[str, Any]) -> dict[str, float]:
    return {p["name"]: p["createS"] for p in stream["pods"] if p.get("after") is None}


def _groups(stream: dict[str, Any]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for p in stream["pods"]:
        groups[p["group"]].append(p["name"])
    return groups


# --- the simulated kube-default ---------------------------------------------------------------------------------


def simulate(stream: dict[str, Any], real: Real, seed: int = 1) -> dict[str, Placed]:
    """The stream under the simulator's kube-default: each event instant (a pod created, a pod ended) followed by
    one scheduling pass (SchedulingQueue.schedule), as kube-scheduler pops pods the moment they may fit. The
    input is the real run's: each pod created when the real one was (a group's dependents too: when to create
    them is the operator's rule, not the scheduler's), each pod deleted when the real one was if it is bound by
    then (else its run time after its binding, plus the real deletion's delay); a tie broken as the real
    scheduler broke it when its node is among the best. Times
    are shifted by the real clock's fraction of a second at 0 (the back-off window is whole seconds of the wall
    clock)."""
    rng = random.Random(seed)
    offset = real.offset
    pods = {p["name"]: p for p in stream["pods"]}
    nodes = {n["name"]: Node(n["name"], n["cpu"], float(n["memoryMiB"])) for n in stream["nodes"]}
    used = {name: (0.0, 0.0) for name in nodes}
    tasks = {name: Task(name, "map", 0) for name in pods}
    by_key = {t.key: name for name, t in tasks.items()}
    lag = {
        n: max(0.0, real.ended[n] - real.placed[n].bound_s - pods[n]["durationS"])
        for n in real.ended
        if n in real.placed
    }
    queue = SchedulingQueue()
    placed: dict[str, Placed] = {}
    events: list[tuple[float, int, str, str]] = []
    seq = 0

    def push(at: float, kind: str, name: str) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, kind, name))

    for name in sorted(real.created, key=real.created.__getitem__):
        push(real.created[name] + offset, "create", name)

    def bind(task: Task, priority: int, failures: int) -> bool:
        name = by_key[task.key]
        pod = pods[name]
        best, _, _ = best_nodes(nodes, used, Resources(pod["cpu"], float(pod["memoryMiB"])))
        if not best:
            return False
        done = real.placed.get(name)
        chosen = done.node if done is not None and done.node in best else rng.choice(best)
        cpu, mem = used[chosen]
        used[chosen] = (cpu + pod["cpu"], mem + pod["memoryMiB"])
        placed[name] = Placed(chosen, now - offset, len(placed), sorted(best))
        # Its end is an input event, as in the real run: at the real deletion when the pod is bound by then
        # (events milliseconds apart keep their real order), else its run time after its binding here.
        ended = real.ended.get(name)
        end = (
            ended + offset
            if ended is not None and ended + offset >= now
            else now + pod["durationS"] + lag.get(name, 0.0)
        )
        push(end, "end", name)
        return True

    now = 0.0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, kind, name = heapq.heappop(events)
            pod = pods[name]
            if kind == "create":
                queue.add(tasks[name], pod.get("priority", 0), Resources(pod["cpu"], pod["memoryMiB"]), now)
            else:  # its pod ends: resources freed, a delete event for the scheduler
                cpu, mem = used[placed[name].node]
                used[placed[name].node] = (cpu - pod["cpu"], mem - pod["memoryMiB"])
                queue.assigned_pod_deleted()
        queue.schedule(now, bind)
    return placed


# --- the real kube-scheduler ------------------------------------------------------------------------------------


def _node(spec: dict[str, Any]) -> dict[str, Any]:
    capacity = {"cpu": str(spec["cpu"]), "memory": f"{spec['memoryMiB']}Mi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec["name"],
            "labels": {"kwok.x-k8s.io/node": "fake", "kubernetes.io/hostname": spec["name"]},
        },
        "status": {"allocatable": capacity, "capacity": capacity},
    }


def _pod(spec: dict[str, Any], stream: dict[str, Any]) -> dict[str, Any]:
    classes = {v: k for k, v in stream.get("priorityClasses", {}).items()}
    requests = {"cpu": f"{round(spec['cpu'] * 1000)}m", "memory": f"{spec['memoryMiB']}Mi"}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "task",
                "image": "mrsched/peer:none",
                "resources": {"requests": requests, "limits": requests},
            }
        ],
    }
    if spec.get("priority"):
        pod_spec["priorityClassName"] = classes[spec["priority"]]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": spec["name"],
            "labels": {"app": "peer", "group": spec["group"].replace("/", "-")},
        },
        "spec": pod_spec,
    }


class RealRun:
    """One stream on the real kube-scheduler (module docstring)."""

    def __init__(self, core: client.CoreV1Api, stream: dict[str, Any]) -> None:
        self.core, self.stream = core, stream
        self.pods = {p["name"]: p for p in stream["pods"]}
        self.groups = _groups(stream)
        self.waiting_for: dict[str, list[str]] = defaultdict(list)
        for p in stream["pods"]:
            if p.get("after"):
                self.waiting_for[p["after"]].append(p["name"])
        self.unbound = {g: len(names) for g, names in self.groups.items()}
        self.placed: dict[str, Placed] = {}
        self.deleted: set[str] = set()
        self.lock = threading.Lock()
        self.ends: list[tuple[float, str]] = []  # (monotonic due, pod)
        self.creates: list[tuple[float, int, str]] = []
        self._position = {p["name"]: i for i, p in enumerate(stream["pods"])}
        self.t0 = 0.0
        self.wall0 = 0.0
        self.created: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.lost: set[str] = set()

    def _create(self, name: str) -> None:
        sent = time.monotonic()
        body = _pod(self.pods[name], self.stream)
        _read(self.core.create_namespaced_pod(NAMESPACE, body, _preload_content=False))
        self.created[name] = (sent + time.monotonic()) / 2 - self.t0

    def _delete(self, name: str) -> None:
        """The pod's run is over: delete it (grace 0: no kubelet to wait for), as its end leaves the scheduler's
        informer; a pod already gone was deleted by another (kube-scheduler preempting it), which is reported."""
        sent = time.monotonic()
        try:
            _read(
                self.core.delete_namespaced_pod(
                    name, NAMESPACE, grace_period_seconds=0, _preload_content=False
                )
            )
        except client.ApiException as err:
            if err.status != 404:
                raise
            self.lost.add(name)
        self.ended[name] = (sent + time.monotonic()) / 2 - self.t0

    def _watch(self, stop: threading.Event) -> None:
        try:
            self._follow(stop)
        except Exception:
            if not stop.is_set():  # the control plane stopping ends the watch: only a failure before is one
                raise

    def _follow(self, stop: threading.Event) -> None:
        w = watch.Watch()
        for event in w.stream(
            self.core.list_namespaced_pod, NAMESPACE, label_selector="app=peer", timeout_seconds=0
        ):
            if stop.is_set():
                w.stop()
                return
            pod = event["object"]
            name = pod.metadata.name
            now = time.monotonic() - self.t0
            with self.lock:
                if event["type"] in ("ADDED", "MODIFIED") and pod.spec.node_name and name not in self.placed:
                    self.placed[name] = Placed(pod.spec.node_name, now, len(self.placed))
                    heapq.heappush(self.ends, (self.t0 + now + self.pods[name]["durationS"], name))
                    group = self.pods[name]["group"]
                    self.unbound[group] -= 1
                    if self.unbound[group] == 0:
                        for dependent in self.waiting_for.get(group, ()):
                            heapq.heappush(self.creates, (0.0, self._position[dependent], dependent))
                elif event["type"] == "DELETED":
                    self.deleted.add(name)

    def run(self, timeout_s: float = 900.0) -> dict[str, Placed]:
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        watcher.start()
        time.sleep(1.0)  # the watch is open before the first pod
        self.t0, self.wall0 = time.monotonic(), time.time()
        with self.lock:  # in the stream's order: a heap of (time, position), never of names
            for name, at in _created_at(self.stream).items():
                heapq.heappush(self.creates, (self.t0 + at, self._position[name], name))
        total = len(self.pods)
        deadline = self.t0 + timeout_s
        while len(self.deleted) < total:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.stream['name']}: {len(self.deleted)} of {total} pods ran in {timeout_s} s"
                )
            now = time.monotonic()
            with self.lock:
                creates = []
                while self.creates and self.creates[0][0] <= now:
                    creates.append(heapq.heappop(self.creates)[2])
                ends = []
                while self.ends and self.ends[0][0] <= now:
                    ends.append(heapq.heappop(self.ends)[1])
            for name in creates:
                self._create(name)
            for name in ends:
                self._delete(name)
            time.sleep(0.005)
        stop.set()
        return self.placed


def run_real(tool: Toolchain, stream: dict[str, Any], workdir: Path) -> Real:
    """The stream on a fresh control plane."""
    plane = start_control_plane(tool, f"peer-{stream['name'][:20]}", workdir, scheduler_verbosity=5)
    try:
        api = api_client(plane.kubeconfig)
        core = client.CoreV1Api(api)
        scheduling = client.SchedulingV1Api(api)
        _read(core.create_namespace({"metadata": {"name": NAMESPACE}}, _preload_content=False))
        for name, value in stream.get("priorityClasses", {}).items():
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                # Priority orders the queue (PrioritySort) but preempts nothing: mrsched's pods carry no
                # priority the operator would give them, and the simulator's kube-default does not preempt.
                "preemptionPolicy": "Never",
            }
            _read(scheduling.create_priority_class(body, _preload_content=False))
        for spec in stream["nodes"]:
            _read(core.create_node(_node(spec), _preload_content=False))
        _wait(
            lambda: _ready(core, stream) and _service_account(core),
            60.0,
            "the nodes Ready and the namespace's ServiceAccount",
        )
        run = RealRun(core, stream)
        placed = run.run()
        if run.lost:
            raise RuntimeError(f"{stream['name']}: pods deleted by another than this run: {sorted(run.lost)}")
        return Real(placed, run.created, run.ended, run.wall0 % 1.0, scheduler_attempts(plane.scheduler_log))
    finally:
        stop_control_plane(tool, plane)


_KLOG_TIME = re.compile(r"^[IWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+)")
_POD = re.compile(r'pod="peer/([^"]+)"')


def scheduler_attempts(log: Path) -> dict[str, float]:
    """From kube-scheduler's log at -v=5: how long its scheduling attempts took (from "About to try" to the
    pod's failure or binding: mean and 95th percentile, ms) and how many it made."""
    started: dict[str, float] = {}
    took: list[float] = []
    for line in log.read_text(errors="replace").splitlines():
        at, pod = _KLOG_TIME.match(line), _POD.search(line)
        if not at or not pod:
            continue
        h, m, sec = at.groups()
        now = int(h) * 3600 + int(m) * 60 + float(sec)
        if '"About to try and schedule pod"' in line:
            started[pod.group(1)] = now
        elif ('"Unable to schedule pod' in line or '"Successfully bound pod' in line) and pod.group(
            1
        ) in started:
            took.append(now - started.pop(pod.group(1)))
    if not took:
        return {"attempts": 0.0}
    took.sort()
    return {
        "attempts": float(len(took)),
        "meanMs": 1000 * statistics.fmean(took),
        "p95Ms": 1000 * took[int(0.95 * (len(took) - 1))],
    }


def _read(response: Any) -> None:
    """Read a raw response to its end, so that its connection goes back to the pool clean."""
    response.data  # noqa: B018


def _ready(core: client.CoreV1Api, stream: dict[str, Any]) -> bool:
    names = {n["name"] for n in stream["nodes"]}
    ready = {
        n.metadata.name
        for n in core.list_node().items
        if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
    }
    return names <= ready


def _service_account(core: client.CoreV1Api) -> bool:
    return any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(NAMESPACE).items)


def _wait(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} in {timeout_s} s")
        time.sleep(0.2)


# --- comparison and report --------------------------------------------------------------------------------------


def scores_along(stream: dict[str, Any], real: Real) -> tuple[float, list[dict[str, Any]]]:
    """The simulator's scores on the real run's own states: for each real binding, the pods bound before it and
    not yet deleted on each node, and whether the node the real scheduler chose is among the nodes
    kube_default.best_nodes ranks best for the pod then. Timing apart, this is the score function's agreement;
    and the bindings it disagrees with."""
    pods = {p["name"]: p for p in stream["pods"]}
    nodes = {n["name"]: Node(n["name"], n["cpu"], float(n["memoryMiB"])) for n in stream["nodes"]}
    bound = sorted(real.placed, key=lambda n: real.placed[n].bound_s)
    agree, wrong = 0, []
    for i, name in enumerate(bound):
        at = real.placed[name].bound_s
        used = {n: (0.0, 0.0) for n in nodes}
        for other in bound[:i]:
            if real.ended.get(other, float("inf")) > at:
                node = real.placed[other].node
                cpu, mem = used[node]
                used[node] = (cpu + pods[other]["cpu"], mem + pods[other]["memoryMiB"])
        best, _, _ = best_nodes(nodes, used, Resources(pods[name]["cpu"], float(pods[name]["memoryMiB"])))
        if real.placed[name].node in best:
            agree += 1
        else:
            wrong.append({"pod": name, "real": real.placed[name].node, "best": best, "boundS": round(at, 3)})
    return agree / max(len(bound), 1), wrong


#: A binding with no pod created or deleted this long before it came from a timer of the queue (a back-off
#: ending for a pod requeued while in flight, the 1 s flush), not from an event: seconds.
TIMER_WINDOW_S = 0.3


def timer_bindings(real: Real) -> int:
    """The real bindings that no event just before explains (:data:`TIMER_WINDOW_S`): kube-scheduler requeues a
    pod an event reached while it was being scheduled (``determineSchedulingHintForInFlightPod``) into the
    backoffQ, to be tried when its back-off ends; the simulator's rounds are instants, with no pod in flight."""
    events = sorted([*real.created.values(), *real.ended.values()])
    count = 0
    for placed in real.placed.values():
        i = bisect.bisect_right(events, placed.bound_s)
        if i == 0 or placed.bound_s - events[i - 1] > TIMER_WINDOW_S:
            count += 1
    return count


def compare(stream: dict[str, Any], real: Real, sim: dict[str, Placed]) -> dict[str, Any]:
    """How far the two runs agree (module docstring); ``differ`` lists each pod the simulation put on a node
    neither the real scheduler's nor tied with it."""
    names = [p["name"] for p in stream["pods"]]
    both = [n for n in names if n in real.placed and n in sim]
    exact = sum(real.placed[n].node == sim[n].node for n in both)
    in_ties = sum(real.placed[n].node in sim[n].ties for n in both)
    tied = sum(len(sim[n].ties) > 1 for n in both)
    tau = kendalltau([real.placed[n].order for n in both], [sim[n].order for n in both]).statistic

    def wait(placed: dict[str, Placed], n: str) -> float:
        return placed[n].bound_s - real.created[n]

    real_placed = real.placed
    differ = [
        {
            "pod": n,
            "real": real_placed[n].node,
            "simulated": sim[n].node,
            "ties": sim[n].ties,
            "realBoundS": round(real_placed[n].bound_s, 2),
            "simulatedBoundS": round(sim[n].bound_s, 2),
        }
        for n in both
        if real_placed[n].node not in sim[n].ties
    ]
    along, wrong = scores_along(stream, real)
    ends = sorted(real.ended.values())
    gaps = [b - a for a, b in itertools.pairwise(ends) if b > a]
    waiting = [
        sum(1 for m in both if real.created[m] <= real.placed[n].bound_s < real.placed[m].bound_s)
        for n in both
    ]
    group_of = {p["name"]: p["group"] for p in stream["pods"]}
    by_group: dict[str, tuple[Counter[str], Counter[str]]] = defaultdict(lambda: (Counter(), Counter()))
    for n in both:
        by_group[group_of[n]][0][real.placed[n].node] += 1
        by_group[group_of[n]][1][sim[n].node] += 1
    alike = sum(sum((r & s).values()) for r, s in by_group.values())
    return {
        "sameNodeByGroup": alike / len(both),
        "meanWaiting": statistics.fmean(waiting),
        "medianEventGapMs": 1000 * statistics.median(gaps) if gaps else math.nan,
        "schedulerAttempts": real.attempts,
        "timerBindings": timer_bindings(real),
        "scoresAlongReal": along,
        "scoresWrong": wrong,
        "pods": len(names),
        "placed": len(both),
        "sameNode": exact / len(both),
        "sameNodeOrTie": in_ties / len(both),
        "tiedPods": tied,
        "kendallTau": float(tau),
        "meanWaitReal": statistics.fmean(wait(real_placed, n) for n in both),
        "meanWaitSimulated": statistics.fmean(wait(sim, n) for n in both),
        "differ": differ,
    }


def _spread(values: list[float], fmt: str) -> str:
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.fmean(values), fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"


def report(results: dict[str, list[dict[str, Any]]], streams: dict[str, dict[str, Any]]) -> str:
    """The markdown report: per stream, each measure's mean [min, max] over its runs, and the first run's
    differences."""
    lines = [
        "# kube-default against the real kube-scheduler, on the same pod streams",
        "",
        "Made by `make bench-kube-peer` (`bench/peers/kube-scheduler/peer.py`; the streams by `streams.py`). "
        + (__doc__ or "").split("\n\n")[2].replace("\n", " "),
        "",
        "Each stream ran "
        + ", ".join(f"{name} {len(runs)}" for name, runs in results.items())
        + " times on a fresh control plane (each value: mean [min, max] over the runs). *Scores on the real "
        "states*: for each real binding, the simulator's scores on the real cluster's state at that moment (the "
        "pods bound and not yet deleted) rank the real scheduler's node among the best: the score function's "
        "agreement, timing apart. *Timer bindings*: real bindings no pod creation or deletion preceded by "
        f"{TIMER_WINDOW_S} s or less (module docstring of `timer_bindings`).",
        "",
        "| stream | pods | nodes | scores on the real states | same node | same node or a tie | same node, a "
        "job's pods alike | bind order (Kendall's tau) | mean wait real / simulated (s) | timer bindings |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in results.items():

        def measure(key: str, fmt: str, runs: list[dict[str, Any]] = runs) -> str:
            return _spread([float(x[key]) for x in runs], fmt)

        cells = [
            str(runs[0]["pods"]),
            str(len(streams[name]["nodes"])),
            measure("scoresAlongReal", ".0%"),
            measure("sameNode", ".0%"),
            measure("sameNodeOrTie", ".0%"),
            measure("sameNodeByGroup", ".0%"),
            measure("kendallTau", ".3f"),
            f"{measure('meanWaitReal', '.2f')} / {measure('meanWaitSimulated', '.2f')}",
            measure("timerBindings", ".0f"),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## The streams", ""]
    lines += [
        f"* **{name}**: {s['about']} ({len(s['pods'])} pods)."
        for name, s in streams.items()
        if name in results
    ]
    lines += ["", "## Where they differ (the first run of each)", ""]
    for name, runs in results.items():
        r = runs[0]
        if r["scoresWrong"]:
            lines.append(f"* **{name}**: the scores disagree on {len(r['scoresWrong'])} real bindings:")
            lines += [
                f"  * {w['pod']} at {w['boundS']} s: real {w['real']}, best {', '.join(w['best'])}"
                for w in r["scoresWrong"][:5]
            ]
        if not r["differ"]:
            lines.append(f"* **{name}**: every pod on the real scheduler's node or on a node tied with it.")
            continue
        attempts = r["schedulerAttempts"]
        lines.append(
            f"* **{name}**: {len(r['differ'])} pods elsewhere than the real scheduler put them, the first at "
            f"{min(d['realBoundS'] for d in r['differ']):.1f} s (once one pod differs, the cluster the next ones see "
            f"differs too); {r['timerBindings']} real bindings came from a timer of the queue, not an event. The real "
            f"scheduler's attempts took {attempts.get('meanMs', math.nan):.1f} ms on average (95th percentile "
            f"{attempts.get('p95Ms', math.nan):.1f} ms, its log at -v=5), with {r['meanWaiting']:.0f} pods waiting on "
            f"average at each binding and {r['medianEventGapMs']:.0f} ms between pod ends (median): a pass over the "
            "waiting pods outlasts the gap between two ends, so a pod one end moved may not have been tried when the "
            "next end comes, and the real order among waiting pods follows the scheduler's pace; the simulator's "
            "rounds are instants."
        )
        for d in r["differ"][:8]:
            lines.append(
                f"  * {d['pod']}: real {d['real']} at {d['realBoundS']} s, simulated {d['simulated']} "
                f"(best: {', '.join(d['ties'])}) at {d['simulatedBoundS']} s"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", help="comma-separated names (default: every stream of streams/)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each stream (default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "kube-scheduler-peer.md")
    args = parser.parse_args(argv)
    files = sorted((HERE / "streams").glob("*.json"))
    streams = {f.stem: json.loads(f.read_text()) for f in files}
    names = args.streams.split(",") if args.streams else list(streams)
    tool = Toolchain.locate()
    results: dict[str, list[dict[str, Any]]] = {}
    raw: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="mrsched-peer-") as tmp:
                real = run_real(tool, streams[name], Path(tmp))
            sim = simulate(streams[name], real)
            r = compare(streams[name], real, sim)
            results.setdefault(name, []).append(r)
            raw.setdefault(name, []).append(
                {
                    "real": {n: p.to_json() for n, p in real.placed.items()},
                    "simulated": {n: p.to_json() for n, p in sim.items()},
                    "created": real.created,
                    "ended": real.ended,
                    "offset": real.offset,
                }
            )
            print(
                f"{name}: scores {r['scoresAlongReal']:.0%}, same node {r['sameNode']:.0%}, "
                f"tau {r['kendallTau']:.3f}, timer bindings {r['timerBindings']}",
                flush=True,
            )
    args.out.write_text(report(results, streams))
    args.out.with_suffix(".json").write_text(json.dumps({"results": results, "runs": raw}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
