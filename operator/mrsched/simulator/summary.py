"""What a run's results record: each policy's summary over a run (job times, locality, loads, detection),
means over seeds, and which physics the run had."""

from __future__ import annotations

import bisect
import math
import statistics
from typing import Any

from mrsched.simulator.engine import SimulationResult
from mrsched.simulator.scenario import ClusterSpec


def map_time_summary(results: list[SimulationResult]) -> dict[str, Any]:
    """Mean successful map time per app over all seeds, overall and per node class (Table 3.3), and the share
    of each app's maps that ran on each node class."""
    pooled: dict[str, dict[str, list[float]]] = {}
    for r in results:
        for app, by_class in r.map_times.items():
            for cls, times in by_class.items():
                pooled.setdefault(app, {}).setdefault(cls, []).extend(times)
    out: dict[str, Any] = {}
    for app, by_class in sorted(pooled.items()):
        every = [t for times in by_class.values() for t in times]
        out[app] = {
            "mean_s": statistics.fmean(every),
            "by_class_mean_s": {c: statistics.fmean(t) for c, t in sorted(by_class.items())},
            "by_class_share": {c: len(t) / len(every) for c, t in sorted(by_class.items())},
        }
    return out


def summarise(result: SimulationResult) -> dict[str, Any]:
    # Response time (submit to finish) and running time (first task start to finish) of each finished job.
    done = [
        (j, j.finish_s - j.submit_s, j.finish_s - (j.start_s or j.submit_s))
        for j in result.jobs
        if j.finish_s is not None and not j.failed
    ]
    times = sorted(response for _, response, _ in done)

    def pct(p: float) -> float:
        return times[min(len(times) - 1, round(p * (len(times) - 1)))] if times else 0.0

    per_user: dict[str, list[float]] = {}
    for j, response, _ in done:
        per_user.setdefault(j.user, []).append(response)
    total_maps = sum(result.locality.values()) or 1
    trace = result.extra.get("metrics_trace")
    loads = _LoadTrace(trace) if trace else None
    return {
        "makespan_s": result.makespan_s,
        "mean_job_time_s": statistics.fmean(times) if times else 0.0,
        "p50_job_time_s": pct(0.5),
        "p95_job_time_s": pct(0.95),
        "mean_job_time_by_user_s": {u: statistics.fmean(v) for u, v in sorted(per_user.items())},
        # Slowdown: response time over running time (1 = never waited to start).
        "mean_slowdown": statistics.fmean(r / max(run, 1e-9) for _, r, run in done) if done else 0.0,
        "mean_starvation_s": statistics.fmean(j.starvation_s for j, _, _ in done) if done else 0.0,
        "mean_reduce_idle_s": statistics.fmean(j.reduce_idle_s for j, _, _ in done) if done else 0.0,
        "locality": {k: v / total_maps for k, v in sorted(result.locality.items())},
        "throughput_work_per_s": result.throughput,
        "failed_jobs": sum(1 for j in result.jobs if j.failed),
        "failed_attempts": result.tasks_failed,
        "tasks_started": result.tasks_started,
        "events": result.events,
        **({"detection": result.extra["detection"]} if "detection" in result.extra else {}),
        "jobs": [
            {
                "id": j.id,
                "user": j.user,
                "submit_s": j.submit_s,
                "start_s": j.start_s,
                "finish_s": j.finish_s,
                "task_s": round(j.task_s, 3),
                "starvation_s": round(j.starvation_s, 3),
                "reduce_idle_s": round(j.reduce_idle_s, 3),
                **(loads.load_ratio(j.start_s, j.finish_s) if loads is not None else {}),
            }
            for j in result.jobs
        ],
    }


class _LoadTrace:
    """The policy's metrics trace (load1/cores per node, in time order) indexed for per-job windows: a job's
    points are found by bisection in each node's series, where a scan of every point per job took hours for
    the SWIM day's 5,894 jobs. The mean is an exact sum (``math.fsum``, as ``statistics.fmean``)."""

    def __init__(self, trace: dict[str, list[tuple[float, float, float | None]]]) -> None:
        self.series = [([p[0] for p in points], [p[1] for p in points]) for points in trace.values()]

    def _points(self, start: float, end: float) -> list[float]:
        out: list[float] = []
        for times, ratios in self.series:
            out += ratios[bisect.bisect_left(times, start) : bisect.bisect_right(times, end)]
        return out

    def load_ratio(self, start: float | None, end: float | None) -> dict[str, float]:
        """Mean load1/cores over the nodes while the job ran, as the policy's metrics showed it (seed 000's
        utilisation, Fig 8); only for policies that read metrics."""
        if start is None or end is None:
            return {}
        points = self._points(start, end)
        if not points:
            return {}
        # Steady state (seed 000 Fig 8 reads utilisation "after the learning phase"): the middle of the run,
        # without the ramp-up of its first 20 % and the reduce tail of its last 20 %.
        steady = self._points(start + 0.2 * (end - start), start + 0.8 * (end - start))
        out = {"load_ratio": round(statistics.fmean(points), 4)}
        if steady:
            out["load_ratio_steady"] = round(statistics.fmean(steady), 4)
        return out


def finite_mean(values: list[float]) -> float | None:
    """The mean, or None (JSON null) when any value is NaN (a bound that could not be computed)."""
    return None if any(math.isnan(v) for v in values) else statistics.fmean(values)


def mean_of_dicts(dicts: list[dict[str, float]], *, missing: float | None = 0.0) -> dict[str, float]:
    """Key by key, the mean over the seeds; a key a seed lacks counts as ``missing`` there (0 for a locality
    level no map had), or is left out of that key's mean when ``missing`` is None."""
    keys = sorted({k for d in dicts for k in d})
    out = {}
    for k in keys:
        values = [d[k] for d in dicts if k in d]
        if missing is not None:
            values += [missing] * (len(dicts) - len(values))
        out[k] = statistics.fmean(values)
    return out


def mean_over(runs: list[dict[str, Any]], key: str) -> float:
    """The mean of ``key`` over the seeds' summaries."""
    return statistics.fmean(r[key] for r in runs)


def physics_label(cluster: ClusterSpec) -> dict[str, Any]:
    """Which physics a run had, as results.json records it (every result says): the switches on and
    off (any off with its reason), the stragglers when any, and which policies ran speculative execution."""
    physics = cluster.physics
    label: dict[str, Any] = {
        "physics": {
            "on": physics.enabled(),
            "off": physics.disabled(),
            **({"reason": physics.reason} if physics.disabled() else {}),
        },
        "speculation": cluster.speculation.policies if cluster.speculation.enabled else [],
    }
    if not cluster.speculation.enabled:
        label["speculationOff"] = cluster.speculation.reason
    if cluster.variant.departs():
        label["variant"] = cluster.variant.model_dump(by_alias=True)
    if cluster.stragglers.probability > 0:
        label["stragglers"] = cluster.stragglers.model_dump(by_alias=True)
    return label
