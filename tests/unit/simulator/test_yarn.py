"""The simulator's YARN mode (issue 22): YARN's FairScheduler and CapacityScheduler rules as the 3.3.5 source has
them, SLS's ApplicationMaster protocol, and agreement with a real SLS run (tests/fixtures/sls)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from mrsched.core.model import Job, Resources, Task
from mrsched.core.yarn import AM_PRIORITY, MAP_PRIORITY, Request, Res, YarnApp, YarnNode
from mrsched.policies.yarn.capacity import YarnCapacityScheduler
from mrsched.policies.yarn.fair import YarnFairScheduler
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import ClusterSpec, load_scenario
from mrsched.simulator.yarn import YarnSimulation, yarn_scheduler

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "sls"
CONTAINER = Res(1024, 1)
CLUSTER = Res(8 * 4096, 8 * 4)


def _node(name: str = "node1", rack: str = "rack1", used: int = 0) -> YarnNode:
    return YarnNode(name, rack, Res(4096, 4), Res(1024 * used, used))


def _app(
    app_id: str, queue: str = "q", user: str = "u", order: int = 0, *, am: bool = True, maps: int = 0
) -> YarnApp:
    app = YarnApp(app_id, queue, user, float(order), order, CONTAINER)
    if am:  # its AM already runs somewhere else
        app.am_used = CONTAINER
        app.used = CONTAINER
    else:
        app.requests[AM_PRIORITY] = Request(AM_PRIORITY, CONTAINER, any=1)
    if maps:
        app.requests[MAP_PRIORITY] = Request(MAP_PRIORITY, CONTAINER, any=maps)
    return app


# --- FairScheduler ------------------------------------------------------------------------------------------------


def test_fair_gives_a_heartbeat_at_most_half_the_nodes_free_resources_plus_one_container() -> None:
    """attemptScheduling with dynamic.max.assign: 4 free containers -> 3, 2 free -> 2, 1 free -> 1."""
    fair = YarnFairScheduler.from_options({}, ["q"])
    for used, expected in ((0, 3), (2, 2), (3, 1)):
        app = _app("a", maps=10)
        fair.update([app], CLUSTER, 0.0)
        assert len(fair.node_update(_node(used=used), [app], CLUSTER, 8)) == expected


def test_fair_does_not_see_a_request_until_its_update_thread_has_run() -> None:
    fair = YarnFairScheduler.from_options({}, ["q"])
    app = _app("a")
    fair.update([app], CLUSTER, 0.0)  # its demand: its AM, which it holds
    app.requests[MAP_PRIORITY] = Request(MAP_PRIORITY, CONTAINER, any=4)  # its AM asks for maps
    assert fair.node_update(_node(), [app], CLUSTER, 8) == []  # demand as of the update: nothing pending
    fair.update([app], CLUSTER, 0.5)
    assert len(fair.node_update(_node(), [app], CLUSTER, 8)) == 3


def test_fair_serves_the_queue_with_least_memory_used_over_its_weight() -> None:
    fair = YarnFairScheduler.from_options({"weights": {"heavy": 3.0, "light": 1.0}}, ["heavy", "light"])
    heavy, light = _app("h", "heavy", maps=9, order=0), _app("l", "light", maps=9, order=1)
    heavy.used = Res(3 * 1024, 3)  # 3 containers over weight 3 = 1 per unit of weight ...
    light.used = Res(2 * 1024, 2)  # ... against 2 over weight 1
    fair.update([heavy, light], CLUSTER, 0.0)
    first = fair.node_update(_node(used=0), [heavy, light], CLUSTER, 8)[0]
    assert first.app == "h"


def test_fair_max_am_share_counts_vcores_against_the_clusters_free_vcores() -> None:
    """The fair policy gives vcores no fair share, so an AM may start only while the queue's AMs and it fit in
    maxAMShare of the cluster's free vcores (FSLeafQueue.computeMaxAMResource)."""
    fair = YarnFairScheduler.from_options({"maxAMShare": {"q": 0.5}}, ["q"])
    running = [_app(f"r{i}", order=i) for i in range(2)]  # two AMs of the queue run
    for app in running:
        app.used = app.am_used = CONTAINER
    waiting = _app("w", am=False, order=9)
    apps = [*running, waiting]
    fair.update(apps, CLUSTER, 0.0)
    # 4 vcores free in the cluster: ceil(0.5 * 4) = 2 < 3 AMs, so the AM waits though the node has room.
    full = [_node(f"n{i}", used=4) for i in range(7)]
    cluster_used = Res(sum(n.allocated.memory_mb for n in full), sum(n.allocated.vcores for n in full))
    for app in running:  # the apps hold the cluster's busy containers
        app.used = Res(cluster_used.memory_mb // 2, cluster_used.vcores // 2)
    assert fair.node_update(_node("free"), apps, CLUSTER, 8) == []
    # With 6 vcores free (ceil(0.5 * 6) = 3) it starts.
    running[0].used = running[0].used - Res(2048, 2)
    placed = fair.node_update(_node("free"), apps, CLUSTER, 8)
    assert [a.app for a in placed][:1] == ["w"]


def test_fair_serves_a_queue_below_its_min_share_first_and_never_over_its_max() -> None:
    """FairSharePolicy: a needy queue (usage below min(minResources, demand)) comes before one that uses less
    over its weight; FSQueue.fitsInMaxShare: no container takes a queue over its maxResources."""
    options = {
        "minResources": {"guaranteed": {"memoryMB": 8192, "vcores": 8}},
        "maxResources": {"capped": {"memoryMB": 2048, "vcores": 2}},
    }
    fair = YarnFairScheduler.from_options(options, ["guaranteed", "other", "capped"])
    guaranteed = _app("g", "guaranteed", maps=20, order=0)
    guaranteed.used = Res(4 * 1024, 4)  # 4 of its 8 GiB minimum, more than the others use
    other = _app("o", "other", maps=20, order=1)
    capped = _app("c", "capped", maps=20, order=2)
    apps = [guaranteed, other, capped]
    fair.update(apps, CLUSTER, 0.0)
    assert fair.node_update(_node("n1"), apps, CLUSTER, 8)[0].app == "g"
    guaranteed.used = Res(8 * 1024, 8)  # at its minimum: no longer needy, and the heaviest user
    given = [a.app for _ in range(4) for a in fair.node_update(_node("n2"), apps, CLUSTER, 8)]
    assert "c" in given and capped.used.memory_mb <= 2048  # capped at 2 GiB: its AM and one map
    assert given.count("c") == 1


def test_fair_shares_split_memory_by_weight_within_min_and_max() -> None:
    fair = YarnFairScheduler.from_options(
        {"weights": {"a": 1.0, "b": 3.0}, "maxResources": {"b": {"memoryMB": 8192, "vcores": 8}}},
        ["a", "b", "idle"],
    )
    fair.update([_app("x", "a"), _app("y", "b")], CLUSTER, 0.0)
    assert fair._fair_share_mb == {"a": 32768 - 8192, "b": 8192, "idle": 0}  # b capped, a takes the rest


def test_capacity_rejects_malformed_options() -> None:
    with pytest.raises(ValueError, match="capacities of a must be a number, not 'half'"):
        YarnCapacityScheduler.from_options({"capacities": {"a": "half"}}, ["a"])
    with pytest.raises(ValueError, match="queue capacities must add up to 100, not 120"):
        YarnCapacityScheduler.from_options({"capacities": {"a": 60, "b": 60}}, ["a", "b"])


def test_fair_rejects_a_malformed_resource_option() -> None:
    with pytest.raises(ValueError, match="maxResources of q must be a mapping of memoryMB and vcores"):
        YarnFairScheduler.from_options({"maxResources": {"q": 4096}}, ["q"])


# --- CapacityScheduler --------------------------------------------------------------------------------------------


def _capacity(**options: object) -> YarnCapacityScheduler:
    return YarnCapacityScheduler.from_options(dict(options), ["q"])


def test_capacity_stops_a_heartbeat_after_its_first_off_switch_container() -> None:
    """maximum-offswitch-assignments is 1: two waiting AMs (ANY requests) start on two heartbeats, not one."""
    capacity = _capacity()
    apps = [_app("a", am=False, order=0), _app("b", am=False, order=1)]
    for app in apps:
        capacity.app_added(app, apps, CLUSTER)
    assert [a.app for a in capacity.node_update(_node(), apps, CLUSTER, 8)] == ["a"]
    assert [a.app for a in capacity.node_update(_node(), apps, CLUSTER, 8)] == ["b"]


def test_capacity_activates_applications_within_the_am_resource_percent() -> None:
    """10 % of a 32 GiB queue is 4 AMs of 1 GiB; the fifth waits until one leaves (activateApplications)."""
    capacity = _capacity(maximumAmResourcePercent=0.1)
    apps: list[YarnApp] = []
    for i in range(5):
        app = _app(f"a{i}", am=False, order=i)
        apps.append(app)
        capacity.app_added(app, apps, CLUSTER)
    placed = []
    for _ in range(8):
        placed += [a.app for a in capacity.node_update(_node(), apps, CLUSTER, 8)]
    assert placed == ["a0", "a1", "a2", "a3"]
    apps.remove(apps[0])
    capacity.app_removed(_app_by(capacity, "a0"), apps, CLUSTER)
    assert [a.app for a in capacity.node_update(_node(), apps, CLUSTER, 8)] == ["a4"]


def _app_by(capacity: YarnCapacityScheduler, app_id: str) -> YarnApp:
    return next(a for group in capacity._active.values() for a in group if a.id == app_id)


def test_capacity_caps_one_user_at_its_guarantee_times_the_user_limit_factor() -> None:
    """A 50 % queue of a 32 GiB cluster with user-limit-factor 1: one user holds at most 16 GiB, then one more
    container (the check is 'above the limit', UsersManager / canAssignToUser)."""
    capacity = YarnCapacityScheduler.from_options({"capacities": {"a": 50, "b": 50}}, ["a", "b"])
    app = _app("x", "a", maps=40)
    capacity.app_added(app, [app], CLUSTER)
    nodes = [_node(f"n{i}") for i in range(8)]
    for _ in range(20):
        for node in nodes:
            capacity.node_update(node, [app], CLUSTER, 8)
    assert app.used.memory_mb == 16 * 1024 + 1024


def test_capacity_delays_a_request_off_its_hosts_then_places_it_off_switch() -> None:
    """Delay scheduling: a map asked on node1 is not put on node2 (rack2) at the first offers; with one container
    wanted, two locations asked and 8 nodes, min(8, 1 * min(2/8, 1)) = 0.25 < 1 missed: off-switch at once; with
    9 wanted on 9 hosts of one rack, it waits for more than min(8, 9 * 1) = 8 missed offers."""
    capacity = _capacity()
    one = _app("one")
    one.requests[MAP_PRIORITY] = Request(
        MAP_PRIORITY, CONTAINER, any=1, hosts={"node1": 1}, racks={"rack1": 1}
    )
    capacity.app_added(one, [one], CLUSTER)
    assert [a.locality for a in capacity.node_update(_node("node2", "rack2"), [one], CLUSTER, 8)] == [
        "off-switch"
    ]

    many = _app("many")
    hosts = {f"h{i}": 1 for i in range(9)}
    many.requests[MAP_PRIORITY] = Request(MAP_PRIORITY, CONTAINER, any=9, hosts=hosts, racks={"rack1": 9})
    capacity = _capacity()
    capacity.app_added(many, [many], CLUSTER)
    offers = 0
    while not capacity.node_update(_node("far", "rack2"), [many], CLUSTER, 8):
        offers += 1
    assert offers == 8  # placed at the ninth offer
    assert capacity.node_update(_node("h3", "rack1"), [many], CLUSTER, 8)[0].locality == "node"


# --- the engine and the scenario ----------------------------------------------------------------------------------


def _cluster(nodes: int = 2) -> ClusterSpec:
    return ClusterSpec.model_validate(
        {
            "nodes": [{"class": "ref", "count": nodes, "names": [f"node{i + 1}" for i in range(nodes)]}],
            "nodeClasses": {
                "ref": {"cores": 4, "memoryMiB": 4096, "physics": {"overheadS": 0, "noiseSigma": 0}}
            },
            "heartbeatS": 1.0,
            "concurrency": "requests",
            "physics": {"replayMeasuredTime": True},
        }
    )


def _job(job_id: str, maps: list[float], reduces: list[float], submit_s: float = 0.0) -> Job:
    job = Job(
        job_id,
        "wordcount",
        submit_s,
        [Task(job_id, "map", i, work_s=w) for i, w in enumerate(maps)],
        [Task(job_id, "reduce", i, work_s=w) for i, w in enumerate(reduces)],
        queue="q",
    )
    job.reduce_slowstart = 1.0
    return job


def test_reduces_are_asked_for_after_the_last_map_as_slss_application_master_does() -> None:
    job = _job("j", [10.0, 30.0], [5.0])
    sim = YarnSimulation(_cluster(), [job], yarn_scheduler("fair", {}, [job]), seed=3)
    launched: list[tuple[float, str]] = []
    original = sim._launch

    def spy(master, container, now):  # type: ignore[no-untyped-def]
        original(master, container, now)
        launched.append((now, container.kind))

    sim._launch = spy  # type: ignore[method-assign]
    result = sim.run()
    last_map_end = max(t + 30.0 for t, kind in launched if kind == "map")
    reduce_start = next(t for t, kind in launched if kind == "reduce")
    assert reduce_start >= last_map_end + 1.0  # reported by the NM, then heard by the AM a heartbeat later
    (record,) = result.jobs
    assert record.finish_s is not None and record.finish_s >= reduce_start + 5.0
    # Each hand-over costs at most a heartbeat or two, never minutes: AM, maps, reduce, finish.
    assert record.finish_s - record.submit_s <= 30.0 + 5.0 + 10 * 1.0


def test_a_slow_start_below_one_asks_for_the_reduces_once_that_share_of_maps_is_done() -> None:
    """ceil(0.5 x 4) = 2 maps heard of; with 0 the reduces are asked for with the maps."""
    for slowstart, maps_before in ((0.5, 2), (0.0, 0)):
        job = _job("j", [5.0, 5.0, 60.0, 60.0], [5.0])
        job.reduce_slowstart = slowstart
        sim = YarnSimulation(_cluster(), [job], yarn_scheduler("fair", {}, [job]), seed=1)
        asked_at: list[int] = []
        original = sim._ask

        def spy(master, original=original, asked_at=asked_at):  # type: ignore[no-untyped-def]
            had = bool(master.to_ask_reduces)
            original(master)
            if had and not master.to_ask_reduces:
                asked_at.append(master.maps_done)

        sim._ask = spy  # type: ignore[method-assign]
        sim.run()
        assert asked_at == [maps_before]


def test_the_am_container_is_held_while_the_job_runs_and_released_after() -> None:
    job = _job("j", [5.0], [])
    sim = YarnSimulation(_cluster(1), [job], yarn_scheduler("capacity", {}, [job]), seed=1)
    sim.run()
    assert sim.nodes["node1"].allocated == Res(1024, 1)  # the AM's: released at the node's next heartbeat
    assert sim._released_am["node1"] and sim._released_am["node1"][0].kind == "am"


def test_yarn_mode_runs_only_yarns_own_schedulers() -> None:
    with pytest.raises(ValueError, match="yarn mode runs YARN's own schedulers"):
        yarn_scheduler("dara", {}, [])


def test_a_job_in_a_queue_the_scheduler_does_not_have_is_a_clear_error() -> None:
    job = _job("j", [5.0], [])
    job.queue = "nope"
    sim = YarnSimulation(
        _cluster(), [job], YarnCapacityScheduler.from_options({"capacities": {"q": 100}}, [])
    )
    with pytest.raises(ValueError, match="queue 'nope' is not one of"):
        sim.run()


def test_a_container_no_node_can_hold_is_a_clear_error_not_an_endless_run() -> None:
    job = _job("big", [5.0], [])
    job.map_request = Resources(cpu=8.0, memory_mb=1024.0)
    sim = YarnSimulation(_cluster(), [job], yarn_scheduler("fair", {}, [job]))
    with pytest.raises(ValueError, match="job big: a container of 1024 MB and 8 vcores fits no node"):
        sim.run()


def test_a_node_group_lists_one_name_per_node() -> None:
    with pytest.raises(ValueError, match="names lists 1 nodes for a group of 2"):
        ClusterSpec.model_validate({"nodes": [{"class": "dara-8core", "count": 2, "names": ["a"]}]})


# --- against a real SLS run ---------------------------------------------------------------------------------------


def _harness() -> ModuleType:
    folder = ROOT / "bench" / "peers" / "sls"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("bench_sls_compare", folder / "compare.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(folder))


def test_yarn_mode_replays_a_real_sls_run_job_by_job(tmp_path: Path) -> None:
    """The fixture is SLS 3.3.5's FairScheduler on four jobs (six 20 s maps and a 10 s reduce each, 5 s apart):
    each job's completion time in YARN mode is within 5 % of SLS's (39 s against 39-40 s) on every seed
    (NodeManager phases); Hadoop 1 mode, with no AM and no protocol delays, gives about 30 s."""
    compare = _harness()
    peer = compare.sls_peer
    cluster = peer.Cluster.from_json(json.loads((FIXTURES / "four-jobs-cluster.json").read_text()))
    sls_jobs = peer.parse_jobruntime(
        (FIXTURES / "four-jobs-fair-jobruntime.csv").read_text(),
        peer.trace_keys(FIXTURES / "four-jobs-trace.json"),
    )
    scenario = compare.scenario_for("four-jobs", "fair", cluster)
    scenario["workload"]["trace"]["path"] = str(FIXTURES / "four-jobs-trace.json")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    for seed in (1, 2, 3):
        summary, results = run_scenario(load_scenario(path), ["fair"], [seed], mode="yarn")
        assert (
            results["fair"].makespan_s >= summary["lower_bound"]["makespan_s"] > 0
        )  # a bound holds here too
        ours = {
            r.id.removeprefix("trace-"): r.finish_s - r.submit_s for r in results["fair"].jobs if r.finish_s
        }
        assert len(ours) == 4
        for job in sls_jobs:
            assert ours[job.job_id] == pytest.approx(job.completion_s, rel=0.05), (seed, job.job_id)


def test_two_nodes_of_one_name_are_an_error() -> None:
    with pytest.raises(ValueError, match="node names must be unique: a name more than one node"):
        ClusterSpec.model_validate(
            {"nodes": [{"class": "dara-8core", "names": ["a"]}, {"class": "dara-8core", "names": ["a"]}]}
        )


def test_a_trace_containers_host_is_its_tasks_node_and_the_trace_sets_slow_start(tmp_path: Path) -> None:
    from mrsched.simulator.workload import build_jobs

    trace = tmp_path / "t.json"
    trace.write_text(
        '{"job.start.ms": 0, "job.id": "a", "job.tasks": ['
        '{"container.host": "/rack1/node2", "duration.ms": 5000},'
        '{"container.host": "/rack9/elsewhere", "duration.ms": 5000},'
        '{"container.host": "/rack1/node1", "duration.ms": 3000, "container.type": "reduce"}]}'
    )
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "hosts",
                "source": "test",
                "headline": "test",
                "cluster": _cluster().model_dump(by_alias=True, exclude_defaults=True)
                | {"nodes": [{"class": "ref", "count": 2, "names": ["node1", "node2"]}]},
                "workload": {"trace": {"format": "sls", "path": str(trace), "reduceSlowstart": 1.0}},
                "policies": ["fair"],
            }
        )
    )
    scenario = load_scenario(path)
    (job,) = build_jobs(scenario, ["node1", "node2"], seed=1)
    assert job.maps[0].replicas == ("node2",)
    assert len(job.maps[1].replicas) == 2  # a host we do not have: replicas drawn as for any trace (2 nodes)
    assert job.reduces[0].replicas == ("node1",)
    assert job.reduce_slowstart == 1.0
