"""A MapReduceJob's spec, read into typed values (the CRD schema has already validated and defaulted it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from mrsched.core.model import Hints, Resources

API_GROUP = "mrsched.dev"
API_VERSION = "v1alpha1"
PLURAL = "mapreducejobs"
KIND = "MapReduceJob"

#: Applications whose maps write the job's output themselves (no reduces).
MAP_ONLY_APPS = frozenset({"randomwriter", "randomtextwriter", "teragen", "jio"})

#: Every namespace's home on the data volume: a job's input and output paths are relative to
#: ``namespaces/<namespace>/`` (Hadoop resolves relative paths in ``/user/<name>``), so that two tenants using
#: the same ``output.path`` never meet, and no job reads or overwrites another namespace's data.
NAMESPACES_ROOT = "namespaces"


class InvalidSpec(ValueError):
    """A spec the CRD schema let through that the operator cannot run (a malformed quantity): the job fails with
    this message (reason ``InvalidSpec``) and every other job goes on."""

    #: The job's status.reason when it is refused.
    reason = "InvalidSpec"


@dataclass(frozen=True)
class Split:
    path: str
    start: int
    length: int
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobSpec:
    name: str
    namespace: str
    uid: str
    app: str
    maps: int
    reduces: int
    output: str
    #: Replace an existing output directory (Hadoop refuses one; so do we, unless the job says so).
    overwrite: bool = False
    input_paths: tuple[str, ...] = ()
    splits: tuple[Split, ...] = ()
    parameters: dict[str, str] = field(default_factory=dict)
    image: str = ""
    command: tuple[str, ...] = ()
    user: str = "default"
    #: spec.user was written (``user`` is the namespace otherwise).
    user_set: bool = False
    queue: str = "default"
    priority: int = 0
    policy: str = ""
    map_hints: Hints = field(default_factory=Hints)
    reduce_hints: Hints = field(default_factory=Hints)
    map_resources: Resources = field(default_factory=Resources)
    reduce_resources: Resources = field(default_factory=Resources)
    #: Ephemeral storage (logs, the writable layer) per task, requested and the limit.
    map_ephemeral_mb: float = 256.0
    reduce_ephemeral_mb: float = 256.0
    backoff_limit: int = 3
    #: A task attempt running longer is killed by the kubelet (pod activeDeadlineSeconds, reason
    #: DeadlineExceeded) and counts as a failed attempt, as Hadoop's mapreduce.task.timeout does.
    task_deadline_s: int | None = None
    reduce_slowstart: float = 0.05
    ttl_after_finished_s: int | None = None
    sort_buffer_mb: int = 100
    input_bytes: int = 0
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def home(self) -> str:
        """The namespace's directory on the data volume; the job's paths are relative to it."""
        return f"{NAMESPACES_ROOT}/{self.namespace}"

    def on_volume(self, path: str) -> str:
        """A path of the spec (input, split, output) as the worker sees it: relative to the data volume."""
        return f"{self.home}/{path}"

    @property
    def output_dir(self) -> str:
        return self.on_volume(self.output)

    @property
    def job_dir(self) -> str:
        """Intermediate data on the shared volume, unique per job object (a recreated job starts clean)."""
        return f".mrsched/jobs/{self.namespace}/{self.name}-{self.uid[:8]}"

    @classmethod
    def from_resource(cls, body: dict[str, Any]) -> JobSpec:
        meta, spec = body["metadata"], body.get("spec") or {}
        workload = spec.get("workload") or {}
        data_in = spec.get("input") or {}
        resources = spec.get("resources") or {}
        hints = spec.get("hints") or {}
        splits = tuple(
            Split(s["path"], int(s.get("start", 0)), int(s.get("length", 0)), tuple(s.get("hosts") or ()))
            for s in data_in.get("splits") or []
        )
        app = workload.get("app", "wordcount")
        return cls(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            uid=meta.get("uid", ""),
            app=app,
            maps=int(spec.get("maps", len(splits) or 1)),
            reduces=0 if app in MAP_ONLY_APPS else int(spec.get("reduces", 1)),
            output=(spec.get("output") or {}).get("path", f"output/{meta['name']}"),
            overwrite=bool((spec.get("output") or {}).get("overwrite", False)),
            input_paths=tuple(data_in.get("paths") or ()),
            splits=splits,
            parameters={k: str(v) for k, v in (workload.get("parameters") or {}).items()},
            image=workload.get("image", ""),
            command=tuple(workload.get("command") or ()),
            # The job's owner for per-user policies (lsps): spec.user, else its namespace (a tenant per namespace).
            user=spec.get("user") or meta.get("namespace", "default"),
            user_set=bool(spec.get("user")),
            queue=spec.get("queue", "default"),
            priority=int(spec.get("priority", 0)),
            policy=spec.get("policy", ""),
            map_hints=_hints(hints.get("map")),
            reduce_hints=_hints(hints.get("reduce")),
            map_resources=_resources(resources.get("map"), "map"),
            reduce_resources=_resources(resources.get("reduce"), "reduce"),
            map_ephemeral_mb=_ephemeral_mb(resources.get("map"), "map"),
            reduce_ephemeral_mb=_ephemeral_mb(resources.get("reduce"), "reduce"),
            backoff_limit=int(spec.get("backoffLimit", 3)),
            task_deadline_s=spec.get("taskDeadlineSeconds"),
            reduce_slowstart=float(spec.get("reduceSlowStart", 0.05)),
            ttl_after_finished_s=spec.get("ttlSecondsAfterFinished"),
            sort_buffer_mb=int(spec.get("sortBufferMB", 100)),
            input_bytes=int(data_in.get("bytes", 0)),
            node_selector=dict(spec.get("nodeSelector") or {}),
            tolerations=tuple(spec.get("tolerations") or ()),
        )

    def split_of(self, index: int) -> Split | None:
        return self.splits[index] if self.splits else None

    def map_input_bytes(self, index: int) -> int:
        split = self.split_of(index)
        if split is not None:
            return split.length
        return self.input_bytes // max(1, self.maps)


def _hints(raw: dict[str, Any] | None) -> Hints:
    raw = raw or {}
    return Hints(
        cpu=int(raw.get("cpu", 5)),
        memory=int(raw.get("memory", 5)),
        disk=int(raw.get("disk", 5)),
        network=int(raw.get("network", 5)),
    )


def _resources(raw: dict[str, Any] | None, kind: str) -> Resources:
    raw = raw or {}
    values = {}
    for name, default, parse in (("cpu", "1", parse_cpu), ("memory", "1Gi", parse_memory_mb)):
        value = raw.get(name, default)
        try:
            values[name] = parse(value)
        except ValueError as err:
            raise InvalidSpec(f"spec.resources.{kind}.{name}: {err}") from err
        if not 0 < values[name] < float("inf"):
            raise InvalidSpec(f"spec.resources.{kind}.{name}: {value!r} must be a positive quantity")
    return Resources(cpu=values["cpu"], memory_mb=values["memory"])


def _ephemeral_mb(raw: dict[str, Any] | None, kind: str) -> float:
    value = (raw or {}).get("ephemeralStorage", "256Mi")
    try:
        mb = parse_memory_mb(value)
    except ValueError as err:
        raise InvalidSpec(f"spec.resources.{kind}.ephemeralStorage: {err}") from err
    if not 0 < mb < float("inf"):
        raise InvalidSpec(f"spec.resources.{kind}.ephemeralStorage: {value!r} must be a positive quantity")
    return mb


def quantity(value: str | int | float) -> Decimal:
    """A Kubernetes quantity (``500m``, ``1.5Gi``, ``2``, ``1e3``; the kubernetes client's ``parse_quantity``);
    a ValueError that quotes it when it is none."""
    try:
        parsed: Decimal = parse_quantity(value)  # type: ignore[no-untyped-call]
        return parsed
    except (ValueError, TypeError, ArithmeticError) as err:
        raise ValueError(
            f"{value!r} is not a Kubernetes quantity (a number with an optional suffix: 500m, 2, 512Mi, 1G)"
        ) from err


def parse_cpu(value: str | int | float) -> float:
    """A Kubernetes CPU quantity in cores: ``500m`` is 0.5."""
    return float(quantity(value))


def parse_memory_mb(value: str | int | float) -> float:
    """A Kubernetes memory quantity in MiB."""
    return float(quantity(value)) / 2**20
