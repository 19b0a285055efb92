"""The measured-physics switches of issue 19 (``cluster.physics``, every one on by default since issue 49): each
changes what its docstring says, and with every switch off the simulator runs as it did before them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from mrsched.core.catalog import expand_layout
from mrsched.core.model import Attempt, ClusterSnapshot, Explanation, Node, Placement, Task
from mrsched.core.physics import TaskDemand
from mrsched.core.policy import Policy
from mrsched.policies import make_policy
from mrsched.simulator.dataflow import DataFlow, base_demand
from mrsched.simulator.engine import Simulation
from mrsched.simulator.run import lower_bound
from mrsched.simulator.scenario import PhysicsOptions, Scenario, SpeculationSpec, load_scenario
from mrsched.simulator.sideflows import Running
from mrsched.simulator.workload import build_jobs


def scenario(
    tmp_path: Path, physics: dict[str, bool], jobs: list[dict[str, Any]], nodes: list[dict[str, Any]]
) -> Scenario:
    data = {
        "name": "physics-options",
        "source": "test",
        "headline": "test",
        "cluster": {
            "nodes": nodes,
            "mapSlots": 2,
            "reduceSlots": 1,
            # A switch off must say why (PhysicsOptions): here, to compare a switch with its absence.
            "physics": {**physics, "reason": "test: the switch off"}
            if False in physics.values()
            else physics,
        },
        "workload": {"jobs": jobs},
        "seeds": [1],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def noise_free(sim: Simulation) -> Simulation:
    for model in sim.models.values():
        model.capability = replace(model.capability, noise_sigma=0.0)
    return sim


class OnlyOn(Policy):
    """Places every pending task on one node, two at a time: remote reads on purpose."""

    name = "only-on"

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        placed: list[Placement] = []
        if node != self.node:
            return placed
        for job in snapshot.jobs:
            for task in job.maps + job.reduces:
                if task.pending and len(snapshot.running[node]) < 2:
                    placement = Placement(task, node, Explanation(self.name, 0.0, "test"))
                    snapshot.commit(placement)
                    placed.append(placement)
        return placed


def test_the_default_is_the_measured_physics_and_a_switch_off_must_say_why() -> None:
    every = {
        "overheadUsesCpu",
        "shuffleWhileMapsRun",
        "remoteReadsLoadReplica",
        "replicaWritesRemote",
        "replayMeasuredTime",
    }
    assert set(PhysicsOptions().enabled()) == every and PhysicsOptions().disabled() == []
    assert PhysicsOptions.measured() == PhysicsOptions()
    assert PhysicsOptions.off().enabled() == [] and set(PhysicsOptions.off().disabled()) == every
    with pytest.raises(ValueError, match="overheadUsesCpu turned off: say why"):
        PhysicsOptions.model_validate({"overheadUsesCpu": False})
    off = PhysicsOptions.model_validate({"overheadUsesCpu": False, "reason": "assumption: a test"})
    assert off.disabled() == ["overheadUsesCpu"]
    assert SpeculationSpec().enabled  # Hadoop 1's mapred.map.tasks.speculative.execution = true
    with pytest.raises(ValueError, match="speculation turned off: say why"):
        SpeculationSpec.model_validate({"enabled": False})


# --- shuffle while maps run ---------------------------------------------------------------------------------


def _nodes() -> dict[str, Node]:
    return {
        "a": Node("a", 4, 8000, "r1", "z"),
        "b": Node("b", 4, 8000, "r1", "z"),
        "c": Node("c", 4, 8000, "r2", "z"),
    }


def test_early_fetches_add_up_to_what_the_reduce_would_fetch_at_the_end() -> None:
    flow = DataFlow(_nodes(), {"a": 2.0, "b": 2.0, "c": 2.0}, PhysicsOptions.measured())
    reduce = Task("j", "reduce", 0, input_mb=300.0)
    held = {"a": 100.0, "b": 250.0, "c": 50.0}
    at_end = flow.demand("sort", reduce, "a", held).network_mb
    early = sum(flow.fetch_mb(reduce, "a", source, mb, sum(held.values())) for source, mb in held.items())
    assert early == pytest.approx(at_end)
    assert flow.fetch_mb(reduce, "a", "a", 100.0, 400.0) == 0.0  # its own node's output: a local read later
    # A byte from the other rack costs two of this rack's (the uplink's share).
    assert flow.fetch_mb(reduce, "a", "c", 100.0, 400.0) == pytest.approx(
        2 * flow.fetch_mb(reduce, "a", "b", 100.0, 400.0)
    )


def _shuffle_run(tmp_path: Path, *, overlap: bool, slowstart: float) -> tuple[float, float]:
    sc = scenario(
        tmp_path,
        {"shuffleWhileMapsRun": overlap},
        [
            {
                "id": "s",
                "app": "sort",
                "maps": 48,
                "reduces": 1,
                "inputMBPerMap": 64,
                "reduceSlowstart": slowstart,
            }
        ],
        # Slow machines (Ω 45 s, κ = 1): the maps run for minutes, time enough to copy their output.
        [{"class": "gupta-old", "count": 2, "rack": "r1"}, {"class": "gupta-old", "count": 2, "rack": "r2"}],
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = noise_free(Simulation(sc.cluster, jobs, lambda truth: make_policy("fifo"), seed=1))
    result = sim.run()
    (record,) = result.jobs
    assert record.finish_s is not None
    return record.finish_s, record.finish_s - sim._last_map_done["s"]


def test_a_reduce_placed_early_copies_map_output_while_the_maps_run(tmp_path: Path) -> None:
    finish_off, tail_off = _shuffle_run(tmp_path, overlap=False, slowstart=0.05)
    finish_on, tail_on = _shuffle_run(tmp_path, overlap=True, slowstart=0.05)
    # 3 GB of map output, 3.8 GB of NIC work (cross-rack bytes count twice): 31 s at 125 MB/s. Most of it was
    # copied, and the reduce's start-up done, before the last map ended: the tail after it is that much shorter.
    assert tail_on < tail_off - 25.0
    assert finish_on < finish_off


def test_with_the_shuffle_overlapping_slow_start_matters_as_in_hadoop(tmp_path: Path) -> None:
    early_on, _ = _shuffle_run(tmp_path, overlap=True, slowstart=0.05)
    late_on, _ = _shuffle_run(tmp_path, overlap=True, slowstart=1.0)
    assert early_on < late_on - 25.0  # launching the reduce early pays off: it copies while maps run
    early_off, _ = _shuffle_run(tmp_path, overlap=False, slowstart=0.05)
    late_off, _ = _shuffle_run(tmp_path, overlap=False, slowstart=1.0)
    # Without it an early reduce only holds a slot: no gain beyond the heartbeat a late one waits to be placed.
    assert abs(early_off - late_off) <= 3.0


def test_an_early_reduce_learns_of_finished_maps_at_its_nodes_heartbeats(tmp_path: Path) -> None:
    """Hadoop 1's TaskTracker asks the JobTracker for map completion events once per heartbeat interval: an early
    reduce copies the maps that ended since, in one fetch, not one transfer per map the instant it ends."""
    sc = scenario(
        tmp_path,
        {"shuffleWhileMapsRun": True},
        [{"id": "s", "app": "sort", "maps": 48, "reduces": 1, "inputMBPerMap": 64, "reduceSlowstart": 0.05}],
        [{"class": "gupta-old", "count": 2, "rack": "r1"}, {"class": "gupta-old", "count": 2, "rack": "r2"}],
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = noise_free(Simulation(sc.cluster, jobs, lambda truth: make_policy("fifo"), seed=1))
    beats: dict[str, set[float]] = {n: set() for n in sim.nodes}
    fetches: list[tuple[str, float]] = []
    started_up: dict[str, float] = {}
    heartbeat, fetch, finished = sim._heartbeat, sim.side._fetch, sim.side.finished

    def on_heartbeat(node: str, now: float) -> None:
        beats[node].add(now)
        heartbeat(node, now)

    def on_fetch(node: str, run: Any, mb: float, now: float) -> None:
        fetches.append((node, now))
        fetch(node, run, mb, now)

    def on_finished(flow: str, now: float) -> None:
        if flow.endswith("~start"):
            started_up[sim.side.owner[flow][0]] = now
        finished(flow, now)

    sim._heartbeat, sim.side._fetch, sim.side.finished = on_heartbeat, on_fetch, on_finished  # type: ignore[method-assign]
    result = sim.run()
    assert result.jobs[0].finish_s is not None
    assert fetches, "the reduce placed early fetched nothing while the maps ran"
    assert all(now in beats[node] or now == started_up.get(node) for node, now in fetches)
    assert len(fetches) < 48  # several maps' outputs learnt of together


def test_a_job_failing_while_its_reduce_fetches_stops_the_fetches(tmp_path: Path) -> None:
    sc = scenario(
        tmp_path,
        {"shuffleWhileMapsRun": True},
        [{"id": "s", "app": "sort", "maps": 48, "reduces": 1, "inputMBPerMap": 64}],
        [{"class": "gupta-old", "count": 2, "rack": "r1"}, {"class": "gupta-old", "count": 2, "rack": "r2"}],
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = Simulation(sc.cluster, jobs, lambda truth: make_policy("fifo"), seed=1)
    fetch = sim.side._fetch
    seen: list[str] = []

    def fetch_then_fail(node: str, run: Any, mb: float, now: float) -> None:
        fetch(node, run, mb, now)
        seen.extend(f for f in run.side if "~fetch" in f)
        if len(seen) >= 3:  # the job fails (a task out of attempts) while its reduce is fetching
            sim._end_job(sim.snapshot.job("s"), now, failed=True)

    sim.side._fetch = fetch_then_fail  # type: ignore[method-assign]
    result = sim.run()
    assert result.jobs[0].failed
    assert not sim.side.owner
    assert all(f not in model.running_ids for model in sim.models.values() for f in seen)


# --- remote reads load the replica --------------------------------------------------------------------------


def _remote_read_run(tmp_path: Path, *, load_replica: bool) -> Simulation:
    sc = scenario(
        tmp_path,
        {"remoteReadsLoadReplica": load_replica},
        [{"id": "wc", "app": "wordcount", "maps": 4, "reduces": 0, "inputMBPerMap": 128}],
        [{"class": "gupta-new", "count": 2, "rack": "r1"}],
    )
    names = [n.name for n in expand_layout(sc.cluster.nodes)]
    jobs = build_jobs(sc, names, 1)
    for task in jobs[0].maps:
        task.replicas = (names[1],)  # every split only on the second node, every map on the first
    sim = noise_free(Simulation(sc.cluster, jobs, lambda truth: OnlyOn(names[0]), seed=1))
    sim.run()
    return sim


def test_a_remote_map_read_is_read_from_the_replicas_disk(tmp_path: Path) -> None:
    off = _remote_read_run(tmp_path, load_replica=False)
    on = _remote_read_run(tmp_path, load_replica=True)
    reader, replica = sorted(off.models)
    assert off.models[replica].counters.disk_read_bytes == 0  # the bytes came from nowhere
    # The replica's disk did every read (a map ends no sooner than its bytes have left that disk).
    assert on.models[replica].counters.disk_read_bytes == pytest.approx(4 * 128e6)
    assert on.models[reader].counters.disk_read_bytes == off.models[reader].counters.disk_read_bytes == 0
    # ... and its NIC sent them (the reader's received them), where nothing was sent before.
    assert on.models[replica].counters.network_transmit_bytes == pytest.approx(4 * 128e6)
    assert on.models[reader].counters.network_receive_bytes == pytest.approx(4 * 128e6)
    assert off.models[replica].counters.network_transmit_bytes == 0
    assert on.models[reader].counters.network_transmit_bytes == 0
    assert not on.locality_counts.get("node")


def test_the_replica_read_from_is_in_the_readers_rack_when_there_is_one() -> None:
    flow = DataFlow(_nodes(), {"a": 2.0, "b": 2.0, "c": 2.0}, PhysicsOptions.measured())
    task = Task("j", "map", 0, 64.0, replicas=("c", "b"))
    assert flow.replica_for(task, "a") == "b"
    assert flow.replica_for(replace(task, replicas=("c",)), "a") == "c"
    assert flow.replica_for(task, "b") is None  # local


# --- replayed containers --------------------------------------------------------------------------------------


def test_a_replayed_container_takes_its_measured_time_over_the_node_speed_and_nothing_more(
    tmp_path: Path,
) -> None:
    sc = scenario(
        tmp_path,
        {"replayMeasuredTime": True},
        [{"id": "t", "app": "wordcount", "maps": 1, "reduces": 0, "inputMBPerMap": 128}],
        [{"class": "gupta-new", "count": 1, "rack": "r1"}, {"class": "gupta-new", "count": 1, "rack": "r2"}],
    )
    names = [n.name for n in expand_layout(sc.cluster.nodes)]
    jobs = build_jobs(sc, names, 1)
    jobs[0].maps[0].work_s = 60.0
    jobs[0].maps[0].replicas = ("elsewhere",)  # not a node here: an off-rack read, were it not a replay
    sim = noise_free(Simulation(sc.cluster, jobs, lambda truth: make_policy("fifo"), seed=1))
    result = sim.run()
    (record,) = result.jobs
    speed = sim.capabilities[names[0]].cpu_rate
    assert record.finish_s is not None and record.start_s is not None
    assert record.finish_s - record.start_s == pytest.approx(60.0 / speed)
    demand = base_demand("wordcount", jobs[0].maps[0], measured_time=True)
    assert (demand.read_mb, demand.write_mb, demand.network_mb, demand.startup) == (0.0, 0.0, 0.0, False)
    # The bound adds nothing either (it draws the noise the run's node would: within a few sigma of 1).
    assert 0.8 * 60.0 / speed <= lower_bound(sim, jobs)["critical_path_s"] <= 1.25 * 60.0 / speed
    legacy = base_demand("wordcount", jobs[0].maps[0])
    assert legacy.startup and legacy.read_mb > 0  # the old reading adds start-up and the profile's I/O


# --- replicated writes ----------------------------------------------------------------------------------------


def test_hdfs_places_the_second_copy_on_another_rack_and_the_third_beside_it() -> None:
    nodes = {**_nodes(), "d": Node("d", 4, 8000, "r2", "z")}
    flow = DataFlow(nodes, dict.fromkeys(nodes, 2.0), PhysicsOptions.measured())
    for attempt in ("j/map/0#1", "j/map/1#1", "j/map/2#2"):
        second, third = flow.replica_targets(attempt, "a", 2)
        assert nodes[second].rack == "r2" and nodes[third].rack == "r2" and second != third
        assert flow.replica_targets(attempt, "a", 2) == [second, third]  # the same attempt, the same nodes
    one_rack = DataFlow(_nodes(), dict.fromkeys("abc", 2.0), PhysicsOptions.measured())
    assert sorted(one_rack.replica_targets("x#1", "c", 2)) == [
        "a",
        "b",
    ]  # no other rack: its own rack's nodes


def _jio_run(tmp_path: Path, *, remote: bool) -> Simulation:
    sc = scenario(
        tmp_path,
        {"replicaWritesRemote": remote},
        [{"id": "jio", "app": "jio", "maps": 1, "reduces": 0, "inputMBPerMap": 51.2}],
        [{"class": "gupta-new", "count": 2, "rack": "r1"}, {"class": "gupta-new", "count": 2, "rack": "r2"}],
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = noise_free(Simulation(sc.cluster, jobs, lambda truth: make_policy("fifo"), seed=1))
    sim.run()
    return sim


def test_jios_three_copies_are_written_by_three_nodes(tmp_path: Path) -> None:
    local = _jio_run(tmp_path, remote=False)
    spread = _jio_run(tmp_path, remote=True)
    written = {name: m.counters.disk_written_bytes for name, m in local.models.items()}
    writer = max(written, key=lambda n: written[n])
    total = written[writer]
    assert sorted(written.values())[:-1] == [0.0, 0.0, 0.0]  # all three copies on the writer's disk
    spread_written = {name: m.counters.disk_written_bytes for name, m in spread.models.items()}
    by_size = sorted(spread_written.values(), reverse=True)
    assert by_size[0] == pytest.approx(total / 3, rel=1e-6)  # the writer's own copy ...
    # ... and each replica's, all of it: the map waits for them
    assert (
        by_size[1] == pytest.approx(total / 3) and by_size[2] == pytest.approx(total / 3) and by_size[3] == 0
    )
    # HDFS's pipeline: the writer sends the first replica its copy, which forwards it to the second.
    sent = sorted((m.counters.network_transmit_bytes for m in spread.models.values()), reverse=True)
    assert sent[0] == pytest.approx(total / 3) and sent[1] == pytest.approx(total / 3) and sent[2:] == [0, 0]
    assert spread.models[writer].counters.network_transmit_bytes == pytest.approx(total / 3)
    (fast,) = spread.map_times["jio"].values()
    (slow,) = local.map_times["jio"].values()
    # Its disk writes one copy, not three; the map ends when its replicas have theirs (HDFS acknowledges a
    # block when every copy is written), so no sooner than a copy crosses a replica's 125 MB/s NIC.
    assert 0.999 * total / 3 / 125e6 <= fast[0] < slow[0] * 0.6


@pytest.mark.parametrize("mode", ["hadoop", "kubernetes"])
@pytest.mark.parametrize("policy", ["fifo", "fair", "kube-default", "greedy-informed"])
def test_with_every_switch_on_every_job_finishes_and_the_bound_holds(
    tmp_path: Path, policy: str, mode: str
) -> None:
    measured = {alias: True for alias in PhysicsOptions.measured().enabled()}
    sc = scenario(
        tmp_path,
        measured,
        [
            {"id": "jio", "app": "jio", "maps": 12, "reduces": 0, "inputMBPerMap": 51.2},
            {"id": "wc", "app": "wordcount", "submitS": 5, "maps": 20, "reduces": 2},
            {"id": "sort", "app": "sort", "submitS": 10, "maps": 16, "reduces": 2, "reduceSlowstart": 0.05},
        ],
        [{"class": "gupta-old", "count": 2, "rack": "r1"}, {"class": "gupta-new", "count": 3, "rack": "r2"}],
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1)
    sim = Simulation(
        sc.cluster, jobs, lambda truth: make_policy(policy, seed=1, truth=truth), seed=1, mode=mode
    )  # type: ignore[arg-type]
    bound = lower_bound(sim, build_jobs(sc, [n.name for n in expand_layout(sc.cluster.nodes)], 1))
    result = sim.run()
    assert all(r.finish_s is not None and not r.failed for r in result.jobs)
    assert bound["makespan_s"] <= result.makespan_s


# --- stragglers and speculative execution ---------------------------------------------------------------------


def test_stragglers_are_as_frequent_as_asked_and_heavy_tailed_within_their_cap() -> None:
    from mrsched.core.physics import straggler_factor

    assert straggler_factor(1, "n", "t#1", 0.0, 1.5, 10.0) == 1.0
    draws = [straggler_factor(1, "n", f"t{i}#1", 0.2, 1.5, 10.0) for i in range(20_000)]
    slow = sorted(d for d in draws if d > 1.0)
    assert abs(len(slow) / len(draws) - 0.2) < 0.015
    assert all(1.0 <= d <= 10.0 for d in draws)
    assert slow[len(slow) // 2] == pytest.approx(2 ** (1 / 1.5), rel=0.08)  # Pareto(1.5)'s median
    assert straggler_factor(1, "n", "t7#1", 0.2, 1.5, 10.0) == draws[7]  # the same attempt, the same draw


def test_an_attempts_progress_grows_with_its_work_done() -> None:
    from mrsched.core.physics import NodeCapability, NodeModel, TaskDemand

    cap = NodeCapability(cores=2, memory_mb=4000, overhead_s=2.0, noise_sigma=0.0)
    model = NodeModel("n", cap)
    model.start("t", TaskDemand(cpu_s=6.0, read_mb=200.0), 0.0)  # Ω 2 s, CPU 6 s, disk 2 s: 10 s alone
    seen = []
    for at in (1.0, 2.0, 5.0, 8.0, 9.0):
        model.advance(at)
        seen.append(model.progress("t"))
    assert seen == pytest.approx([0.1, 0.2, 0.5, 0.8, 0.9])
    model.advance(10.0)
    assert model.progress("t") == 1.0  # finished


def _speculation_run(tmp_path: Path, *, enabled: bool, policy: str = "fifo") -> tuple[Simulation, Any]:
    sc = scenario(
        tmp_path,
        {},
        # Two waves of CPU-heavy maps (60 s of CPU work each) on 8 map slots, one in three a straggler.
        [{"id": "wc", "app": "wordcount", "maps": 16, "reduces": 1, "inputMBPerMap": 1024}],
        [{"class": "gupta-new", "count": 4, "rack": "r1"}],
    )
    cluster = sc.cluster.model_copy(
        update={
            "stragglers": sc.cluster.stragglers.model_copy(update={"probability": 0.3, "pareto_shape": 1.0}),
            "speculation": sc.cluster.speculation.model_copy(update={"enabled": enabled, "lag_s": 10.0}),
        }
    )
    jobs = build_jobs(sc, [n.name for n in expand_layout(cluster.nodes)], 1)
    sim = Simulation(cluster, jobs, lambda truth: make_policy(policy, seed=1, truth=truth), seed=1)
    return sim, sim.run()


def test_speculative_attempts_overtake_stragglers_and_the_losers_are_killed(tmp_path: Path) -> None:
    _, plain = _speculation_run(tmp_path, enabled=False)
    sim, result = _speculation_run(tmp_path, enabled=True)
    report = result.extra["speculation"]
    assert report["speculative_attempts"] > 0 and report["speculative_wins"] > 0
    assert "speculation" not in plain.extra
    assert result.makespan_s < plain.makespan_s  # stragglers' copies on other nodes finish first
    job = sim.snapshot.job("wc") if sim.active else None
    assert job is None  # the job finished
    assert all(not runs for runs in sim._running.values())  # every losing attempt was killed ...
    assert all(not attempts for attempts in sim.snapshot.running.values())  # ... and its slot freed
    assert all(not nodes for nodes in sim._attempt_nodes.values())
    assert result.tasks_started == 17 + report["speculative_attempts"]


def test_speculation_is_for_the_policies_listed(tmp_path: Path) -> None:
    _, result = _speculation_run(tmp_path, enabled=True, policy="kube-default")
    assert "speculation" not in result.extra


def test_twin_attempts_ending_the_same_instant_count_once(tmp_path: Path) -> None:
    """The original and its speculative copy finish together: the second's outcome belongs to a killed attempt
    (it used to raise KeyError)."""
    sc = scenario(
        tmp_path,
        {},
        [{"id": "wc", "app": "wordcount", "maps": 1, "reduces": 0, "inputMBPerMap": 64}],
        [{"class": "gupta-new", "count": 2, "rack": "r1"}],
    )
    cluster = sc.cluster.model_copy(
        update={"speculation": sc.cluster.speculation.model_copy(update={"enabled": True})}
    )
    names = [n.name for n in expand_layout(cluster.nodes)]
    (job,) = build_jobs(sc, names, 1)
    sim = noise_free(Simulation(cluster, [job], lambda truth: make_policy("fifo"), seed=1))
    sim.active.append(job)
    sim._active_ids.add(job.id)
    sim.snapshot.touch(jobs_changed=True)
    (task,) = job.maps
    for node, speculative in zip(names, (False, True), strict=True):
        placement = Placement(task, node, Explanation("test", 0.0, "twin"))
        sim.snapshot.commit(placement)
        sim._start(placement, 0.0, speculative=speculative)
    assert job.running_maps == 1 and len(sim._attempt_nodes[task.key]) == 2
    while sim.models[names[0]].running_ids:  # the twins on identical nodes: the same phase boundaries
        at = sim.models[names[0]].next_event_s()
        for node in names:
            sim.models[node].advance(at)
    at = sim.models[names[1]].now
    for node in names:
        sim._complete(node, at)
    assert task.done and job.finished_maps == 1 and job.running_maps == 0 and sim.records["wc"].finish_s == at
    assert not any(sim._running.values()) and not any(sim.snapshot.running.values())


_ONE_MAP = [{"id": "j", "app": "wordcount", "maps": 1, "reduces": 0, "inputMBPerMap": 64}]  # never run here


def test_a_task_ended_by_an_advance_at_its_end_is_collected_then_not_at_the_nodes_next_end(
    tmp_path: Path,
) -> None:
    """A utilisation sample (or any advance) landing on the instant a task ends must not push the node's next
    event past it: the ended task's outcome would wait for the next phase end on that node."""
    sc = scenario(tmp_path, {}, _ONE_MAP, [{"class": "gupta-new", "count": 1, "rack": "r1"}])
    sim = Simulation(sc.cluster, [], lambda truth: make_policy("fifo"), seed=1)
    (node,) = sim.nodes
    model = sim.models[node]
    model.start("short", TaskDemand(cpu_s=10.0, startup=False), 0.0, noisy=False)
    model.start("long", TaskDemand(cpu_s=100.0, startup=False), 0.0, noisy=False)
    sim._schedule_physics(node)
    end = sim._physics_at[node]
    model.advance(end)
    sim._schedule_physics(node)
    assert sim._physics_at[node] == end


def test_speculation_reads_each_attempts_progress_as_of_now(tmp_path: Path) -> None:
    """An attempt on a node no event has advanced since it started still progresses: its progress is read at the
    snapshot's time, not at the node's last advance."""
    sc = scenario(tmp_path, {}, _ONE_MAP, [{"class": "gupta-new", "count": 1, "rack": "r1"}])
    sim = Simulation(sc.cluster, [], lambda truth: make_policy("fifo"), seed=1)
    (node,) = sim.nodes
    task = Task("j", "map", 0, 64.0)
    demand = TaskDemand(cpu_s=100.0 * sim.models[node].capability.cpu_rate, startup=False)  # 100 s here
    sim._running[node][task.key] = Running(Attempt(task, 1, node, 0.0), demand, "node", "j-m0#1")
    sim.models[node].start("j-m0#1", demand, 0.0, noisy=False)
    sim.snapshot.now = 50.0
    assert 0.3 < sim._progress(node, task.key) < 0.7


def test_results_and_reports_say_which_physics_they_ran_with(tmp_path: Path) -> None:
    from mrsched.simulator.report import markdown
    from mrsched.simulator.run import run_scenario

    jobs = [{"id": "wc", "app": "wordcount", "maps": 4, "reduces": 1}]
    nodes = [{"class": "gupta-new", "count": 2, "rack": "r1"}]
    measured, _ = run_scenario(scenario(tmp_path, {}, jobs, nodes), policies=["fifo"], seeds=[1])
    assert measured["physics"] == {"on": PhysicsOptions().enabled(), "off": []}
    assert measured["speculation"] == ["fifo", "fair", "capacity"]
    text = markdown(measured)
    assert "the measured physics, every `cluster.physics` switch on" in text
    assert "speculative execution for fifo, fair, capacity" in text
    off = scenario(tmp_path, {"overheadUsesCpu": False, "shuffleWhileMapsRun": False}, jobs, nodes)
    quiet = off.cluster.speculation.model_copy(update={"enabled": False, "reason": "paper: off in seed 003"})
    off = off.model_copy(update={"cluster": off.cluster.model_copy(update={"speculation": quiet})})
    summary, _ = run_scenario(off, policies=["fifo"], seeds=[1])
    assert summary["physics"]["off"] == ["overheadUsesCpu", "shuffleWhileMapsRun"]
    assert summary["physics"]["reason"] == "test: the switch off"
    assert summary["speculation"] == [] and summary["speculationOff"] == "paper: off in seed 003"
    text = markdown(summary)
    assert "switches off: `overheadUsesCpu`, `shuffleWhileMapsRun` (test: the switch off)" in text
    assert "no speculative execution (paper: off in seed 003)" in text


def test_an_offline_input_one_policy_is_given_every_policy_that_can_use_it_is_given(tmp_path: Path) -> None:
    from mrsched.simulator.parity import offline_inputs, share_offline_inputs

    sc = scenario(tmp_path, {}, _ONE_MAP, [{"class": "gupta-new", "count": 1, "rack": "r1"}])
    alphas = {"gupta-new": [0.05, 0.002]}
    sc = sc.model_copy(
        update={
            "policy_options": {
                "dara": {"alphas": alphas},
                "diagnosis:own": {"alphas": {"gupta-new": [1, 1]}},
            },
            "sources": {"policyOptions.dara.alphas": "target-fitted: a test's α"},
        }
    )
    labels = ["fifo", "dara", "diagnosis", "diagnosis:own", "diagnosis:wide", "throughput"]
    shared, notes = share_offline_inputs(sc, labels)
    assert notes == ["`alphas` of `dara` given to `diagnosis` as well"]
    assert shared.options_for("diagnosis") == {"alphas": alphas}
    assert shared.options_for("diagnosis:wide") == {"alphas": alphas}  # through its bare policy's options
    assert shared.options_for("diagnosis:own") == {"alphas": {"gupta-new": [1, 1]}}  # its own value kept
    assert shared.options_for("fifo") is None  # FIFO takes no α
    assert shared.sources["policyOptions.diagnosis.alphas"].startswith("target-fitted: a test's α")
    given = offline_inputs(shared, labels)
    assert given["diagnosis"] == ["alphas"] and given["throughput"] == ["probes"] and given["fifo"] == []
    assert share_offline_inputs(sc, ["fifo", "throughput"]) == (sc, [])
