"""Task pods: the manifest of one attempt, and what a pod's status says about it (pure, no API calls)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from mrsched.core.kuberules import node_affinity
from mrsched.core.model import Explanation
from mrsched.core.report import TaskReport
from mrsched.operator.model.config import DEFAULT_DATA_CLAIM, OperatorConfig
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION, KIND, JobSpec

#: ``commit`` is the job commit (the worker's ``commit-job``) that runs once every task has succeeded.
TaskType = Literal["map", "reduce", "commit"]

JOB_LABEL = "mrsched.dev/job"
JOB_UID_LABEL = "mrsched.dev/job-uid"
TYPE_LABEL = "mrsched.dev/task-type"
INDEX_LABEL = "mrsched.dev/task-index"
ATTEMPT_LABEL = "mrsched.dev/attempt"
PLACEMENT_ANNOTATION = "mrsched.dev/placement"
#: Held on every task pod until its outcome is in the job's status (``tracking``).
TRACKING_FINALIZER = "mrsched.dev/task-record"
DATA_VOLUME = "data"
#: Kubelet rejections that say nothing about the task: the pod is placed again, not counted as a failure.
REJECTIONS = (
    "OutOfcpu",
    "OutOfmemory",
    "OutOfpods",
    "OutOfephemeral-storage",
    "NodeAffinity",
    "NodeLost",
    "Evicted",
    "Preempting",
    "NodeShutdown",  # admission refused by a node in its graceful shutdown (the kubelet's nodeshutdown manager)
)
#: The worker's exit code for an output that exists and is not this job's (workers/mrworker/cli.py).
OUTPUT_CONFLICT_EXIT = 3
#: Waiting reasons that will not fix themselves: the job fails at once.
FATAL_WAITING = ("InvalidImageName",)
#: Waiting reasons that may: a registry down for a while, an image being pushed, a Secret or ConfigMap created
#: late. The kubelet retries with back-off; the job fails only if the pod still cannot start after the
#: operator's ``pod_start_grace_s``.
TRANSIENT_WAITING = ("ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError")


#: The worker image's non-root user and group (workers/Dockerfile).
WORKER_UID = 65532
#: Every worker container (tasks, job commit, probes): what Pod Security "restricted" asks of a container
#: (non-root, no privilege escalation, every capability dropped, the runtime's default seccomp profile), and a
#: read-only root filesystem.
WORKER_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": WORKER_UID,
    "runAsGroup": WORKER_UID,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
#: Every worker pod's: the same at pod level, and fsGroup so that a claim's volume is writable by the worker.
WORKER_POD_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": WORKER_UID,
    "runAsGroup": WORKER_UID,
    "fsGroup": WORKER_UID,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def data_volume(config: OperatorConfig) -> dict[str, Any]:
    """The shared data volume every worker pod mounts: the ReadWriteMany claim, or the node directory the
    admin opted into. ``Directory``, not ``DirectoryOrCreate``: the kubelet would create a missing one owned by
    root, 0755, which the worker's user cannot write; the admin creates it owned by 65532 (docs/security.md)."""
    if config.data_host_path:
        return {"name": DATA_VOLUME, "hostPath": {"path": config.data_host_path, "type": "Directory"}}
    return {
        "name": DATA_VOLUME,
        "persistentVolumeClaim": {"claimName": config.data_claim or DEFAULT_DATA_CLAIM},
    }


def worker_resources(cpu: float, memory_mb: float, ephemeral_mb: float) -> dict[str, Any]:
    """Requests and equal limits of a worker container: CPU, memory and ephemeral storage (its logs and
    writable layer; the task's data is on the data volume). Limits equal to requests give the pod the
    Guaranteed QoS class: it is throttled at what it was placed for, never evicted first under memory pressure,
    and one job cannot fill a node's disk with logs."""
    amounts = {
        "cpu": f"{max(1, round(cpu * 1000))}m",
        "memory": f"{max(1, round(memory_mb))}Mi",
        "ephemeral-storage": f"{max(1, round(ephemeral_mb))}Mi",
    }
    return {"requests": dict(amounts), "limits": dict(amounts)}


def pod_name(job: str, uid: str, kind: TaskType, index: int, attempt: int) -> str:
    """Deterministic, so that a retried create of the same attempt is a harmless 409 (``-c00000-`` is the job
    commit); with the start of the job's uid, so that a pod left by an earlier job of the same name never takes
    this job's name (``wordcount-3f2a9-m00004-a0``)."""
    return f"{job}-{uid[:5]}-{kind[0]}{index:05d}-a{attempt}"


def worker_command(kind: TaskType) -> str:
    return "commit-job" if kind == "commit" else kind


def task_pod(
    spec: JobSpec,
    kind: TaskType,
    index: int,
    attempt: int,
    config: OperatorConfig,
    *,
    node: str | None,
    explanation: Explanation | None,
) -> dict[str, Any]:
    """The pod of one task attempt; ``node`` None leaves placement to kube-scheduler (policy kube-default)."""
    resources = spec.map_resources if kind == "map" else spec.reduce_resources
    ephemeral_mb = spec.map_ephemeral_mb if kind == "map" else spec.reduce_ephemeral_mb
    annotations = {}
    if explanation is not None:
        annotations[PLACEMENT_ANNOTATION] = json.dumps(
            {
                "policy": explanation.policy,
                "node": node,
                "score": round(explanation.score, 4),
                "reason": explanation.reason,
                "runnerUp": explanation.runner_up,
            }
        )
    container: dict[str, Any] = {
        "name": "task",
        "image": spec.image or config.worker_image,
        "imagePullPolicy": config.image_pull_policy,
        "command": list(spec.command or config.worker_command),
        "args": [worker_command(kind)],
        "env": [
            *({"name": k, "value": v} for k, v in task_env(spec, kind, index, attempt, config).items()),
            # The attempt's own scratch and temporary names (workers/mrworker/layout.py): the pod's uid, so a
            # replacement never shares a file with a predecessor that may still run on a NotReady node.
            {"name": "MRSCHED_ATTEMPT_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        ],
        "resources": worker_resources(resources.cpu, resources.memory_mb, ephemeral_mb),
        "volumeMounts": [{"name": DATA_VOLUME, "mountPath": config.data_mount}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": WORKER_SECURITY,
    }
    volume = data_volume(config)
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": WORKER_POD_SECURITY,
        "containers": [container],
        "volumes": [volume],
        "terminationGracePeriodSeconds": 10,
        **({"activeDeadlineSeconds": spec.task_deadline_s} if spec.task_deadline_s else {}),
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
    }
    if spec.tolerations:
        pod_spec["tolerations"] = list(spec.tolerations)
    if node is None:
        # kube-scheduler places it: the job's nodeSelector map as it is, and the operator's worker selector
        # (any labels.Parse selector) as the required node affinity with the same meaning.
        if spec.node_selector:
            pod_spec["nodeSelector"] = dict(spec.node_selector)
        affinity = node_affinity(config.worker_selector())
        if affinity is not None:
            pod_spec["affinity"] = affinity
    else:
        # Placed by us: one write binds it (see docs/operator.md for why nodeName rather than a Binding).
        pod_spec["schedulerName"] = config.scheduler_name
        pod_spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(spec.name, spec.uid, kind, index, attempt),
            "namespace": spec.namespace,
            "labels": {
                JOB_LABEL: spec.name,
                JOB_UID_LABEL: spec.uid,
                TYPE_LABEL: kind,
                INDEX_LABEL: str(index),
                ATTEMPT_LABEL: str(attempt),
                "app.kubernetes.io/managed-by": "mrsched",
            },
            "annotations": annotations,
            "finalizers": [TRACKING_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": f"{API_GROUP}/{API_VERSION}",
                    "kind": KIND,
                    "name": spec.name,
                    "uid": spec.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pod_spec,
    }


def task_env(
    spec: JobSpec, kind: TaskType, index: int, attempt: int, config: OperatorConfig
) -> dict[str, str]:
    """What the worker reads (``workers/README.md``); APP, TASK_TYPE and INPUT_* also drive the emulator."""
    env = {
        "MRSCHED_APP": spec.app,
        "MRSCHED_TASK_TYPE": worker_command(kind),
        "MRSCHED_TASK_INDEX": str(index),
        "MRSCHED_ATTEMPT": str(attempt),
        "MRSCHED_MAPS": str(spec.maps),
        "MRSCHED_REDUCES": str(spec.reduces),
        "MRSCHED_DATA_DIR": config.data_mount,
        "MRSCHED_OUTPUT": spec.output_dir,
        "MRSCHED_JOB_DIR": spec.job_dir,
        "MRSCHED_JOB_UID": spec.uid,
        "MRSCHED_SORT_BUFFER_MB": str(spec.sort_buffer_mb),
    }
    if spec.overwrite:
        env["MRSCHED_OVERWRITE"] = "true"
    if spec.input_paths:
        env["MRSCHED_INPUT"] = ",".join(spec.on_volume(p) for p in spec.input_paths)
    if kind == "map" and (split := spec.split_of(index)) is not None:
        env["MRSCHED_SPLITS"] = f"{spec.on_volume(split.path)}:{split.start}:{split.length}"
        if split.hosts:
            env["MRSCHED_INPUT_HOSTS"] = ",".join(split.hosts)
    if kind == "reduce":
        env["MRSCHED_WAIT_FOR_MAPS"] = "86400"  # reduces start at slow-start and wait for the last maps
    input_bytes = spec.map_input_bytes(index) if kind == "map" else spec.input_bytes // max(1, spec.reduces)
    if input_bytes and kind != "commit":
        env["MRSCHED_INPUT_BYTES"] = str(input_bytes)
    for name, value in spec.parameters.items():
        env[f"MRSCHED_{_snake(name).upper()}"] = value
    return env


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


Phase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


@dataclass(frozen=True)
class PodAttempt:
    """One task attempt as its pod reports it."""

    name: str
    kind: TaskType
    index: int
    attempt: int
    node: str | None
    phase: Phase
    created: float
    started: float | None = None
    finished: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    report: TaskReport | None = None
    deleting: bool = False
    #: Ended by a disruption, not by its task: killed because the pod was deleted (a drain, an eviction, the
    #: operator giving up a lost node's attempt) or marked ``DisruptionTarget`` by Kubernetes.
    disrupted: bool = False

    @property
    def live(self) -> bool:
        return self.phase in ("Pending", "Running", "Unknown") and not self.deleting

    @property
    def rejected(self) -> bool:
        """The node refused or lost the pod, or a disruption ended it: not the task's fault, so not counted
        against its backoff."""
        return self.phase == "Failed" and (self.reason in REJECTIONS or self.disrupted)

    @property
    def unschedulable(self) -> bool:
        return self.phase == "Pending" and self.node is None and self.reason == "Unschedulable"

    def cannot_start(self, now: float, grace_s: float) -> bool:
        """The pod will not start: a reason that never fixes itself, or one that might, for longer than
        ``grace_s`` since the pod was created."""
        if self.phase != "Pending":
            return False
        return self.reason in FATAL_WAITING or (
            self.reason in TRANSIENT_WAITING and now - self.created > grace_s
        )


def parse_time(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


def read_attempt(pod: dict[str, Any]) -> PodAttempt | None:
    """The attempt a pod carries, or None when it is not a task pod of ours."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    try:
        kind = labels[TYPE_LABEL]
        index, attempt = int(labels[INDEX_LABEL]), int(labels[ATTEMPT_LABEL])
    except (KeyError, ValueError):
        return None
    if kind not in ("map", "reduce", "commit"):
        return None
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    reason, message = status.get("reason", ""), status.get("message", "")
    started = parse_time(status.get("startTime"))
    finished = exit_code = report = None
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (term := state.get("terminated")) is not None:
            exit_code = term.get("exitCode")
            finished = parse_time(term.get("finishedAt"))
            started = parse_time(term.get("startedAt")) or started
            reason = reason or term.get("reason", "")
            message = term.get("message", "") or message
            try:
                report = TaskReport.from_json(term.get("message", ""))
            except ValueError:
                report = None
        elif (waiting := state.get("waiting")) is not None:
            reason, message = waiting.get("reason", reason), waiting.get("message", message)
    for cond in status.get("conditions") or []:
        # kube-scheduler could not place it (kube-default jobs): say why, in its own words.
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and not reason:
            reason, message = cond.get("reason", ""), cond.get("message", "")
    if phase == "Failed" and finished is None:
        finished = parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))
    disrupted = any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if (deleted := parse_time(meta.get("deletionTimestamp"))) is not None and finished is not None:
        # deletionTimestamp is when the grace period ends; the deletion was asked that long before. A pod that
        # ended after it was asked to go was ended by the deletion. Whole seconds, and finishedAt comes from the
        # kubelet's clock, the deletion from the apiserver's: a second of slack. A failure recorded in the job's
        # status before the deletion still counts (taskrecord).
        asked = deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
        disrupted = disrupted or finished >= asked - 1.0
    return PodAttempt(
        name=meta["name"],
        kind=kind,
        index=index,
        attempt=attempt,
        node=(pod.get("spec") or {}).get("nodeName"),
        phase=phase,
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        started=started,
        finished=finished,
        exit_code=exit_code,
        reason=reason or "",
        message=message or "",
        report=report,
        deleting=bool(meta.get("deletionTimestamp")),
        disrupted=phase == "Failed" and disrupted,
    )
