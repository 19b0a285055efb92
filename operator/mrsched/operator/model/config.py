"""The operator's settings, from command-line flags or ``MRSCHED_*`` environment variables (the Helm chart
sets the latter)."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mrsched.core.kuberules import Requirement, parse_selector
from mrsched.core.node_metrics import FIELDS
from mrsched.core.probes import PROBE_REPEATS
from mrsched.operator.model.nodemetrics import DEFAULT_QUERIES, MetricsSettings
from mrsched.policies import policy_names

#: The data volume's claim when neither a claim nor a host path is configured.
DEFAULT_DATA_CLAIM = "mrsched-data"


class OperatorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Scheduling policy for jobs that do not name one (``kube-default`` leaves placement to kube-scheduler).
    policy: str = "fair"
    policy_options: dict[str, Any] = Field(default_factory=dict)
    #: Hadoop's heartbeat: how often the loop offers every node to the policy.
    heartbeat_s: float = Field(1.0, gt=0, le=60)
    #: Nodes that run tasks: a label selector in Kubernetes' grammar (``k=v``, ``k!=v``, ``k in (a,b)``,
    #: ``k notin (a)``, ``k``, ``!k``, comma-separated), as ``kubectl get nodes -l`` takes it.
    node_selector: str = "mrsched.dev/worker=true"
    #: Namespaces whose jobs this operator runs; empty means every namespace.
    namespaces: tuple[str, ...] = ()
    #: The schedulerName on pods this operator places itself.
    scheduler_name: str = "mrsched"
    worker_image: str = "ghcr.io/mrsched/worker:0.1.0"
    #: The container command; the image's entrypoint runs the same program.
    worker_command: tuple[str, ...] = ("python", "-m", "mrworker")
    image_pull_policy: str = "IfNotPresent"
    #: The shared data volume every task mounts at ``data_mount``: a ReadWriteMany PersistentVolumeClaim of
    #: this name in each job's namespace, or, only when the admin sets ``data_host_path``, which then replaces
    #: the claim, a directory of each node (a hostPath volume, which Pod Security "baseline" and "restricted"
    #: refuse).
    data_claim: str = DEFAULT_DATA_CLAIM
    data_host_path: str = ""
    data_mount: str = "/data"
    #: The admin's job policy (operator/jobs/jobpolicy.py, docs/security.md). Image prefixes a job's
    #: ``workload.image`` may start with (``*``: any); empty: no job may set its own image or command.
    allowed_images: tuple[str, ...] = ()
    #: A job may name a ``spec.user`` other than its namespace (whose share it draws on under lsps).
    allow_user_override: bool = False
    #: Policies a job's ``spec.policy`` may name; empty: any.
    allowed_policies: tuple[str, ...] = ()
    #: Task pods of one namespace's jobs running or pending at once, at most; 0: no cap. A namespace's
    #: ResourceQuota caps them too (a pod the quota refuses is placed again later, docs/security.md).
    max_tasks_per_namespace: int = Field(0, ge=0)
    #: Finished task pods of a job that ended this long ago are deleted (their outcomes are in the job's
    #: status): they would otherwise stay, in the API server and every watch cache, until the job is deleted.
    finished_pod_ttl_s: float = Field(300.0, ge=0)
    #: Retry backoff of a failed task attempt: base * 2^(failures-1), capped.
    backoff_base_s: float = Field(2.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    #: A task pod still not running after this long is given up and retried elsewhere.
    pending_timeout_s: float = Field(300.0, gt=0)
    #: A task on a NotReady node is given up (its pod deleted with its grace period, never forced, and the task
    #: placed again) only after the node has been NotReady this long: the node lifecycle controller's default
    #: toleration of ``node.kubernetes.io/not-ready`` (300 s), so a kubelet restart costs nothing.
    node_lost_grace_s: float = Field(300.0, ge=0)
    #: A task pod that cannot start for a reason that may pass (ErrImagePull, ImagePullBackOff,
    #: CreateContainerConfigError) fails its job only after this long; the kubelet retries meanwhile (its image
    #: pull back-off reaches its 300 s cap after five tries).
    pod_start_grace_s: float = Field(300.0, ge=0)
    #: A node whose kubelet refused one of our task pods (shutting down, out of a resource by its own count, its
    #: labels no longer matching) is offered no task for this long: placing there again at every heartbeat
    #: would burn an attempt number per round while the node keeps refusing (a node shutting down stays Ready
    #: to the API until the node lifecycle controller's grace ends).
    node_refusal_cooldown_s: float = Field(30.0, ge=0)
    #: Prometheus for node metrics (empty: no live metrics; policies see them as missing).
    prometheus_url: str = ""
    #: PromQL per node metric (keys: load1, cpu_utilisation, memory_available_mb, disk_bytes_per_s,
    #: network_bytes_per_s), overriding the node_exporter defaults; ``{window}`` and ``{label}`` are filled in.
    metrics_queries: dict[str, str] = Field(default_factory=dict)
    #: The series label naming the node, and a regex whose first group is the node name.
    metrics_node_label: str = "node"
    metrics_node_pattern: str = "(.*)"
    metrics_rate_window: str = "1m"
    #: A node whose latest sample is older than this is marked stale (its values unknown, not zero).
    metrics_max_age_s: float = Field(30.0, gt=0)
    #: A cap on map and reduce tasks per node when the node has no ``mrsched.dev/map-slots`` label. None (the
    #: default): no cap, a node runs as many tasks as their pods' requests fit its allocatable, as the kubelet
    #: admits them; a number gives Hadoop 1's fixed slots (2 and 2 reproduce its default) within that.
    map_slots: int | None = Field(None, ge=0)
    reduce_slots: int | None = Field(None, ge=0)
    #: Parallel pod creations (API round trips overlap; the API server orders them anyway).
    #: 32: at 200 nodes every scenario of bench/results/operator-placement.txt placed faster with 32 than with
    #: 8 (fifo 434 against 297 pods/s), and the same threads now also write the jobs' statuses side by side.
    create_workers: int = Field(32, ge=1, le=64)
    metrics_port: int = 9090
    #: Probe tasks measure each worker node's capability (seed 002 P3-A) for policies that need it:
    #: ``auto`` when a policy in use needs probes, ``always``, or ``never``.
    probe_nodes: Literal["auto", "always", "never"] = "auto"
    #: Where probe pods run; empty: the first watched namespace, else ``default``.
    probe_namespace: str = ""
    #: Multiplies every probe's work (shorter probes on real nodes; capabilities stay in the same units).
    probe_scale: float = Field(1.0, gt=0, le=10)
    probe_repeats: int = Field(PROBE_REPEATS, ge=2, le=20)
    #: Watch probed nodes for soft faults (seed 002 ch.5: a node slowing down in CPU or disk, judged from its
    #: map tasks' durations): the NodeProfile's ``status.health`` and ``Degraded`` condition, Node Events and
    #: the ``mrsched_node_slowdown`` / ``mrsched_node_degraded`` gauges (docs/profiles.md).
    health_monitor: bool = True
    #: Taint a node judged degraded ``mrsched.dev/degraded=<resource>:NoSchedule`` and untaint it once it
    #: recovers (needs ``patch`` on nodes: the chart grants it only with this on).
    taint_degraded_nodes: bool = False
    #: While a node carries that taint, one map at a time may still run there, at most one start per this many
    #: seconds: the monitor sees from its duration whether the node recovered (0: none, and the taint stays
    #: until a job that tolerates it runs maps there; operator/scheduling/canary.py).
    degraded_canary_interval_s: float = Field(30.0, ge=0)
    #: A node's health is written to its NodeProfile at most once per this many seconds unless its verdict
    #: changes (the monitor's learned state, to PolicyProfile ``node-health``, likewise).
    health_write_interval_s: float = Field(60.0, ge=0)

    @property
    def probes_namespace(self) -> str:
        return self.probe_namespace or (self.namespaces[0] if self.namespaces else "default")

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        if name not in policy_names():
            raise ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())}")
        return name

    @field_validator("node_selector")
    @classmethod
    def _valid_selector(cls, selector: str) -> str:
        parse_selector(selector)  # SelectorError (a ValueError) says what Kubernetes would refuse in it
        return selector

    def worker_selector(self) -> tuple[Requirement, ...]:
        """:attr:`node_selector`'s requirements (labels.Parse grammar)."""
        return parse_selector(self.node_selector)

    @model_validator(mode="after")
    def _one_data_volume(self) -> OperatorConfig:
        if self.data_claim not in ("", DEFAULT_DATA_CLAIM) and self.data_host_path:
            raise ValueError("set data_claim or data_host_path, not both: tasks mount one data volume")
        return self

    @field_validator("allowed_policies")
    @classmethod
    def _known_policies(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [n for n in names if n not in policy_names()]
        if unknown:
            raise ValueError(f"unknown policies {unknown}; known: {', '.join(policy_names())}")
        return names

    @field_validator("metrics_queries")
    @classmethod
    def _known_metrics(cls, queries: dict[str, str]) -> dict[str, str]:
        unknown = set(queries) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown node metrics {sorted(unknown)}; known: {', '.join(FIELDS)}")
        return queries

    def metrics_settings(self) -> MetricsSettings:
        return MetricsSettings(
            queries={**DEFAULT_QUERIES, **self.metrics_queries},
            node_label=self.metrics_node_label,
            node_pattern=self.metrics_node_pattern,
            rate_window=self.metrics_rate_window,
            max_age_s=self.metrics_max_age_s,
        )

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> OperatorConfig:
        """Fields from ``MRSCHED_<FIELD>`` variables (lists comma-separated), then explicit overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = env.get(f"MRSCHED_{name.upper()}")
            if raw is None:
                continue
            if field.annotation is not None and "tuple" in str(field.annotation):
                values[name] = tuple(v for v in raw.split(",") if v)
            elif name in ("policy_options", "metrics_queries"):
                import json

                values[name] = json.loads(raw)
            elif raw == "" and name in ("map_slots", "reduce_slots"):
                values[name] = None  # the chart's empty value: no cap
            else:
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
