"""Every scenario under bench/scenarios/ loads, says where it comes from, and keeps the papers' job counts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mrsched.core.catalog import expand_layout
from mrsched.simulator.scenario import Scenario, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "bench" / "scenarios"
FILES = sorted(SCENARIOS.glob("*.yaml"))


# Scenarios whose full run takes too long with five seeds: the seeds they list (at least three). None now: the
# SWIM day had three while it cost minutes a seed (issue 24).
#: The whole SWIM days: a day costs minutes a run under the measured physics (their files say how many).
FEWER_SEEDS: dict[str, list[int]] = {"swim-day-100-nodes": [1, 2], "gupta-ch5-swim-day-no-fault": [1, 2, 3]}


def _load(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.yaml")


def _jobs(scenario: Scenario) -> int:
    """Jobs the listed entries expand to (each entry is submitted ``repeat`` times)."""
    return sum(job.repeat for job in scenario.workload.jobs)


def test_the_directory_holds_the_seed_experiments() -> None:
    names = {path.stem for path in FILES}
    required = {
        "gupta-ch3-pi-jio",
        "gupta-ch3-comb1",
        "gupta-ch3-comb2",
        "gupta-ch3-comb3",
        "dara-wl5",
        "dara-wl9",
        "dara-wl14",
        "dara-wl16",
        "tan-22-jobs",
        "yao-four-users",
        "elkholy-four-jobs",
        "dhok-job-mix",
        "gupta-node-slowdown",
    }
    assert required <= names, f"missing: {sorted(required - names)}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_loads_and_cites_its_source(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.workload.jobs or scenario.workload.trace is not None
    assert scenario.source.strip().startswith("seed 00")
    # The headline quotes the paper's result, number included.
    assert re.search(r"\d", scenario.headline), scenario.headline
    # Five seeds, except where five cost too much to run in minutes (the scenario's header says why).
    assert scenario.seeds == FEWER_SEEDS.get(path.stem, [1, 2, 3, 4, 5])


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_referenced_files_and_fault_nodes_exist(path: Path) -> None:
    scenario = load_scenario(path)
    workload = scenario.workload
    if workload.inter_arrival is not None:
        assert scenario.resolve(workload.inter_arrival.swim).is_file()
    if workload.trace is not None:
        assert scenario.resolve(workload.trace.path).is_file()
    nodes = {node.name for node in expand_layout(list(scenario.cluster.nodes))}
    for fault in scenario.cluster.faults:
        assert fault.node in nodes, f"fault on {fault.node!r}, nodes: {sorted(nodes)}"
    ids = [job.id for job in workload.jobs if job.id]
    assert len(ids) == len(set(ids)), "job ids must be unique"


# seed 003 Table IV: (submit s, maps, reduces) of the 22 jobs; job 01 has no time (0), job 21 no reduce.
TAN_TABLE_IV = [
    (0, 148, 15), (30, 148, 15), (150, 5, 1), (170, 8, 1), (190, 8, 2), (210, 8, 2), (230, 8, 3),
    (470, 427, 15), (500, 427, 15), (800, 224, 27), (860, 15, 5), (880, 8, 3), (900, 8, 2), (1020, 64, 27),
    (1140, 30, 2), (1440, 15, 1), (1710, 352, 27), (2110, 15, 1), (2125, 8, 3), (2245, 64, 27),
    (2365, 150, 0), (2485, 10, 1),
]  # fmt: skip


def test_tan_22_jobs_follow_table_iv() -> None:
    scenario = _load("tan-22-jobs")
    assert _jobs(scenario) == 22
    rows = [(job.submit_s, job.maps, job.reduces) for job in scenario.workload.jobs]
    assert rows == TAN_TABLE_IV
    assert len(expand_layout(list(scenario.cluster.nodes))) == 15  # Set B
    assert (scenario.cluster.map_slots, scenario.cluster.reduce_slots) == (4, 2)


def test_yao_four_users_follow_table_ii() -> None:
    scenario = _load("yao-four-users")
    assert _jobs(scenario) == 285
    per_user: dict[str, list[str]] = {}
    for job in scenario.workload.jobs:
        per_user.setdefault(job.user, []).append(job.app)
    expected = {
        "user1": ("wordcount", 150),
        "user2": ("pi", 100),
        "user3": ("grep", 30),
        "user4": ("sort", 5),
    }
    assert {user: (apps[0], len(apps)) for user, apps in per_user.items()} == expected
    assert all(len(set(apps)) == 1 for apps in per_user.values())
    assert all(job.maps == 20 for job in scenario.workload.jobs if job.app == "pi")
    assert len(expand_layout(list(scenario.cluster.nodes))) == 11


def test_elkholy_four_jobs_follow_table_iii() -> None:
    scenario = _load("elkholy-four-jobs")
    assert _jobs(scenario) == 4
    assert [(job.app, job.maps) for job in scenario.workload.jobs] == [
        ("wordcount", 170),
        ("terasort", 16),
        ("piestimator", 10),
        ("terasort", 16),
    ]
    classes = sorted(node.node_class.name for node in expand_layout(list(scenario.cluster.nodes)))
    assert classes == ["elkholy-dualcore", "elkholy-dualcore", "elkholy-i3", "elkholy-i3"]
    # Table V: Fair at 2 (the cluster's) and 3-7 map slots per node in the same run.
    fair = [p for p in scenario.policies if p.split(":")[0] == "fair"]
    assert [scenario.cluster_for(p).map_slots for p in fair] == [2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("count", [3, 5, 6, 7])
def test_elkholy_job_count_batches_extend_table_iii(count: int) -> None:
    """Table VI (digest A10): the first three of Table III, or Table III followed by TeraSort, Pi, TeraSort,
    each submitted 5 s after the last."""
    scenario = _load(f"elkholy-jobs-{count}")
    apps = [job.app for job in scenario.workload.jobs]
    pattern = ["wordcount", "terasort", "piestimator", "terasort", "terasort", "piestimator", "terasort"]
    assert apps == pattern[:count]
    assert [job.submit_s for job in scenario.workload.jobs] == [5.0 * i for i in range(count)]
    assert scenario.cluster.map_slots == 2 and "adaptive-slots" in scenario.policies


# seed 002 Table 4.3, in submission order.
DARA_TABLE_4_3 = {
    1: ["pi"],
    2: ["sort"],
    3: ["wordcount"],
    4: ["randomwriter"],
    5: ["pi", "wordcount"],
    6: ["pi", "sort"],
    7: ["sort", "wordcount"],
    8: ["wordcount", "sort", "aggwordcount"],
    9: ["pi", "wordcount", "sort"],
    10: ["aggwordcount", "pi", "pi"],
    11: ["wordcount", "pi", "sort"],
    12: ["sort", "aggwordcount", "wordcount", "wordcount"],
    13: ["aggwordcount", "aggwordcount", "sort", "pi"],
    14: ["pi", "sort", "wordcount", "aggwordcount", "wordcount"],
    15: ["aggwordcount", "wordcount", "sort", "wordcount", "aggwordcount"],
    16: ["pi", "pi", "pi", "wordcount", "wordcount"],
}


@pytest.mark.parametrize("wl", sorted(DARA_TABLE_4_3))
def test_dara_workloads_follow_table_4_3(wl: int) -> None:
    scenario = _load(f"dara-wl{wl}")
    assert [job.app for job in scenario.workload.jobs] == DARA_TABLE_4_3[wl]
    assert scenario.workload.inter_arrival is not None
    assert "FB-2009" in scenario.workload.inter_arrival.swim
    nodes = expand_layout(list(scenario.cluster.nodes))
    assert len(nodes) == 6 and {node.node_class.name for node in nodes} == {"dara-8core"}
    assert scenario.cluster.map_slots == 12  # the digest's baseline reading: 12 GB / 1 GB containers


def test_node_slowdown_injects_a_fault_at_ten_minutes() -> None:
    scenario = _load("gupta-node-slowdown")
    (fault,) = scenario.cluster.faults
    assert fault.start_s == 600 and fault.kind == "cpu-hog"
    assert fault.node == "gupta-ch5-new-3"  # machine7 of Table 5.1
    pi = next(job for job in scenario.workload.jobs if job.app == "pi")
    assert pi.maps == 2000


def test_jio_and_pi_run_on_the_table_3_1_cluster() -> None:
    scenario = _load("gupta-ch3-pi-jio")
    classes = [node.node_class.name for node in expand_layout(list(scenario.cluster.nodes))]
    assert classes == ["gupta-old", "gupta-old", "gupta-new", "gupta-new", "gupta-new-fast"]
    assert sorted(job.app for job in scenario.workload.jobs) == ["jio", "pi"]


def test_swim_day_replays_fb_2009_on_100_nodes_under_every_policy() -> None:
    from mrsched.policies import policy_names
    from mrsched.simulator.workload import build_jobs

    scenario = _load("swim-day-100-nodes")
    trace = scenario.workload.trace
    assert trace is not None and trace.format == "swim" and "FB-2009" in trace.path
    assert trace.max_jobs is None  # the whole day (issue 24)
    assert (trace.size_scale, trace.time_scale) == (6, 1)  # SWIM's bytes x 100/600, times kept
    assert trace.users is not None and (trace.users.count, trace.users.rule) == (8, "size")
    nodes = expand_layout(list(scenario.cluster.nodes))
    assert len(nodes) == 100
    racks = {node.rack for node in nodes}
    assert racks == {f"rack-{k}" for k in range(1, 6)}
    assert all(sum(1 for node in nodes if node.rack == rack) == 20 for rack in racks)
    assert len({node.node_class.name for node in nodes}) == 3  # heterogeneous
    # Every policy the project has (issue 9), with OPENBLAS_NUM_THREADS=1 (the scenario's header says why); each
    # run's time is in bench/results/swim-day-speed.txt.
    assert sorted(scenario.policies) == sorted(policy_names())
    names = [node.name for node in nodes]
    jobs = build_jobs(scenario, names, seed=1)
    assert len(jobs) == 5894 and max(job.submit_s for job in jobs) > 23 * 3600
    assert sum(len(job.maps) for job in jobs) == 38895 and max(len(job.maps) for job in jobs) == 9377
    # Users by size band over the whole day.
    assert {job.user for job in jobs} == {f"user-{k}" for k in range(8)}
    small = [job for job in jobs if job.user == "user-0"]
    large = [job for job in jobs if job.user == "user-7"]
    assert all(len(job.maps) == 1 for job in small) and any(len(job.maps) > 1 for job in large)
    # The Kubernetes contest's cut (bench/swim_cut.py): the first four hours, with the same jobs as the day's.
    sys.path.insert(0, str(SCENARIOS.parent))
    try:
        from swim_cut import four_hours
    finally:
        sys.path.remove(str(SCENARIOS.parent))
    cut = four_hours(scenario)
    four = build_jobs(cut, names, seed=1)
    assert len(four) == 629 and max(job.submit_s for job in four) < 4 * 3600
    assert {job.user for job in four} == {f"user-{k}" for k in range(8)}  # all eight users within the hours
    assert [(j.id, len(j.maps), j.submit_s) for j in four] == [
        (j.id, len(j.maps), j.submit_s) for j in jobs[:629]
    ]
    assert cut.options_for("dara:shortest-first")["exhaustiveLimit"] is None and cut.options_for("capacity")


def test_the_1000_node_day_is_the_day_on_ten_times_the_cluster_as_hadoop_1_would_run_it() -> None:
    """bench/simulator_day.py's day-1000: each node group ten times over, SWIM's byte scaling for 1,000 machines
    and the heartbeat Hadoop 1's JobTracker gives 1,000 TaskTrackers (getNextHeartbeatInterval: 1,000 / 100
    heartbeats a second = 10 s, over the 3 s minimum that 100 TaskTrackers get)."""
    scenario = _load("swim-day-100-nodes")
    sys.path.insert(0, str(SCENARIOS.parent))
    try:
        from simulator_day import scaled_day
    finally:
        sys.path.remove(str(SCENARIOS.parent))
    large = scaled_day(scenario)
    nodes = expand_layout(list(large.cluster.nodes))
    assert large.name == "swim-day-1000-nodes" and len(nodes) == 1000 and len({n.name for n in nodes}) == 1000
    assert len({node.rack for node in nodes}) == 50
    classes = [node.node_class.name for node in nodes]
    small = [node.node_class.name for node in expand_layout(list(scenario.cluster.nodes))]
    assert {c: classes.count(c) for c in set(classes)} == {c: 10 * small.count(c) for c in set(small)}
    assert large.workload.trace is not None and large.workload.trace.size_scale == pytest.approx(0.6)
    assert (scenario.cluster.heartbeat_s, large.cluster.heartbeat_s) == (3, 10)
    assert "getNextHeartbeatInterval" in large.sources["cluster.heartbeatS"]
