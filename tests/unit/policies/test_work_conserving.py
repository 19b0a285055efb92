"""No pod-second idle while a task could start, on Kubernetes (issue 51): the papers' Hadoop-era mechanics left
places empty that a waiting task's pod fitted. DARA's and diagnosis's mix x* held containers for jobs with no map
left to start and placed one map per node per heartbeat; coupling's Random Peeking left a skipped slot empty and
placed one map per heartbeat. Here a short pi beside a long wordcount and a later grep run on two 8-core nodes,
concurrency by requests, traced round by round (:class:`mrsched.simulator.trace.RunTrace`: the pods a waiting
task's request still fitted on each node, and the rule the policy names for holding them).

What may still hold a place is DARA's load model sizing the node's maps (the trace's reasons begin "the mix x*
(Eq 4.16)"): where x* is smaller than the node, Eq 4.16 predicts that one more container lowers its throughput,
and before an application's first map is measured (Alg 4.3.1) x* holds none. Before the fix DARA and diagnosis
idled 362 pod-seconds here under the Hadoop rules (one container per heartbeat 214, x* holding containers for a
job with no map left to start 148) beside the model's 200, coupling 124 (one map per heartbeat, Random Peeking's
skipped slot); now none."""

from __future__ import annotations

import pytest

from mrsched.policies.dara.config import OFFLINE_ALPHAS
from mrsched.simulator.trace import RunTrace
from tests.unit.policies.smallruns import kubernetes_run

#: The load model's own concurrency choice (Dara.holding): the only idle a DARA policy may keep.
MODEL_CONCURRENCY = "the mix x* (Eq 4.16) "  # "asks for no more than the node runs", "holds no container"


def _idle(policy: str) -> dict[str, float]:
    alphas = {"alphas": {k: list(v) for k, v in OFFLINE_ALPHAS.items()}}  # a fitted class from the start
    sim = kubernetes_run(
        "work-conserving",
        "tests/unit/policies/test_work_conserving.py",
        policy,
        nodes=[{"class": "dara-8core", "count": 2}],
        jobs=[
            {"id": "short-pi", "app": "pi", "submitS": 0, "maps": 12, "reduces": 1},
            {"id": "long-wordcount", "app": "wordcount", "submitS": 0, "maps": 160, "reduces": 1},
            {"id": "later-grep", "app": "grep", "submitS": 60, "maps": 40, "reduces": 1},
        ],
        heartbeat_s=3,
        options={"dara": alphas, "diagnosis": alphas},
    )
    trace = RunTrace(sim)
    result = sim.run()
    assert all(j.finish_s is not None and not j.failed for j in result.jobs), result.jobs
    return dict(trace.summary(result)["idle_by_reason"])


@pytest.mark.parametrize("policy", ["kube-default", "lsps", "throughput", "coupling", "dara", "diagnosis"])
def test_only_the_load_model_holds_a_place_that_a_waiting_task_fits(policy: str) -> None:
    idle = _idle(policy)
    held = {reason: pod_s for reason, pod_s in idle.items() if not reason.startswith(MODEL_CONCURRENCY)}
    assert sum(held.values()) < 1e-6, held
