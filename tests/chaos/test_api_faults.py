"""The operator talks to the API server through a fault-injecting proxy (apiproxy): throttling with Retry-After,
5xx on status writes, a pod create that hangs past the client's timeout and is delivered late, an API server
restart, and a 409 from a same-named pod of another job uid. The job ends Succeeded with byte-for-byte correct
output, each task succeeded once, and nothing of another job is touched or counted (issue 20).
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from tests.chaos.apiproxy import Fault, api_proxy
from tests.chaos.jobs import expect_correct_output, wordcount
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    apply,
    apply_crds,
    start_operator,
    wait_phase,
)
from tests.workers.data import text_corpus

DONE = ("Succeeded", "Failed")
PODS = r"^/api/v1/namespaces/[^/]+/pods(\?|$)"
JOB_STATUS = r"/mapreducejobs/[^/]+/status"
#: The operator's client timeout on every call (kubeclient.REQUEST_TIMEOUT_S) is 30 s; the hung create is held
#: past it, then delivered, as a slow etcd would complete a write whose client has given up.
HUNG_S = 35.0


def finished(metrics: str) -> dict[tuple[str, str], float]:
    """mrsched_tasks_finished_total by (type, outcome)."""
    out: dict[tuple[str, str], float] = {}
    for line in metrics.splitlines():
        if line.startswith("mrsched_tasks_finished_total{"):
            labels, value = line.rsplit(" ", 1)
            found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            out[(found["type"], found["outcome"])] = float(value)
    return out


def late_attempt_done(kube: Kube, namespace: str, name: str) -> bool:
    try:
        pod = kube.pod(namespace, name)
    except ApiException as err:
        return err.status == 404
    return pod["status"].get("phase") in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def test_a_job_survives_throttling_5xx_a_hung_write_a_restart_and_a_foreign_pod(
    kube: Kube, namespace: str, emulate: EmulateFactory, tmp_path: Path
) -> None:
    apply_crds(kube)
    emulate({"medium": 2}, mode="process")
    data = tmp_path / "data" / "data" / "namespaces" / namespace
    corpus = text_corpus(data / "text", files=4, lines=1500)
    foreign: list[dict[str, Any]] = []

    def plant_foreign_pod(method: str, path: str, body: bytes) -> None:
        """Before the operator's create reaches the API server, a pod of the same name appears that belongs to
        another job uid (a stale pod of an old job of the same name): the create gets a real 409."""
        pod = json.loads(body)
        labels = {**pod["metadata"]["labels"], "mrsched.dev/job-uid": "00000000-old-job"}
        stale = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod["metadata"]["name"], "labels": labels},
            # Never scheduled by anyone: a scheduler name nobody serves.
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "stale:1"}]},
        }
        foreign.append(kube.create_pod(namespace, stale))

    delivered = threading.Event()
    with api_proxy(kube.kubeconfig, tmp_path) as proxy:
        throttled = proxy.inject(Fault("POST", PODS, status=429, retry_after=1, times=2))
        conflict = proxy.inject(Fault("POST", PODS, hook=plant_foreign_pod))
        hung = proxy.inject(
            Fault("POST", PODS, body_has=b"-m0000", delay_s=HUNG_S, after=lambda *_: delivered.set())
        )
        five_xx = proxy.inject(Fault("PATCH", JOB_STATUS, status=500, times=2))
        operator = start_operator(kube, namespace, tmp_path / "logs", kubeconfig=proxy.kubeconfig)
        try:
            apply(
                kube,
                namespace,
                wordcount("wordcount", maps=4),
            )
            wait_for(lambda: hung.hits, 60, "a create to hang")
            proxy.outage(6.0)  # the API server restarts: every watch and connection cut, none accepted
            assert delivered.wait(HUNG_S + 60), "the hung create was delivered late"
            (late,) = (s.name for s in proxy.requests("POST", PODS) if s.at >= hung.hits[0] + HUNG_S)
            job = wait_phase(kube, namespace, "wordcount", DONE, 240)
            # The attempt created late, after its task was placed again, ends without touching the output.
            wait_for(lambda: late_attempt_done(kube, namespace, late), 120, f"{late} to end or be deleted")
            metrics = operator.metrics()
        finally:
            operator.stop()

    expect_correct_output(job, data, corpus)
    for fault in (throttled, five_xx, conflict, hung):
        assert len(fault.hits) == fault.times, f"the proxy injected {fault}"

    # A throttled create was sent again only after the Retry-After its 429 asked for.
    creates = proxy.requests("POST", PODS)
    for refused in (s for s in creates if s.status == 429):
        again = [s.at for s in creates if s.name == refused.name and s.at > refused.at]
        assert again and min(again) - refused.at >= 0.9, f"{refused.name} retried before its Retry-After"

    # The foreign pod is untouched: not deleted, not bound, not counted; its task ran under another attempt.
    (stale,) = foreign
    still = kube.pod(namespace, stale["metadata"]["name"])
    assert still["metadata"]["uid"] == stale["metadata"]["uid"] and not still["spec"].get("nodeName")
    assert not still["metadata"].get("deletionTimestamp")

    # Each task succeeded once in the record (above) and the counters, whatever attempts the faults cost; the
    # attempt delivered late was ended by the operator unless it had finished by the time a round saw it.
    ended_by_operator = f"ending {namespace}/{late}" in operator.logs()
    assert ended_by_operator or kube.pod(namespace, late)["status"].get("phase") in ("Succeeded", "Failed")
    counted = finished(metrics)
    assert counted.get(("map", "succeeded")) == 4 and counted.get(("reduce", "succeeded")) == 2, counted
