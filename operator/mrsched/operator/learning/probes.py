"""Probe runs on the live cluster (seed 002 P3-A): each new or changed worker node is measured by probe pods.

A node needs probing when its ``NodeProfile`` has no probed capability, or when the node's fingerprint
(allocatable CPU and memory, and its class label) differs from the one its capability was probed with. While
it is probed the node takes no tasks, so the probes run alone as the thesis' offline measurements did; probe
pods run one at a time, in :func:`mrsched.core.probes.probe_plan` order, bound to the node by ``nodeName``.

Everything is read back from the pods each round (restart-safe: a restarted operator carries on with the
probe pods it finds). A failed probe pod is retried up to ``MAX_PROBE_FAILURES`` times for the node; then the
node's profile says ``Failed`` with the pod's message, and the node is scheduled without a capability (the
throughput policy serves it FIFO) until its fingerprint changes or its profile is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from mrsched.core.probes import ProbeKind, estimate_capability, probe_plan
from mrsched.core.report import TaskReport
from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.learning.profiles import NODE_KIND, ProfileStore, utc_stamp
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import API_GROUP, API_VERSION
from mrsched.operator.model.pods import (
    DATA_VOLUME,
    WORKER_POD_SECURITY,
    WORKER_SECURITY,
    data_volume,
    parse_time,
    worker_resources,
)
from mrsched.operator.model.snapshot import NodeInfo

NODE_LABEL = "mrsched.dev/probe-node"
KIND_LABEL = "mrsched.dev/probe"
RUN_LABEL = "mrsched.dev/probe-run"
MAX_PROBE_FAILURES = 3

log = logging.getLogger(__name__)


def fingerprint(info: NodeInfo) -> str:
    """What a probe result depends on: a node resized or relabelled into another class is probed again."""
    node = info.node
    return f"cpu={node.cores},memoryMi={int(node.memory_mb)},class={node.node_class or '-'}"


def probe_pod_name(node: str, run: int, attempt: int) -> str:
    name = f"mrsched-probe-{node}-r{run}-a{attempt}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:10]
    return f"mrsched-probe-{node[:30].rstrip('-.')}-{digest}-r{run}-a{attempt}"


def probe_pod(
    node: str, run: int, attempt: int, kind: ProbeKind, owner_uid: str, config: OperatorConfig
) -> dict[str, Any]:
    """One probe task: the worker's ``probe`` command, alone on ``node`` (workers/README.md)."""
    env = {
        "MRSCHED_TASK_TYPE": "probe",
        "MRSCHED_PROBE_KIND": kind,
        "MRSCHED_PROBE_SCALE": repr(config.probe_scale),
        "MRSCHED_DATA_DIR": config.data_mount,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": probe_pod_name(node, run, attempt),
            "namespace": config.probes_namespace,
            "labels": {
                NODE_LABEL: node if len(node) <= 63 else hashlib.sha256(node.encode()).hexdigest()[:40],
                KIND_LABEL: kind,
                RUN_LABEL: str(run),
                "app.kubernetes.io/managed-by": "mrsched",
            },
            "annotations": {"mrsched.dev/node": node},
            # The node's profile owns its probes: deleting the profile cleans them up.
            "ownerReferences": [
                {
                    "apiVersion": f"{API_GROUP}/{API_VERSION}",
                    "kind": NODE_KIND,
                    "name": node,
                    "uid": owner_uid,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "securityContext": WORKER_POD_SECURITY,
            "nodeName": node,
            "schedulerName": config.scheduler_name,
            "containers": [
                {
                    "name": "probe",
                    "image": config.worker_image,
                    "imagePullPolicy": config.image_pull_policy,
                    "command": list(config.worker_command),
                    "args": ["probe"],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": worker_resources(1.0, 256, 64),
                    "volumeMounts": [{"name": DATA_VOLUME, "mountPath": config.data_mount}],
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "securityContext": WORKER_SECURITY,
                }
            ],
            "volumes": [data_volume(config)],
            "terminationGracePeriodSeconds": 10,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "tolerations": [{"operator": "Exists"}],  # a probe measures the node whatever its taints
        },
    }


@dataclass(frozen=True)
class ProbeResult:
    """One probe pod as its status says."""

    name: str
    run: int
    kind: str
    phase: str
    duration_s: float | None
    message: str
    deleting: bool = False


def read_probe(pod: dict[str, Any]) -> ProbeResult | None:
    meta, status = pod["metadata"], pod.get("status") or {}
    labels = meta.get("labels") or {}
    try:
        run = int(labels[RUN_LABEL])
    except (KeyError, ValueError):
        return None
    phase = status.get("phase", "Pending")
    duration = None
    message = status.get("message", "")
    for cs in status.get("containerStatuses") or []:
        if (term := (cs.get("state") or {}).get("terminated")) is not None:
            message = term.get("message", "") or message
            try:
                report: TaskReport | None = TaskReport.from_json(term.get("message", ""))
            except ValueError:
                report = None
            if report is not None and report.wall_s > 0:
                duration = report.wall_s  # the worker's own clock: sub-second, unlike the pod's timestamps
            else:
                started, finished = parse_time(term.get("startedAt")), parse_time(term.get("finishedAt"))
                duration = finished - started if started and finished else None
    return ProbeResult(
        meta["name"],
        run,
        labels.get(KIND_LABEL, ""),
        phase,
        duration,
        message,
        bool(meta.get("deletionTimestamp")),
    )


class ProbeRunner:
    """Drives every node's probe plan a step per round; says which nodes are being probed."""

    def __init__(self, api: ClusterApi, store: ProfileStore, config: OperatorConfig) -> None:
        self.api = api
        self.store = store
        self.config = config
        self.plan = probe_plan(config.probe_repeats)
        self._errors: dict[str, int] = {}  # consecutive API errors per node

    def needs_probe(self, info: NodeInfo) -> bool:
        status = self.store.nodes.get(info.node.name) or {}
        if status.get("fingerprint") != fingerprint(info):
            return True
        return status.get("phase") == "Probing"

    def step(self, workers: dict[str, NodeInfo]) -> set[str]:
        """Advance the probes of every ready worker that needs them; returns the nodes still being probed."""
        todo = {name: info for name, info in workers.items() if info.ready and self.needs_probe(info)}
        if not todo:
            return set()
        pods: dict[str, list[ProbeResult]] = defaultdict(list)
        for pod in self.api.list_pods(self.config.probes_namespace, NODE_LABEL):
            node = (pod["metadata"].get("annotations") or {}).get("mrsched.dev/node", "")
            # Pods being deleted belong to a finished or abandoned plan: they neither count nor block.
            if (result := read_probe(pod)) is not None and not result.deleting:
                pods[node].append(result)
        probing = set()
        for name, info in sorted(todo.items()):
            try:
                if self._advance(name, info, pods.get(name, [])):
                    probing.add(name)
                self._errors.pop(name, None)
            except Exception as err:  # one node's trouble never stops the others or the round
                self._errors[name] = self._errors.get(name, 0) + 1
                log.warning("probing %s (error %d): %s", name, self._errors[name], err)
                if self._errors[name] < MAX_PROBE_FAILURES:
                    probing.add(name)
                    continue
                # Say so where users look, and let the node work without a capability rather than idle.
                with contextlib.suppress(Exception):
                    self.store.write_node(
                        name, {"phase": "Failed", "message": f"probing failed: {err}"[:1024]}
                    )
                self._errors.pop(name, None)
        return probing

    def _advance(self, node: str, info: NodeInfo, results: list[ProbeResult]) -> bool:
        status = self.store.nodes.get(node) or {}
        print_ = fingerprint(info)
        if status.get("fingerprint") != print_ or status.get("phase") != "Probing":
            self.store.write_node(
                node,
                {
                    "phase": "Probing",
                    "fingerprint": print_,
                    "nodeClass": info.node.node_class,
                    "message": f"running {len(self.plan)} probe tasks",
                },
            )
            log.info("probing node %s (%s)", node, print_)
            # Probe pods of an earlier plan (the node changed meanwhile) measured something else.
            for r in results:
                self.api.delete_pod(self.config.probes_namespace, r.name)
            results = []
        done: dict[int, ProbeResult] = {r.run: r for r in results if r.phase == "Succeeded"}
        failed = [r for r in results if r.phase == "Failed"]
        if len(failed) >= MAX_PROBE_FAILURES:
            last = max(failed, key=lambda r: r.name)
            self.store.write_node(
                node, {"phase": "Failed", "message": f"probe pod {last.name} failed: {last.message}"[:1024]}
            )
            log.warning("probing node %s failed %d times; last: %s", node, len(failed), last.message)
            self._clean(results)
            return False
        if any(r.phase not in ("Succeeded", "Failed") for r in results):
            return True  # one probe at a time: the running one must finish first
        run = next((i for i in range(len(self.plan)) if i not in done), None)
        if run is None:
            self._finish(node, done)
            self._clean(results)
            return False
        attempt = sum(1 for r in failed if r.run == run)
        pod = probe_pod(node, run, attempt, self.plan[run], self.store.uids[node], self.config)
        self.api.create_pod(pod)
        return True

    def _finish(self, node: str, done: dict[int, ProbeResult]) -> None:
        runs: dict[ProbeKind, list[float]] = defaultdict(list)
        for run, result in done.items():
            if result.duration_s is not None:
                runs[self.plan[run]].append(result.duration_s)
        try:
            cap = estimate_capability(runs, self.config.probe_scale)
        except ValueError as err:
            self.store.write_node(node, {"phase": "Failed", "message": f"probe durations unusable: {err}"})
            return
        total = sum(sum(v) for v in runs.values())
        self.store.write_node(
            node,
            {
                "phase": "Probed",
                "message": "",
                "kappaC": round(cap.kappa_c, 4),
                "kappaD": round(cap.kappa_d, 4),
                "omegaS": round(cap.omega_s, 4),
                "sigmaS": round(cap.sigma_s, 4),
                "probedAt": utc_stamp(self.store.clock()),
                "probeSeconds": round(total, 3),
                "probeRuns": sum(len(v) for v in runs.values()),
                "probeScale": self.config.probe_scale,
                "probeDurations": {k: [round(t, 4) for t in v] for k, v in runs.items()},
            },
        )
        log.info(
            "probed node %s: κc %.3f κd %.3f Ω %.2f s σ %.2f s",
            node,
            cap.kappa_c,
            cap.kappa_d,
            cap.omega_s,
            cap.sigma_s,
        )

    def _clean(self, results: list[ProbeResult]) -> None:
        for r in results:
            self.api.delete_pod(self.config.probes_namespace, r.name)
