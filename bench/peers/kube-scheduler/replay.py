"""The pod streams' model (what a run did) and the simulated kube-default's replay of a real run's input, with
the measures that compare the two (peer.py's report)."""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import kendalltau

from mrsched.core.model import Node, Resources, Task
from mrsched.policies.kube.default import best_nodes
from mrsched.policies.kube.queue import SchedulingQueue


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
    scheduler broke it when its node is among the best. The pods of one group (a job's maps, or its reduces:
    the same requests and priority) are alike to the scheduler, and which of them its queue pops first is set by
    timestamps microseconds apart; so the k-th pod of a group bound here is the k-th the real scheduler bound
    (its run time, its deletion, its name in the comparison): a tie of the queue broken as the real one broke
    it, as node ties are. Times are shifted by the real clock's fraction of a second at 0 (the back-off window
    is whole seconds of the wall clock)."""
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
    groups = _groups(stream)
    for names in groups.values():  # alike: the same requests and priority
        shapes = {(pods[n]["cpu"], pods[n]["memoryMiB"], pods[n].get("priority", 0)) for n in names}
        assert len(shapes) == 1, f"a group's pods differ in requests or priority: {names}"
    group_of = {n: g for g, names in groups.items() for n in names}
    real_rank = {  # the real binding order, then any pod the real run never bound
        g: sorted((n for n in names if n in real.placed), key=lambda n: real.placed[n].bound_s)
        + [n for n in names if n not in real.placed]
        for g, names in groups.items()
    }
    bound_in_group: Counter[str] = Counter()
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
        pod = pods[by_key[task.key]]
        best, _, _ = best_nodes(nodes, used, Resources(pod["cpu"], float(pod["memoryMiB"])))
        if not best:
            return False
        group = group_of[by_key[task.key]]
        rank, bound_in_group[group] = bound_in_group[group], bound_in_group[group] + 1
        name = real_rank[group][rank]
        pod = pods[name]
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


# --- comparison and report --------------------------------------------------------------------------------------


#: How soon after a binding another may land that the scheduler had already decided (kube-scheduler's binding
#: cycle runs in its own goroutine, after the pod is assumed in its cache): seconds, a stated assumption.
ASYNC_BIND_S = 0.1


def since_end_ms(ends: list[float], at: float) -> int | None:
    """Milliseconds from the last of the sorted pod deletions ``ends`` before ``at`` to ``at`` (None: none)."""
    before = bisect.bisect_right(ends, at)
    return round(1000 * (at - ends[before - 1])) if before else None


def scores_along(stream: dict[str, Any], real: Real) -> tuple[float, list[dict[str, Any]]]:
    """The simulator's scores on the real run's own states: for each real binding, the pods bound before it and
    not yet deleted on each node, and whether the node the real scheduler chose is among the nodes
    policies.kube.default.best_nodes ranks best for the pod then. Timing apart, this is the score function's agreement;
    and the bindings it disagrees with."""
    pods = {p["name"]: p for p in stream["pods"]}
    nodes = {n["name"]: Node(n["name"], n["cpu"], float(n["memoryMiB"])) for n in stream["nodes"]}
    bound = sorted(real.placed, key=lambda n: real.placed[n].bound_s)
    agree, wrong = 0, []
    ends = sorted(real.ended.values())
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
            wrong.append(
                {
                    "pod": name,
                    "real": real.placed[name].node,
                    "best": best,
                    "boundS": round(at, 3),
                    "sinceEndMs": since_end_ms(ends, at),
                    # pods created before it whose binding landed just after it: the scheduler may already
                    # have assumed them on their nodes (its binding cycle runs asynchronously)
                    "earlierBoundAfter": [
                        o
                        for o in bound[i + 1 :]
                        if real.created[o] < real.created[name]
                        and real.placed[o].bound_s - at <= ASYNC_BIND_S
                    ],
                }
            )
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
            "sinceEndMs": since_end_ms(sorted(real.ended.values()), real_placed[n].bound_s),
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
        "groupCountsDiffer": len(both) - alike,
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
