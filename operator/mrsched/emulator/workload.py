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
* ``MRSCHED_WAIT_FOR_MAPS``, ``MRSCHED_MAPS``: a reduce that waits (up to that many seconds) for the output of
  its job's ``MRSCHED_MAPS`` maps, as the worker does: the emulator holds it idle until every map of its job
  (pods labelled as the operator labels them) has succeeded, then fetches the shuffle from where they ran.

A pod without ``MRSCHED_APP`` (and not a probe) carries no finite work: like a server, it runs until it is
deleted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from mrsched.core.catalog import CatalogError, TaskType, application
from mrsched.core.physics import TaskDemand
from mrsched.core.probes import PROBE_KINDS, probe_demand
from mrsched.core.report import TaskReport

APP_ENV = "MRSCHED_APP"
TASK_TYPE_ENV = "MRSCHED_TASK_TYPE"
INPUT_BYTES_ENV = "MRSCHED_INPUT_BYTES"
INPUT_HOSTS_ENV = "MRSCHED_INPUT_HOSTS"
PROBE_KIND_ENV = "MRSCHED_PROBE_KIND"
PROBE_SCALE_ENV = "MRSCHED_PROBE_SCALE"
WAIT_FOR_MAPS_ENV = "MRSCHED_WAIT_FOR_MAPS"
MAPS_ENV = "MRSCHED_MAPS"
#: The labels the operator puts on task pods (``mrsched.operator.model.pods``, a layer above; a test keeps them equal).
JOB_UID_LABEL = "mrsched.dev/job-uid"
TYPE_LABEL = "mrsched.dev/task-type"
INDEX_LABEL = "mrsched.dev/task-index"


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
        elif ref := (var.get("valueFrom") or {}).get("fieldRef"):
            path = ref.get("fieldPath", "")
            if path in field_values:
                env[var["name"]] = field_values[path]
            elif found := _LABEL_OR_ANNOTATION.fullmatch(path):
                # e.g. an Indexed Job's JOB_COMPLETION_INDEX, which the Job controller sets from the pod's
                # batch.kubernetes.io/job-completion-index annotation; a missing key is "", as a kubelet gives
                env[var["name"]] = str((meta.get(found["field"]) or {}).get(found["key"], ""))
    return env


#: The downward API's metadata.labels['key'] and metadata.annotations['key'] (quoted either way).
_LABEL_OR_ANNOTATION = re.compile(r"metadata\.(?P<field>labels|annotations)\[['\"](?P<key>[^'\"]+)['\"]\]")


def demand_from_env(
    env: Mapping[str, str], node_name: str, shuffle_from: Mapping[str, float] | None = None
) -> TaskDemand | None:
    """The task's demand, or None when the pod declares no finite work.

    ``shuffle_from`` (reduces only): the job's map output by the node holding it, in any unit; the share held
    on other nodes than ``node_name`` of the reduce's input-proportional reads (its shuffle fetch) comes over
    the network instead of from the local disk.
    """
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
    total = sum(shuffle_from.values()) if shuffle_from else 0.0
    if task_type == "reduce" and shuffle_from and total > 0:
        # The shuffle: map output on other nodes is fetched over the network, in proportion to where it is.
        fetched = profile.read_per_input * input_mb
        remote = fetched * (1.0 - shuffle_from.get(node_name, 0.0) / total)
        demand = replace(
            demand, read_mb=max(0.0, demand.read_mb - remote), network_mb=demand.network_mb + remote
        )
    return demand


def reduce_wait(env: Mapping[str, str]) -> tuple[int, float] | None:
    """(maps, timeout in seconds) of a reduce that waits for its job's maps, else None."""
    if env.get(TASK_TYPE_ENV) != "reduce" or not env.get(APP_ENV):
        return None
    try:
        maps, timeout_s = int(env.get(MAPS_ENV, "0")), float(env.get(WAIT_FOR_MAPS_ENV, "0"))
    except ValueError:
        return None
    return (maps, timeout_s) if maps > 0 and timeout_s > 0 else None


def map_task(pod: Mapping[str, Any]) -> tuple[str, int] | None:
    """(namespace/job uid, map index) of an operator's map pod, else None."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(TYPE_LABEL) != "map" or not labels.get(JOB_UID_LABEL):
        return None
    try:
        index = int(labels.get(INDEX_LABEL, ""))
    except ValueError:
        return None
    return f"{meta.get('namespace', '')}/{labels[JOB_UID_LABEL]}", index


def job_of(pod: Mapping[str, Any]) -> str:
    """namespace/job uid of an operator's task pod ("" for other pods)."""
    meta = pod.get("metadata") or {}
    uid = (meta.get("labels") or {}).get(JOB_UID_LABEL, "")
    return f"{meta.get('namespace', '')}/{uid}" if uid else ""


def map_output_weight(pod: Mapping[str, Any]) -> float:
    """A succeeded map pod's output in bytes: its report's writtenBytes, else its input size, else 1."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        message = ((status.get("state") or {}).get("terminated") or {}).get("message", "")
        try:
            return float(TaskReport.from_json(message).written_bytes)
        except ValueError:
            pass
    try:
        return float(container_env(pod).get(INPUT_BYTES_ENV, "")) or 1.0
    except ValueError:
        return 1.0


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
