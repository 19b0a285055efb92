"""What work a pod carries, read the way a real job pod declares it: from its container's environment.

A MapReduce task pod names its application, task type and input size (the operator sets these for the worker
program anyway); the emulator's model mode turns them into a task demand with the application's profile.
Nothing here reads node capabilities: those stay hidden in the physics model.

Environment variables read (all optional but ``MRSCHED_APP``, or ``MRSCHED_PROBE_KIND`` for a probe):

* ``MRSCHED_APP``: a built-in application (``data/applications.yaml``).
* ``MRSCHED_TASK_TYPE``: ``map`` (default), ``reduce``, ``commit-job`` (the job commit after the last
  task: a few renames and deletes, modelled as a small fixed demand), or ``probe``.
* ``MRSCHED_PROBE_KIND``, ``MRSCHED_PROBE_SCALE``: a probe task (seed 002 P3-A) of kind ``unit``, ``base``,
  ``cpu`` or ``disk`` at a scale (default 1) carries the known work ``mrsched.core.probes.probe_demand``, the
  same that the worker's ``mrworker probe`` does for real. Probe pods name no application.
* ``MRSCHED_INPUT_BYTES``: bytes this task reads (its split, or its share of the shuffle).
* ``MRSCHED_INPUT_HOSTS``: comma-separated nodes holding a replica of the input; when given and the pod's node
  is not among them, the input is fetched over the network instead of read from the local disk.

A pod without ``MRSCHED_APP`` (and not a probe) carries no finite work: like a server, it runs until it is
deleted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from mrsched.core.catalog import CatalogError, TaskType, application
from mrsched.core.physics import TaskDemand
from mrsched.core.probes import PROBE_KINDS, probe_demand

APP_ENV = "MRSCHED_APP"
TASK_TYPE_ENV = "MRSCHED_TASK_TYPE"
INPUT_BYTES_ENV = "MRSCHED_INPUT_BYTES"
INPUT_HOSTS_ENV = "MRSCHED_INPUT_HOSTS"
PROBE_KIND_ENV = "MRSCHED_PROBE_KIND"
PROBE_SCALE_ENV = "MRSCHED_PROBE_SCALE"


#: Hadoop's commitJob: list the parts, delete the temporary tree, write _SUCCESS. [not in the papers]
JOB_COMMIT = TaskDemand(cpu_s=0.05, read_mb=0.1, write_mb=0.1, memory_mb=50.0)


class WorkloadError(ValueError):
    """The pod declares work the emulator cannot model; the message becomes the container's error."""


def container_env(pod: Mapping[str, Any]) -> dict[str, str]:
    """Literal environment values of the pod's first container, plus the downward-API fields a task uses."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        return {}
    meta = pod.get("metadata") or {}
    field_values = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
    }
    env: dict[str, str] = {}
    for var in containers[0].get("env") or []:
        if "value" in var:
            env[var["name"]] = str(var["value"])
        elif (ref := (var.get("valueFrom") or {}).get("fieldRef")) and ref.get("fieldPath") in field_values:
            env[var["name"]] = field_values[ref["fieldPath"]]
    return env


def demand_from_env(env: Mapping[str, str], node_name: str) -> TaskDemand | None:
    """The task's demand, or None when the pod declares no finite work."""
    if env.get(TASK_TYPE_ENV) == "probe":
        return _probe(env)
    app_name = env.get(APP_ENV)
    if not app_name:
        return None
    task_type = env.get(TASK_TYPE_ENV, "map")
    if task_type == "commit-job":
        return JOB_COMMIT
    if task_type not in ("map", "reduce"):
        raise WorkloadError(
            f"{TASK_TYPE_ENV}={task_type!r}: must be 'map', 'reduce', 'commit-job' or 'probe'"
        )
    try:
        input_bytes = float(env.get(INPUT_BYTES_ENV, "0"))
    except ValueError:
        raise WorkloadError(
            f"{INPUT_BYTES_ENV}={env[INPUT_BYTES_ENV]!r}: must be a number of bytes"
        ) from None
    if input_bytes < 0:
        raise WorkloadError(f"{INPUT_BYTES_ENV} must not be negative")
    try:
        profile = application(app_name).profile(cast(TaskType, task_type))
    except CatalogError as err:
        raise WorkloadError(str(err)) from None
    input_mb = input_bytes / 1e6
    hosts = [h.strip() for h in env.get(INPUT_HOSTS_ENV, "").split(",") if h.strip()]
    demand = profile.demand(input_mb)
    if hosts and node_name not in hosts:
        # Remote replica: the bytes arrive over the NIC rather than from the local disk.
        demand = replace(demand, read_mb=max(0.0, demand.read_mb - input_mb), network_mb=input_mb)
    return demand


def _probe(env: Mapping[str, str]) -> TaskDemand:
    """A probe task's known work (probe pods carry no application)."""
    kind = env.get(PROBE_KIND_ENV, "")
    if kind not in PROBE_KINDS:
        raise WorkloadError(f"{PROBE_KIND_ENV}={kind!r}: a probe must be one of {', '.join(PROBE_KINDS)}")
    raw = env.get(PROBE_SCALE_ENV, "1")
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale > 0):
        raise WorkloadError(f"{PROBE_SCALE_ENV}={raw!r}: must be a positive number")
    return probe_demand(kind, scale)
