"""The operator's round filters nodes with Kubernetes' rules before the policy scores them: a job that only some
workers admit is placed on those in the same round, none of its placements dropped afterwards (the old order,
policy first and ``loop._fits`` after, dropped them and left the tasks for a later round)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mrsched.operator.kube.kubeapi import ClusterApi
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.pods import PLACEMENT_ANNOTATION
from mrsched.operator.scheduling.loop import SchedulingLoop
from tests.unit.operator.test_loop_incremental import T0, MemoryApi, job, node

NODES = (
    ("n1", {"disk": "hdd"}, []),
    ("n2", {"disk": "ssd"}, []),
    ("n3", {"disk": "ssd"}, [{"key": "mrsched.dev/degraded", "value": "disk", "effect": "NoSchedule"}]),
)


def cluster(policy: str, only: str | None = None, **spec: Any) -> tuple[MemoryApi, SchedulingLoop]:
    """The three NODES (or the one named ``only``) and a job of three maps with ``spec`` added."""
    api = MemoryApi()
    for name, labels, taints in NODES:
        if only is not None and name != only:
            continue
        body = node(name)
        body["metadata"]["labels"].update(labels)
        body["spec"]["taints"] = taints
        api.nodes[name] = api.stamp(body)
    body = job("picky", maps=3)
    body["spec"].update(spec)
    api.jobs["picky"] = api.stamp(body)
    config = OperatorConfig(policy=policy, probe_nodes="never", namespaces=("ns",), health_monitor=False)
    return api, SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: T0 + 5)


@pytest.mark.parametrize("policy", ["fifo", "fair", "capacity", "lsps", "coupling", "dara", "diagnosis"])
def test_a_job_whose_selector_fits_some_nodes_is_placed_on_them_in_the_same_round(policy: str) -> None:
    """Every placement the policy made becomes a pod, on an admitting node, in the first round: none was made
    on a node the job's selector or taints refuse and dropped afterwards."""
    api, loop = cluster(policy, nodeSelector={"disk": "ssd"})
    stats = loop.round()
    assert api.created, f"{policy} placed nothing in the first round"
    assert len(api.created) == stats.placed[policy]
    assert {p["spec"]["nodeName"] for p in api.created} == {"n2"}  # n1's disk is hdd, n3 is degraded


def test_an_exists_toleration_of_another_effect_does_not_admit_a_degraded_node() -> None:
    """The live defect: ``{operator: Exists, effect: NoExecute}`` tolerated the NoSchedule degraded taint."""
    api, loop = cluster("fair", tolerations=[{"operator": "Exists", "effect": "NoExecute"}])
    loop.round()
    assert api.created and "n3" not in {p["spec"]["nodeName"] for p in api.created}
    api, loop = cluster("fair", tolerations=[{"key": "mrsched.dev/degraded", "operator": "Exists"}])
    loop.round()
    assert "n3" in {p["spec"]["nodeName"] for p in api.created}


class TaintingApi(MemoryApi):
    def set_node_taints(self, name: str, taints: list[dict[str, Any]], resource_version: str) -> None:
        pass  # the monitor, which judged no node here, keeps the taint the test set (it is level-based)


def test_a_degraded_node_no_job_tolerates_gets_one_canary_map_that_tolerates_its_taint() -> None:
    """The filters see a canary node without the degraded taint (its canary map tolerates it) and the Permit
    phase lets it run one map: the soft-fault monitor keeps hearing from it (operator/scheduling/canary.py)."""
    api = TaintingApi()
    for name, labels, taints in NODES:
        body = node(name)
        body["metadata"]["labels"].update(labels)
        body["spec"]["taints"] = taints
        api.nodes[name] = api.stamp(body)
    api.jobs["j"] = api.stamp(job("j", maps=40))  # more maps than the healthy nodes take
    config = OperatorConfig(
        policy="fair",
        policy_options={"assignMultiple": True},
        probe_nodes="never",
        namespaces=("ns",),
        taint_degraded_nodes=True,
        degraded_canary_interval_s=30,
    )
    loop = SchedulingLoop(cast(ClusterApi, api), config, clock=lambda: T0 + 5)
    loop.round()
    on_degraded = [p for p in api.created if p["spec"]["nodeName"] == "n3"]
    assert len(on_degraded) == 1, [p["spec"]["nodeName"] for p in api.created]
    (canary,) = on_degraded
    assert canary["metadata"]["labels"]["mrsched.dev/task-type"] == "map"
    assert {"key": "mrsched.dev/degraded", "operator": "Exists", "effect": "NoSchedule"} in canary["spec"][
        "tolerations"
    ]
    assert "canary" in canary["metadata"]["annotations"][PLACEMENT_ANNOTATION]
