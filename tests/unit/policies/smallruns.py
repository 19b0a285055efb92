"""A small test workload in the simulator's kubernetes mode (concurrency by requests, cluster-wide rounds), for
the tests of what the papers' policies do on Kubernetes."""

from __future__ import annotations

from typing import Any

from mrsched.core.catalog import expand_layout
from mrsched.simulator.engine import Simulation
from mrsched.simulator.run import build_simulation
from mrsched.simulator.scenario import Scenario
from mrsched.simulator.workload import build_jobs


def kubernetes_run(
    name: str,
    test: str,
    policy: str,
    nodes: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    heartbeat_s: float = 1,
    options: dict[str, Any] | None = None,
) -> Simulation:
    """The simulation (not yet run) of ``jobs`` on ``nodes`` under ``policy``, seed 1. ``name`` is the scenario's
    (it seeds the workload's random draws); ``test`` names the test module that states it (its source)."""
    scenario = Scenario.model_validate(
        {
            "name": name,
            "source": f"assumption: a test workload ({test})",
            "headline": "none",
            "cluster": {"nodes": nodes, "heartbeatS": heartbeat_s, "concurrency": "requests"},
            "workload": {"jobs": jobs},
            "policies": ["kube-default"],
            "policyOptions": options or {},
            "seeds": [1],
        }
    )
    data_nodes = [n.name for n in expand_layout(scenario.cluster.nodes) if n.stores_data]
    return build_simulation(scenario, policy, 1, build_jobs(scenario, data_nodes, 1), mode="kubernetes")
