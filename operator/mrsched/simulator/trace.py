"""A run's trace, to explain a result from what happened in it: no cause in a report without the
figure that shows it.

:class:`RunTrace` follows a kubernetes-mode simulation round by round. Every change of what runs happens at an
event that is followed by a round (a task ends, a job arrives), so the state after each round holds until the
next: the trace integrates it exactly. It measures:

* **idle places while work waited**: after each round, the pods that the smallest request of a startable task
  (a map not started, a reduce past slow-start) would still fit on each node, up to the number of such tasks,
  each node's with the rule the policy names for holding it back (``Policy.holding``); pod-seconds in all, by
  rule, and the longest spell;
* **slow-class tails**: each job's last task, the node class it ran on, its time (a reduce's from its job's last
  map, if it waited for it) and its isolated time on the fastest class (noise off); and per class the
  task-seconds beyond what the fastest class would have taken;
* **waits and tails**: each job's wait for its first task, its run, how many jobs ran at once, and the time
  from its last map to its end.

The trace reads the simulation and asks the policy only :meth:`Policy.holding`, which changes nothing: a traced
run gives the same results as one without (tests/unit/simulator/test_trace.py).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mrsched.core.model import ClusterSnapshot, Job, Resources, TaskOutcome, pods_that_fit
from mrsched.core.physics import isolated_duration
from mrsched.simulator.engine import Simulation
from mrsched.simulator.result import SimulationResult

PLACED_NOTHING = "the policy placed nothing (no rule named)"


@dataclass
class _Spell:
    start: float
    pod_s: float = 0.0
    end: float = 0.0
    places: int = 0  # the cluster's places for the spell's waiting requests (the most of its rounds)
    by_reason: dict[str, float] = field(default_factory=lambda: defaultdict(float))


class RunTrace:
    """Attach to a kubernetes-mode :class:`Simulation` before ``run()``; :meth:`summary` after."""

    def __init__(self, sim: Simulation) -> None:
        if sim.mode != "kubernetes":
            raise ValueError("a run's trace follows kubernetes-mode rounds only")
        self.sim = sim
        self.outcomes: list[TaskOutcome] = []
        self._at: float | None = None  # the last round's time and what was idle after it
        self._idle: dict[str, tuple[float, str]] = {}  # node -> (pods idle, reason)
        self._places = 0  # the cluster's places for the last round's smallest startable request
        self._fastest_alone: dict[tuple[str, str, str], tuple[str, float]] = {}
        self.idle_by_reason: dict[str, float] = defaultdict(float)
        self.spells: list[_Spell] = []
        self._spell: _Spell | None = None
        self.pods = sum(
            pods_that_fit(n.cores, n.memory_mb, Resources()) for n in sim.nodes.values()
        )  # the cluster's places for the default 1-CPU, 1 GB pod, for "of N pods"
        original_round, original_finished = sim._round, sim.policy.on_task_finished

        def traced_round(now: float) -> None:
            original_round(now)
            self._after_round(sim.snapshot, now)

        def finished(outcome: TaskOutcome) -> None:
            self.outcomes.append(outcome)
            original_finished(outcome)

        sim._round = traced_round  # type: ignore[method-assign]
        sim.policy.on_task_finished = finished  # type: ignore[method-assign]

    def _close(self, now: float) -> None:
        """Add the idle places since the last round, which held until ``now``."""
        if self._at is None:
            self._at = now
            return
        span = now - self._at
        total = sum(pods for pods, _ in self._idle.values())
        if span > 0 and total > 0:
            for pods, reason in self._idle.values():
                self.idle_by_reason[reason] += pods * span
            if self._spell is None:
                self._spell = _Spell(self._at)
                self.spells.append(self._spell)
            self._spell.pod_s += total * span
            self._spell.end = now
            self._spell.places = max(self._spell.places, self._places)
            for pods, reason in self._idle.values():
                self._spell.by_reason[reason] += pods * span
        elif total == 0:
            self._spell = None
        self._at = now  # integrated up to here (a second summary adds nothing)

    def _after_round(self, snapshot: ClusterSnapshot, now: float) -> None:
        self._close(now)
        startable = _startable(snapshot.jobs)
        self._idle = {}
        if not startable:
            return
        smallest = Resources(min(r.cpu for _, r in startable), min(r.memory_mb for _, r in startable))
        self._places = sum(pods_that_fit(n.cores, n.memory_mb, smallest) for n in self.sim.nodes.values())
        waiting = len(startable)
        for node in sorted(snapshot.nodes):
            free = pods_that_fit(*snapshot.unrequested(node), smallest)
            if free <= 0 or waiting <= 0:
                continue
            pods = min(free, waiting)
            waiting -= pods
            reason = self.sim.policy.holding(snapshot, node) or PLACED_NOTHING
            self._idle[node] = (float(pods), reason)

    def summary(self, result: SimulationResult) -> dict[str, Any]:
        """The trace's figures (module docstring), JSON-ready."""
        self._close(result.makespan_s)
        sim = self.sim
        jobs = {j.id: j for j in sim.jobs}
        done = [
            (r.id, r.submit_s, r.start_s, r.finish_s)
            for r in result.jobs
            if r.finish_s is not None and r.start_s is not None and not r.failed
        ]
        span = (max(f for *_, f in done) - min(b for _, _, b, _ in done)) if done else 0.0
        longest = max(self.spells, key=lambda s: s.pod_s, default=None)
        return {
            "pods": self.pods,
            "idle_pod_s": sum(self.idle_by_reason.values()),
            "idle_by_reason": dict(sorted(self.idle_by_reason.items(), key=lambda kv: -kv[1])),
            "longest_idle": None
            if longest is None
            else {
                "start_s": longest.start,
                "duration_s": longest.end - longest.start,
                "mean_pods": longest.pod_s / max(longest.end - longest.start, 1e-9),
                "places": longest.places,
                "reason": max(longest.by_reason, key=lambda r: longest.by_reason[r]),
            },
            "mean_first_task_wait_s": _mean([b - a for _, a, b, _ in done]),
            "mean_run_s": _mean([f - b for _, _, b, f in done]),
            "jobs_at_once": sum(f - b for _, _, b, f in done) / span if span > 0 else math.nan,
            "tails": self._tails(jobs),
            "class_excess_s": self._class_excess(jobs),
            "mean_reduce_tail_s": _mean(
                [
                    f - sim._last_map_done[j]
                    for j, _, _, f in done
                    if jobs[j].reduces and j in sim._last_map_done
                ]
            ),
        }

    def _fastest(self, job: Job, outcome: TaskOutcome) -> tuple[str, float]:
        """The class on which ``outcome``'s task takes least alone (noise off, input local), and that time
        (alike tasks, one job's maps or its reduces, share it)."""
        key = (job.id, job.app, outcome.task.kind)
        if key not in self._fastest_alone:
            demand = self.sim.dataflow.base(job.app, outcome.task)
            by_class = {
                self.sim.nodes[n].node_class: cap for n, cap in self.sim.noise_free_capabilities.items()
            }
            self._fastest_alone[key] = min(
                ((cls, isolated_duration(cap, demand)) for cls, cap in by_class.items()), key=lambda kv: kv[1]
            )
        return self._fastest_alone[key]

    def _took(self, o: TaskOutcome) -> float:
        """How long the task ran: a reduce from its job's last map on, if it was placed before (it waited)."""
        begin = o.start_s
        if o.task.kind == "reduce":
            begin = max(begin, self.sim._last_map_done.get(o.task.job_id, begin))
        return o.finish_s - begin

    def _tails(self, jobs: dict[str, Job]) -> list[dict[str, Any]]:
        """Each job's last task to end: where it ran and how long (a reduce: after its job's last map), against
        its fastest class alone."""
        last: dict[str, TaskOutcome] = {}
        for o in self.outcomes:
            if o.succeeded and (o.task.job_id not in last or o.finish_s > last[o.task.job_id].finish_s):
                last[o.task.job_id] = o
        out = []
        for job_id, o in last.items():
            cls, fastest = self._fastest(jobs[job_id], o)
            out.append(
                {
                    "job": job_id,
                    "task": o.task.kind,
                    "class": self.sim.nodes[o.node].node_class,
                    "duration_s": self._took(o),
                    "fastest_class": cls,
                    "fastest_alone_s": fastest,
                }
            )
        return sorted(out, key=lambda t: -(t["duration_s"] - t["fastest_alone_s"]))

    def _class_excess(self, jobs: dict[str, Job]) -> dict[str, dict[str, float]]:
        """Per node class: its tasks' seconds, and those beyond what each task takes alone on its fastest class."""
        out: dict[str, dict[str, float]] = defaultdict(lambda: {"task_s": 0.0, "excess_s": 0.0})
        for o in self.outcomes:
            if not o.succeeded:
                continue
            cls = self.sim.nodes[o.node].node_class
            took = self._took(o)
            out[cls]["task_s"] += took
            out[cls]["excess_s"] += max(0.0, took - self._fastest(jobs[o.task.job_id], o)[1])
        return dict(out)


def _startable(jobs: list[Job]) -> list[tuple[str, Resources]]:
    """(kind, request) of every task a policy could start now: maps not started, reduces past slow-start."""
    out: list[tuple[str, Resources]] = []
    for job in jobs:
        out += [("map", job.map_request)] * max(0, job.unstarted("map"))
        if job.reduces_allowed():
            out += [("reduce", job.reduce_request)] * max(0, job.unstarted("reduce"))
    return out


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def describe(trace: dict[str, Any], reference: dict[str, Any], label: str = "kube-default") -> list[str]:
    """Sentences for a report that compare a policy's trace with a reference's: each states a figure of the
    traces, and a cause only where its figure shows it: the longest idle spell where it held at least a tenth
    of the cluster's places for 10 s or more (else the idle pod-seconds, by their commonest rule); a job's last
    task where it ran 10 s or more past, and 1.5x, its time alone on the fastest class; the wait for a first
    task and the reduce tail where they exceed twice the reference's and it by 10 s; the jobs at once where 1.2x
    the reference's and each ran longer."""
    lines = []
    hole = trace.get("longest_idle")
    places = (hole or {}).get("places") or trace["pods"]
    if hole and hole["duration_s"] >= 10.0 and hole["mean_pods"] >= 0.1 * places:
        lines.append(
            f"{hole['mean_pods']:.0f} of {places} pods idle for {hole['duration_s']:.0f} s from "
            f"{hole['start_s']:.0f} s while tasks waited to start ({hole['reason']}); "
            f"{trace['idle_pod_s']:.0f} pod-seconds idle so in all, against {label}'s {reference['idle_pod_s']:.0f}."
        )
    elif trace["idle_pod_s"] > 0:
        top = next(iter(trace["idle_by_reason"]), PLACED_NOTHING)
        lines.append(
            f"{trace['idle_pod_s']:.0f} pod-seconds idle while tasks waited ({top} the most), against "
            f"{label}'s {reference['idle_pod_s']:.0f}."
        )
    for tail in trace["tails"][:2]:
        extra = tail["duration_s"] - tail["fastest_alone_s"]
        if extra >= 10.0 and tail["duration_s"] >= 1.5 * tail["fastest_alone_s"]:
            lines.append(
                f"{tail['job']}'s last {tail['task']} ran {tail['duration_s']:.0f} s on {tail['class']} "
                f"(alone on {tail['fastest_class']}: {tail['fastest_alone_s']:.0f} s), a {extra:.0f} s tail."
            )
    mine, theirs = trace["mean_first_task_wait_s"], reference["mean_first_task_wait_s"]
    if mine > max(2 * theirs, theirs + 10.0):
        lines.append(f"Jobs waited {mine:.0f} s for their first task on average ({label}: {theirs:.0f} s).")
    if (
        trace["jobs_at_once"] > 1.2 * reference["jobs_at_once"]
        and trace["mean_run_s"] > reference["mean_run_s"]
    ):
        lines.append(
            f"It ran {trace['jobs_at_once']:.1f} jobs at once against {label}'s {reference['jobs_at_once']:.1f}, "
            f"each for {trace['mean_run_s']:.0f} s from its first task ({label}: {reference['mean_run_s']:.0f} s)."
        )
    tail, ref_tail = trace["mean_reduce_tail_s"], reference["mean_reduce_tail_s"]
    if not math.isnan(tail) and tail > max(2 * ref_tail, ref_tail + 10.0):
        lines.append(
            f"Its jobs ended {tail:.0f} s after their last map on average ({label}: {ref_tail:.0f} s)."
        )
    return lines
