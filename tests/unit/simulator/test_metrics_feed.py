"""The shared node-metrics module (statuses and ages) and the simulator's Prometheus that feeds it: scrape lag,
the kernel's load average, rates over the window, outages; and per-policy cluster overrides in scenarios."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from mrsched.core.model import ClusterSnapshot, NodeMetrics, Placement
from mrsched.core.node_metrics import MetricsTracker, Sample
from mrsched.policies.hadoop.fifo import Fifo
from mrsched.simulator.engine import Simulation
from mrsched.simulator.scenario import Scenario, ScenarioError, load_scenario
from mrsched.simulator.workload import build_jobs

# --- the tracker -------------------------------------------------------------------------------------------


def test_statuses_from_the_age_of_each_nodes_latest_sample() -> None:
    tracker = MetricsTracker(max_age_s=10)
    tracker.record({"a": Sample(100.0, {"load1": 1.5, "cpu_utilisation": math.nan})})
    fresh = tracker.node("a", 105.0)
    assert (fresh.status, fresh.age_s, fresh.load1) == ("fresh", 5.0, 1.5)
    assert fresh.cpu_utilisation is None  # NaN is unknown, never a number
    assert tracker.node("b", 105.0) == NodeMetrics(status="missing")
    stale = tracker.node("a", 111.0)
    assert (stale.status, stale.load1) == ("stale", None)  # too old: unknown, not the old value
    tracker.record({"a": Sample(90.0, {"load1": 9.0})})  # an older sample never replaces a newer one
    assert tracker.node("a", 105.0).load1 == 1.5
    tracker.source_down()
    down = tracker.node("a", 105.0)
    assert (down.status, down.load1, down.age_s) == ("unavailable", None, 5.0)
    tracker.source_up()
    assert tracker.node("a", 105.0).status == "fresh"


# --- the simulator's Prometheus ------------------------------------------------------------------------------


class Watching(Fifo):
    """FIFO that reads metrics, and keeps what each heartbeat showed it."""

    name = "watching"
    needs_metrics: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[float, str, NodeMetrics]] = []

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        self.seen.append((snapshot.now, node, snapshot.metrics[node]))
        return super().assign(snapshot, node)


def scenario(tmp_path: Path, **changes: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "metrics",
        "source": "test",
        "headline": "test",
        "cluster": {
            "nodes": [{"class": "small", "count": 1}],
            "mapSlots": 1,
            "reduceSlots": 1,
            "heartbeatS": 1,
            "metrics": {"scrapeS": 5, "rateWindowS": 10, "maxAgeS": 12},
        },
        # One long CPU-bound map at a time on a 1-slot node: one runnable thread from t ≈ 0.
        "workload": {"jobs": [{"id": "pi", "app": "pi", "maps": 40, "reduces": 0, "inputMBPerMap": 0}]},
        "policies": ["fifo"],
        **changes,
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def run(sc: Scenario) -> tuple[Simulation, Watching]:
    policy = Watching()
    nodes = ["small-0"]
    sim = Simulation(sc.cluster, build_jobs(sc, nodes, 1), policy, seed=1)
    sim.run(until_s=120)
    return sim, policy


def test_heartbeats_see_metrics_as_of_the_latest_scrape(tmp_path: Path) -> None:
    sim, policy = run(scenario(tmp_path))
    cores = sim.nodes["small-0"].cores
    before = [m for t, _, m in policy.seen if t < 5]
    assert before and all(m.status == "missing" for m in before)  # nothing scraped yet
    after = [(t, m) for t, _, m in policy.seen if t >= 5]
    assert all(m.status == "fresh" and m.age_s is not None and m.age_s < 5 + 1e-9 for _, m in after)
    # One task runs nearly all the time on the node (up to a heartbeat's gap between maps): the kernel's
    # damped load is 1 − e^(−t/60) after t s of one runnable thread, read at the latest scrape; a 5 s sample
    # that falls in a gap counts 0, so allow one sample's worth (e^(−1)·(1 − e^(−1/12)) ≈ 0.03) or two.
    t, m = next((t, m) for t, m in after if t >= 60)
    scraped_at = t - (m.age_s or 0.0)
    assert m.load1 == pytest.approx(1 - math.exp(-scraped_at / 60), abs=0.065)
    assert m.load1 is not None and m.load1 < 1 - math.exp(-scraped_at / 60) + 1e-9  # damped: never ahead
    # CPU utilisation over the 10 s window: one thread on the node's cores, busy but for each map's 0.5 s
    # start-up and the heartbeat's gap between maps (10 CPU-s of every ~11.5 s).
    assert m.cpu_utilisation is not None and 0.8 / cores < m.cpu_utilisation <= 1 / cores
    assert m.memory_available_mb is not None and m.memory_available_mb < sim.nodes["small-0"].memory_mb


def test_an_outage_is_unavailable_then_stale_until_the_next_scrape(tmp_path: Path) -> None:
    sc = scenario(
        tmp_path,
        cluster={
            "nodes": [{"class": "small", "count": 1}],
            "mapSlots": 1,
            "heartbeatS": 1,
            "metrics": {"scrapeS": 5, "maxAgeS": 8, "outages": [{"startS": 30, "endS": 61}]},
        },
    )
    _, policy = run(sc)
    status = {round(t): m.status for t, _, m in policy.seen}
    assert {status[s] for s in range(31, 60) if s in status} == {"unavailable"}
    assert status.get(61) == "stale" or status.get(62) == "stale"  # up again, last sample from t = 25
    assert {status[s] for s in range(66, 100) if s in status} == {"fresh"}  # scraped again at 65


def test_policies_that_read_no_metrics_get_none(tmp_path: Path) -> None:
    sc = scenario(tmp_path)
    sim = Simulation(sc.cluster, build_jobs(sc, ["small-0"], 1), Fifo(), seed=1)
    sim.run(until_s=30)
    assert sim.metrics is None and sim.snapshot.metrics == {}


# --- per-policy cluster overrides ---------------------------------------------------------------------------


def test_cluster_overrides_change_one_entrys_cluster(tmp_path: Path) -> None:
    sc = scenario(
        tmp_path, policies=["fair", "fair:slots3"], clusterOverrides={"fair:slots3": {"mapSlots": 3}}
    )
    assert sc.cluster_for("fair").map_slots == 1
    assert sc.cluster_for("fair:slots3").map_slots == 3
    assert sc.cluster_for("fair:slots3").metrics == sc.cluster.metrics
    with pytest.raises(ScenarioError, match="not in policies"):
        scenario(tmp_path, clusterOverrides={"fair:slots9": {"mapSlots": 9}})
    with pytest.raises(ScenarioError, match="mapSlots"):
        scenario(tmp_path, policies=["fifo", "fair:x"], clusterOverrides={"fair:x": {"mapSlots": 0}})
