"""The operator's own Prometheus metrics, served on ``/metrics``."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: status.locality's levels as the label values of mrsched_map_locality_total.
LOCALITY_LABELS = {
    "nodeLocal": "node-local",
    "rackLocal": "rack-local",
    "offRack": "off-rack",
    "unknown": "unknown",
}
_JOB_SECONDS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.jobs = Gauge("mrsched_jobs", "MapReduceJobs by phase", ["phase"], registry=r)
        self.tasks_started = Counter("mrsched_tasks_started_total", "Task pods created", ["type"], registry=r)
        self.tasks_finished = Counter(
            "mrsched_tasks_finished_total", "Task attempts finished", ["type", "outcome"], registry=r
        )
        self.placement_seconds = Histogram(
            "mrsched_placement_seconds",
            "Policy time per scheduling round",
            ["policy"],
            registry=r,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
        )
        self.loop_seconds = Histogram(
            "mrsched_loop_seconds",
            "Duration of one heartbeat (read, decide, write)",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.canaries_started = Counter(
            "mrsched_degraded_canaries_total",
            "Canary maps started on nodes tainted as degraded, to see whether they recovered",
            registry=r,
        )
        self.fenced_writes = Counter(
            "mrsched_fenced_writes_total",
            "Writes refused because this replica was no longer certain to lead (the round stopped there)",
            registry=r,
        )
        self.job_errors = Counter(
            "mrsched_job_errors_total",
            "Errors in one job's part of a round (its spec, its reconcile); the round went on for the others",
            ["stage"],
            registry=r,
        )
        self.bind_errors = Counter(
            "mrsched_binding_errors_total", "Pod creations that failed", ["reason"], registry=r
        )
        self.last_round = Gauge(
            "mrsched_last_round_timestamp_seconds", "When the last round ended", registry=r
        )
        self.prometheus_up = Gauge(
            "mrsched_prometheus_up",
            "1 when the last read of node metrics from Prometheus succeeded",
            registry=r,
        )
        self.nodes_probing = Gauge(
            "mrsched_nodes_probing",
            "Worker nodes running probe tasks (they take no tasks meanwhile)",
            registry=r,
        )
        self.profile_writes = Counter(
            "mrsched_profile_writes_total",
            "Writes of learned state to NodeProfiles and AppProfiles",
            registry=r,
        )
        self.node_metrics = Gauge(
            "mrsched_node_metrics_nodes",
            "Worker nodes by the state of their live metrics (fresh, stale, missing, unavailable)",
            ["status"],
            registry=r,
        )
        self.metrics_fallback = Gauge(
            "mrsched_metrics_fallback_nodes",
            "Worker nodes a metric-driven policy schedules on its fallback (their metrics are not fresh)",
            ["policy"],
            registry=r,
        )
        self.node_slots = Gauge(
            "mrsched_node_slots",
            "Slots per node that a policy sets itself (seed 001's adaptive slots), by task type",
            ["node", "type", "policy"],
            registry=r,
        )
        self.node_slowdown = Gauge(
            "mrsched_node_slowdown",
            "Soft-fault monitor (seed 002 ch.5): a probed node's posterior mean time per unit of work over its "
            "probed nominal (1: as probed; 2: twice as slow), by resource (cpu, disk)",
            ["node", "resource"],
            registry=r,
        )
        self.node_degraded = Gauge(
            "mrsched_node_degraded",
            "1 while the soft-fault monitor judges a node degraded in a resource (cpu, disk), else 0",
            ["node", "resource"],
            registry=r,
        )
        self.job_starvation = Histogram(
            "mrsched_job_starvation_seconds",
            "Finished jobs' reduce starvation (seed 003 section III: mean delay of the reduces launched after the "
            "last map finished), by policy",
            ["policy"],
            registry=r,
            buckets=(0, *_JOB_SECONDS),
        )
        self.job_reduce_idle = Histogram(
            "mrsched_job_reduce_idle_seconds",
            "Finished jobs' reduce slot-seconds held before the last map finished, by policy",
            ["policy"],
            registry=r,
            buckets=(0, *_JOB_SECONDS),
        )
        self.map_locality = Counter(
            "mrsched_map_locality_total",
            "Started map attempts of finished jobs by data locality level (node-local, rack-local, off-rack, "
            "unknown), by policy",
            ["policy", "level"],
            registry=r,
        )

    def job_finished(
        self, policy: str, starvation_s: float, reduce_idle_s: float, locality: Mapping[str, int]
    ) -> None:
        """Observe a job once, when it finishes: its starvation, reduce idle time and map locality counts."""
        self.job_starvation.labels(policy).observe(starvation_s)
        self.job_reduce_idle.labels(policy).observe(reduce_idle_s)
        for level, count in locality.items():
            self.map_locality.labels(policy, LOCALITY_LABELS.get(level, level)).inc(count)
