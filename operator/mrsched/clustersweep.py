"""A sweep submitted to a Kubernetes cluster as one Indexed Job, for users who outgrow one machine.

Each completion index runs one planned run (policy x seed) of ``mrsched.simulator.run.run_scenario``'s plan:
the Job controller gives the pod its index (``JOB_COMPLETION_INDEX``), the pod reads the plan from a shared
volume and writes its output there (``mrsched.simulator.sweepfiles``), and this side gathers the outputs in the
plan's order into the same summary, so results.json is the same bytes as a run on one machine. The volume is a
claim the pods mount at ``/data`` and that this machine sees at ``claim_dir`` (a ReadWriteMany claim on a real
cluster, NFS or the like; the local cluster's data claim here).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mrsched import __version__
from mrsched.operator.kube.kubeclient import api_client
from mrsched.simulator.run import Executor, PlannedRun, RunOutput
from mrsched.simulator.sweepfiles import OUTPUTS, read_output, write_plan

#: The chart's operator image (operator/Dockerfile): it holds the simulator and the ``mrsched`` command.
DEFAULT_IMAGE = f"ghcr.io/mrsched/mrsched:{__version__}"
MOUNT = "/data"
SWEEPS = "sweeps"
#: A run is retried once in a new pod (a node lost under it) before its index counts as failed.
RETRIES_PER_RUN = 1


class SweepError(RuntimeError):
    """The sweep's Job failed or timed out; the message names the runs and why."""


def sweep_name(scenario: str) -> str:
    """A Job name (DNS-1123 label, at most 63 characters) for a sweep of ``scenario``, unique per submission."""
    stem = re.sub(r"[^a-z0-9-]+", "-", scenario.lower()).strip("-")[:40].strip("-")
    return f"sweep-{stem}-{secrets.token_hex(3)}"


def job_manifest(
    name: str,
    runs: int,
    parallelism: int,
    *,
    image: str,
    command: list[str],
    claim: str,
    plan: str,
    cpu: str = "1",
    memory: str = "2Gi",
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The Indexed Job: ``runs`` completions, ``parallelism`` pods at once, each running
    ``command simulate-run <plan>`` with the claim at /data. ``memory``: the SWIM day's largest run peaks at
    about 0.6 GiB (bench/results/swim-day-speed.txt)."""
    labels = {"app.kubernetes.io/name": "mrsched-sweep", "mrsched.dev/sweep": name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": runs,
            "parallelism": max(1, min(parallelism, runs)),
            "backoffLimitPerIndex": RETRIES_PER_RUN,
            # One run lost for good loses the sweep: the Job controller then fails the Job and stops the others.
            "maxFailedIndexes": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    # A run reads and writes the claim only: no API credentials in its pod.
                    "automountServiceAccountToken": False,
                    **({"nodeSelector": node_selector} if node_selector else {}),
                    "containers": [
                        {
                            "name": "run",
                            "image": image,
                            "command": command,
                            "args": ["simulate-run", plan],
                            "env": [{"name": "OPENBLAS_NUM_THREADS", "value": "1"}],
                            "resources": {
                                "requests": {"cpu": cpu, "memory": memory},
                                "limits": {"memory": memory},
                            },
                            "volumeMounts": [{"name": "data", "mountPath": MOUNT}],
                        }
                    ],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
                },
            },
        },
    }


def indexes(spec: str | None) -> set[int]:
    """The Job status's index list ("1,3-5") as a set."""
    found: set[int] = set()
    for part in (spec or "").split(","):
        if "-" in part:
            first, last = part.split("-")
            found.update(range(int(first), int(last) + 1))
        elif part:
            found.add(int(part))
    return found


def run_on_cluster(
    namespace: str,
    claim: str,
    claim_dir: Path,
    *,
    parallelism: int,
    image: str = DEFAULT_IMAGE,
    command: list[str] | None = None,
    kubeconfig: Path | None = None,
    node_selector: dict[str, str] | None = None,
    timeout_s: float = 24 * 3600.0,
    poll_s: float = 1.0,
    announce: Callable[[str], None] = print,
) -> Executor:
    """The executor that runs a sweep's planned runs as one Indexed Job in ``namespace``."""

    def execute(runs: list[PlannedRun], report: Callable[[PlannedRun, RunOutput], None]) -> list[RunOutput]:
        name = sweep_name(runs[0].scenario.name if runs else "empty")
        sweep_dir = claim_dir / SWEEPS / name
        write_plan(runs, sweep_dir)
        manifest = job_manifest(
            name,
            len(runs),
            parallelism,
            image=image,
            command=command or ["mrsched"],
            claim=claim,
            plan=f"{MOUNT}/{SWEEPS}/{name}/plan.pkl",
            node_selector=node_selector,
        )
        with api_client(kubeconfig) as api:
            # Any: called with _preload_content=False, so it returns the raw response, not what the stubs say.
            batch: Any = client.BatchV1Api(api)
            # Responses read whole, so the connection goes back to the pool (control-plane-recipes.md).
            batch.create_namespaced_job(namespace, manifest, _preload_content=False).data  # noqa: B018
            announce(
                f"submitted Job {namespace}/{name}: {len(runs)} runs, {manifest['spec']['parallelism']} at once"
            )
            return _gather(batch, namespace, name, runs, sweep_dir, report, timeout_s, poll_s)

    return execute


def _gather(
    batch: Any,
    namespace: str,
    name: str,
    runs: list[PlannedRun],
    sweep_dir: Path,
    report: Callable[[PlannedRun, RunOutput], None],
    timeout_s: float,
    poll_s: float,
) -> list[RunOutput]:
    """Each index's output as the Job reports it complete, in the plan's order once all are."""
    outputs: dict[int, RunOutput] = {}
    deadline = time.monotonic() + timeout_s
    while len(outputs) < len(runs):
        try:
            job = json.loads(batch.read_namespaced_job_status(name, namespace, _preload_content=False).data)
        except ApiException as err:
            raise SweepError(f"Job {namespace}/{name}: {err.status} {err.reason}") from err
        status = job.get("status") or {}
        for index in sorted(indexes(status.get("completedIndexes")) - set(outputs)):
            output = read_output(sweep_dir, index)
            if output is None:  # the pod ended before the volume showed its file: a shared volume lags
                continue
            outputs[index] = output
            report(runs[index], output)
        failed = indexes(status.get("failedIndexes"))
        if failed or any(
            c["type"] == "Failed" and c["status"] == "True" for c in status.get("conditions") or ()
        ):
            raise SweepError(_failure(namespace, name, runs, sweep_dir, failed))
        if time.monotonic() > deadline:  # its pods would run on with nobody to gather them
            deleted = batch.delete_namespaced_job(
                name, namespace, propagation_policy="Background", _preload_content=False
            )
            deleted.data  # noqa: B018  (read whole: the connection goes back to the pool)
            raise SweepError(
                f"Job {namespace}/{name}: {len(outputs)} of {len(runs)} runs done after {timeout_s:.0f} s; "
                "the Job is deleted"
            )
        if len(outputs) < len(runs):
            time.sleep(poll_s)
    return [outputs[i] for i in range(len(runs))]


def _failure(namespace: str, name: str, runs: list[PlannedRun], sweep_dir: Path, failed: set[int]) -> str:
    lines = [
        f"Job {namespace}/{name} failed: {len(failed)} of {len(runs)} runs after {RETRIES_PER_RUN + 1} tries"
    ]
    for index in sorted(failed):
        run = runs[index]
        why = "no output (the pod ended before it wrote one: its log says why)"
        try:
            read_output(sweep_dir, index)
        except RuntimeError as err:
            why = str(err).splitlines()[-1]
        lines.append(f"  index {index} ({run.name} seed {run.seed}): {why}")
    lines.append(f"  the plan and outputs: {sweep_dir}/ ({OUTPUTS}/<index>.pkl)")
    return "\n".join(lines)
