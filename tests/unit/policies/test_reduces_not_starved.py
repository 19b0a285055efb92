"""No reduce starved by maps on Kubernetes (issue 51): where maps and reduces share a node's allocatable, a policy
that fills every free request with maps before it looks at reduces leaves a job's released reduce waiting until
no map of any job is left to start. Here a small grep (40 maps, one reduce) runs beside a large wordcount (400
maps) on two medium nodes, concurrency by requests: before the fix LsPS's, ThroughputScheduler's and
coupling's grep reduce waited 276-299 s after its last map (grep's job time 316-321 s, against 22-40 s under
kube-default, Fair, DARA and diagnosis); with the reduces of jobs whose maps are all placed offered first, 22-38 s
(and the wordcount's 432-436 s, against 430-438 s before). On slot nodes (reduces in slots of their own) the
order stays Hadoop's."""

from __future__ import annotations

import pytest

from mrsched.simulator.result import JobRecord
from tests.unit.policies.smallruns import kubernetes_run


def _run(policy: str) -> dict[str, JobRecord]:
    sim = kubernetes_run(
        "reduce-beside-a-large-job",
        "tests/unit/policies/test_reduces_not_starved.py",
        policy,
        nodes=[{"class": "medium", "count": 2}],
        jobs=[
            {"id": "small-grep", "app": "grep", "submitS": 0, "maps": 40, "reduces": 1},
            {"id": "large-wordcount", "app": "wordcount", "submitS": 1, "maps": 400, "reduces": 1},
        ],
    )
    return {job.id: job for job in sim.run().jobs}


@pytest.mark.parametrize("policy", ["lsps", "throughput", "coupling", "dara", "diagnosis"])
def test_a_released_reduce_is_not_left_behind_another_jobs_maps_on_kubernetes(policy: str) -> None:
    jobs = _run(policy)
    grep = jobs["small-grep"]
    assert grep.finish_s is not None and not grep.failed
    # Its reduce starts as soon as a place frees once its maps are done, not when the wordcount's 400 are placed.
    assert grep.starvation_s < 5.0, grep
    assert grep.finish_s - grep.submit_s < 60.0, grep
