"""SIGKILL of the operator at chosen points (issue 20): in the middle of a batch of pod creates, just after the
job commit's pod is created, and at a Lease hand-over (the new leader killed as its takeover lands). The points
are chosen by the fault-injecting proxy (apiproxy), which sees each request as it goes by. After each kill a
new operator process takes over; the job ends Succeeded with byte-for-byte correct output, each task succeeded
once, and no attempt number was used twice.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.chaos.apiproxy import Fault, api_proxy
from tests.chaos.jobs import expect_correct_output, wordcount
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    apply_crds,
    start_operator,
    task_pods,
    wait_phase,
)
from tests.workers.data import text_corpus

DONE = ("Succeeded", "Failed")
PODS = r"^/api/v1/namespaces/[^/]+/pods(\?|$)"
LEASE = r"^/apis/coordination\.k8s\.io/v1/namespaces/[^/]+/leases/"


def killer(holder: list[OperatorProcess]) -> Any:
    """A proxy hook that SIGKILLs the operator process in ``holder[-1]``."""

    def kill(*_: Any) -> None:
        os.kill(holder[-1].proc.pid, signal.SIGKILL)
        holder[-1].proc.wait(timeout=30)

    return kill


def check_output(kube: Kube, namespace: str, job: dict[str, Any], data: Path, corpus: Path) -> None:
    """The output is right and, at pod level, each task succeeded once and no attempt outran the record."""
    expect_correct_output(job, data, corpus)
    name, tasks = job["metadata"]["name"], job["status"]["tasks"]
    pods = task_pods(kube, namespace, name)
    succeeded = Counter(
        (p["metadata"]["labels"]["mrsched.dev/task-type"], p["metadata"]["labels"]["mrsched.dev/task-index"])
        for p in pods
        if p["status"].get("phase") == "Succeeded"
    )
    assert set(succeeded.values()) == {1}, f"a task succeeded twice: {succeeded}"
    names = [p["metadata"]["name"] for p in pods]
    assert len(names) == len(set(names))
    for kind in ("map", "reduce"):
        # Every attempt of a pod that exists was recorded before it was created: none beyond the record.
        recorded = attempts_recorded(tasks[kind]["attempts"])
        for pod in pods:
            labels = pod["metadata"]["labels"]
            if labels["mrsched.dev/task-type"] == kind:
                index = int(labels["mrsched.dev/task-index"])
                assert int(labels["mrsched.dev/attempt"]) < recorded.get(index, 0), (
                    pod["metadata"]["name"],
                    tasks,
                )


def attempts_recorded(encoded: str) -> dict[int, int]:
    """Task index -> attempts made, from the record's range encoding ("0-3=1,4=2")."""
    out = {}
    for part in filter(None, encoded.split(",")):
        span, count = part.split("=")
        low, _, high = span.partition("-")
        out.update({i: int(count) for i in range(int(low), int(high or low) + 1)})
    return out


def test_sigkill_mid_create_batch_and_after_the_commit_pod_is_created(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    apply_crds(kube)
    emulate({"medium": 2}, mode="process")
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    corpus = text_corpus(data / "text", files=6, lines=1000)
    operators: list[OperatorProcess] = []
    with api_proxy(kube.kubeconfig, tmp_path) as proxy:
        # The third create of the first batch: two are created, the rest of the batch is in flight or unsent.
        skip = proxy.inject(Fault("POST", PODS, times=2, body_has=b"-m0000"))
        kill_batch = proxy.inject(Fault("POST", PODS, body_has=b"-m0000", after=killer(operators)))
        kill_commit = proxy.inject(Fault("POST", PODS, body_has=b"-c00000-", after=killer(operators)))
        try:
            operators.append(start_operator(kube, namespace, tmp_path / "logs", kubeconfig=proxy.kubeconfig))
            apply(kube, namespace, wordcount("wc", maps=6))
            for fault in (kill_batch, kill_commit):
                wait_for(lambda f=fault: f.hits and operators[-1].proc.poll() is not None, 120, "the kill")
                time.sleep(2)  # the pods it created go on without it
                operators.append(
                    start_operator(kube, namespace, tmp_path / "logs", kubeconfig=proxy.kubeconfig)
                )
            job = wait_phase(kube, namespace, "wc", DONE, 180)
        finally:
            for handle in operators:
                handle.stop()
    assert len(skip.hits) == 2
    check_output(kube, namespace, job, data, corpus)
    assert [op.proc.returncode for op in operators[:2]] == [-signal.SIGKILL] * 2


def test_sigkill_of_the_new_leader_as_its_takeover_lands(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    apply_crds(kube)
    emulate({"medium": 2}, mode="process")
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    corpus = text_corpus(data / "text", files=6, lines=1000)
    with api_proxy(kube.kubeconfig, tmp_path) as proxy:
        start = lambda: start_operator(kube, namespace, tmp_path / "logs", kubeconfig=proxy.kubeconfig)  # noqa: E731
        first = start()
        second = start()
        third: OperatorProcess | None = None
        try:
            apply(kube, namespace, wordcount("handover", maps=6))
            wait_for(lambda: proxy.requests("POST", PODS), 60, "the first leader to create pods")
            leader, standby = (first, second) if _holds(proxy, first) else (second, first)
            # The standby is killed the moment the API server accepts its takeover of the Lease.
            takeover = proxy.inject(
                Fault(
                    "PUT",
                    LEASE,
                    body_has=f'-{standby.proc.pid}"'.encode(),
                    after=lambda *_: os.kill(standby.proc.pid, signal.SIGKILL),
                )
            )
            os.kill(leader.proc.pid, signal.SIGKILL)
            wait_for(
                lambda: takeover.hits and standby.proc.poll() is not None, 60, "the takeover and its kill"
            )
            third = start()
            job = wait_phase(kube, namespace, "handover", DONE, 240)
        finally:
            for handle in (first, second, third):
                if handle is not None:
                    handle.stop()
    check_output(kube, namespace, job, data, corpus)
    assert third is not None and "holding the leader Lease" in third.logs(), "the third instance took over"


def _holds(proxy: Any, operator: OperatorProcess) -> bool:
    """Whether ``operator`` wrote the Lease last (its identity, hostname-pid, is in the body it sent)."""
    writes = [s for s in proxy.seen if s.method in ("PUT", "POST") and "/leases" in s.path and s.status < 300]
    return bool(writes) and f'-{operator.proc.pid}"'.encode() in writes[-1].body
