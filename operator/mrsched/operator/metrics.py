"""The operator's own Prometheus metrics, served on ``/metrics``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
