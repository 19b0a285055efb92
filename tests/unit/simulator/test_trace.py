"""A run's trace (mrsched.simulator.trace): it finds an idle hole and a slow-node tail that a run was built to
have, names them in the report's sentences, and leaves the run as it would have been untraced."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mrsched.core.catalog import expand_layout
from mrsched.core.model import ClusterSnapshot, Explanation, Placement
from mrsched.core.policy import Policy
from mrsched.simulator.engine import Simulation
from mrsched.simulator.run import build_simulation
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.summary import summarise
from mrsched.simulator.trace import RunTrace, describe
from mrsched.simulator.workload import build_jobs

HOLD_UNTIL_S = 60.0


def scenario(tmp_path: Path, jobs: list[dict[str, object]]) -> Scenario:
    data = {
        "name": "traced",
        "source": "test",
        "headline": "test",
        "cluster": {
            "nodes": [{"class": "gupta-new", "count": 1}, {"class": "gupta-old", "count": 1}],
            "concurrency": "requests",
        },
        "workload": {"jobs": jobs},
        "seeds": [1],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


class HoldsTheFastNode(Policy):
    """Starts nothing until HOLD_UNTIL_S (naming its rule for the 8-core node only), then sends every job's
    last map to the old 2-core node (Ω 45 s there against 5.3 s on the new one), the others to the new."""

    name = "holds"

    def holding(self, snapshot: ClusterSnapshot, node: str) -> str | None:
        return "waits for the clock" if node.startswith("gupta-new") and snapshot.now < HOLD_UNTIL_S else None

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        placed = []
        for job in snapshot.jobs:
            for task in job.maps:
                if not task.pending:
                    continue
                last = task.index == len(job.maps) - 1
                node = "gupta-old-0" if last else "gupta-new-0"
                if snapshot.now < HOLD_UNTIL_S:
                    continue
                if snapshot.unrequested(node)[0] < job.map_request.cpu:
                    continue
                placement = Placement(task, node, Explanation(self.name, 0.0, "test"))
                snapshot.commit(placement)
                placed.append(placement)
        return placed

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])


def test_the_trace_finds_and_names_an_idle_hole_and_a_slow_node_tail(tmp_path: Path) -> None:
    sc = scenario(tmp_path, [{"id": "pi", "app": "pi", "maps": 12, "reduces": 0}])
    nodes = [n.name for n in expand_layout(sc.cluster.nodes)]
    sim = Simulation(sc.cluster, build_jobs(sc, nodes, 1), HoldsTheFastNode(), seed=1, mode="kubernetes")
    trace = RunTrace(sim)
    result = sim.run()
    traced = trace.summary(result)
    hole = traced["longest_idle"]
    # The 8-core node's 8 pods idle from 0 to 60 s by the policy's rule, the old node's 2 by none; then the
    # old node's second pod until the maps still waiting at 60 s start (the new node's first end seconds later).
    assert hole["start_s"] == 0.0 and HOLD_UNTIL_S <= hole["duration_s"] < HOLD_UNTIL_S + 10.0
    assert hole["mean_pods"] == pytest.approx(10.0, abs=1.5) and hole["reason"] == "waits for the clock"
    assert traced["idle_by_reason"]["waits for the clock"] == pytest.approx(8 * HOLD_UNTIL_S)
    (tail,) = traced["tails"]
    assert tail["class"] == "gupta-old" and tail["fastest_class"] in ("gupta-new",)
    assert tail["duration_s"] > 45.0 > 3 * tail["fastest_alone_s"] / 2
    reference = dict(traced, idle_pod_s=0.0, tails=[], longest_idle=None)
    text = " ".join(describe(traced, reference, "the reference"))
    assert (
        f"of 10 pods idle for {hole['duration_s']:.0f} s from 0 s while tasks waited to start (waits for the clock)"
        in text
    )
    assert "pi's last map ran" in text and "on gupta-old (alone on gupta-new:" in text


@pytest.mark.parametrize("policy", ["diagnosis", "kube-default", "fair"])
def test_a_traced_run_is_the_run_untraced(tmp_path: Path, policy: str) -> None:
    sc = scenario(
        tmp_path,
        [
            {"id": "wc", "app": "wordcount", "maps": 16, "reduces": 2, "inputMBPerMap": 32},
            {"id": "pi", "app": "pi", "submitS": 5, "maps": 20, "reduces": 1},
        ],
    )
    nodes = [n.name for n in expand_layout(sc.cluster.nodes)]
    plain = build_simulation(sc, policy, 1, build_jobs(sc, nodes, 1), mode="kubernetes")
    traced = build_simulation(sc, policy, 1, build_jobs(sc, nodes, 1), mode="kubernetes")
    trace = RunTrace(traced)
    assert summarise(traced.run()) == summarise(plain.run())
    assert trace.outcomes, "the trace saw the run's tasks end"
