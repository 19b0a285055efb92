"""The physics model against closed-form cases (seed 002 Eq 3.2, processor sharing) and its contention."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from mrsched.core.catalog import node_class
from mrsched.core.physics import (
    Fault,
    NodeCapability,
    NodeModel,
    TaskDemand,
    isolated_duration,
    noise_factor,
    predicted_duration,
    run_alone,
)

CAP = NodeCapability(
    cores=4,
    memory_mb=16_000,
    cpu_rate=2.0,
    disk_rate=0.5,
    overhead_s=3.0,
    noise_sigma=0.0,
    cpu_contention=0.2,
    disk_contention=0.1,
    overhead_cpu_share=0.0,  # a free start-up: the closed forms below add Ω; start-up on the CPU is tested apart
)


def run_all(model: NodeModel) -> dict[str, float]:
    while model.running_ids:
        model.advance(model.next_event_s())
    return {o.task_id: o.duration_s for o in model.pop_finished()}


def run_together(cap: NodeCapability, demands: list[TaskDemand]) -> dict[str, float]:
    model = NodeModel("n", cap)
    for i, demand in enumerate(demands):
        model.start(str(i), demand, 0.0)
    return run_all(model)


@pytest.mark.parametrize(
    "cpu_s, read_mb, write_mb", [(10.0, 0.0, 0.0), (0.0, 100.0, 50.0), (7.5, 30.0, 20.0)]
)
def test_alone_the_task_takes_eq_3_2_exactly(cpu_s: float, read_mb: float, write_mb: float) -> None:
    demand = TaskDemand(cpu_s=cpu_s, read_mb=read_mb, write_mb=write_mb)
    expected = CAP.overhead_s + cpu_s / CAP.cpu_rate + (read_mb + write_mb) / 100.0 / CAP.disk_rate
    assert run_alone(CAP, demand) == pytest.approx(expected, rel=1e-12)
    assert isolated_duration(CAP, demand) == pytest.approx(expected, rel=1e-12)


def test_table_3_1_machines_reproduce_their_kappa() -> None:
    """Probe pairs as in seed 002 Eq 3.3-3.5 recover κc of the Table 3.1 classes from durations alone."""
    eta, theta_c = 3.0, 10.0
    for name, kappa_c in (("gupta-old", 1.0), ("gupta-new", 7.5), ("gupta-new-fast", 7.8)):
        cap = node_class(name).capability()
        t1 = run_alone(cap, TaskDemand(cpu_s=theta_c, read_mb=64.0))
        t_eta = run_alone(cap, TaskDemand(cpu_s=eta * theta_c, read_mb=64.0))
        assert theta_c * (eta - 1) / (t_eta - t1) == pytest.approx(kappa_c, rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_up_to_the_core_count_identical_cpu_tasks_do_not_slow_each_other(k: int) -> None:
    durations = run_together(CAP, [TaskDemand(cpu_s=20.0)] * k)
    assert all(d == pytest.approx(3.0 + 20.0 / 2.0) for d in durations.values())


@pytest.mark.parametrize("k", [6, 8, 12])
def test_beyond_the_cores_cpu_tasks_stretch_by_k_over_c_times_the_contention_cost(k: int) -> None:
    durations = run_together(CAP, [TaskDemand(cpu_s=20.0)] * k)
    no_penalty = replace_contention(CAP, 0.0)
    plain = run_together(no_penalty, [TaskDemand(cpu_s=20.0)] * k)
    stretch = k / CAP.cores
    # Processor sharing alone: the CPU phase stretches by exactly k/c.
    assert all(d == pytest.approx(3.0 + 10.0 * stretch) for d in plain.values())
    # With the cache/context-switch cost on top: by (k/c)·(1 + a(k−c)/c).
    cost = 1 + CAP.cpu_contention * (k - CAP.cores) / CAP.cores
    assert all(d == pytest.approx(3.0 + 10.0 * stretch * cost) for d in durations.values())


def replace_contention(cap: NodeCapability, a: float) -> NodeCapability:
    from dataclasses import replace

    return replace(cap, cpu_contention=a)


def test_completion_time_grows_super_linearly_with_load() -> None:
    """Seed 002 §4.2: flat while the cores suffice, then faster than linear (its Eq 4.12 is quadratic)."""
    cap = node_class("dara-8core").capability()
    cap = NodeCapability(**{**cap.__dict__, "noise_sigma": 0.0})
    times = {
        k: max(run_together(cap, [TaskDemand(cpu_s=10.0, write_mb=5.0)] * k).values()) for k in range(1, 25)
    }
    assert times[8] < 1.1 * times[1]
    increments = [times[k + 1] - times[k] for k in range(9, 24)]
    assert all(b > a for a, b in itertools.pairwise(increments))  # convex beyond the cores
    disk = {
        k: max(run_together(cap, [TaskDemand(read_mb=100.0)] * k).values()) - cap.overhead_s
        for k in (1, 2, 4, 8)
    }
    assert (
        disk[8] / disk[4] > disk[4] / disk[2] > disk[2] / disk[1] > 2.0
    )  # seek thrashing: worse than shared


def test_pi_throughput_peaks_near_twelve_tasks_on_eight_cores() -> None:
    """Seed 002 Fig 2.5: Pi map throughput on an 8-core node peaks at 12 concurrent tasks."""
    cap = NodeCapability(**{**node_class("dara-8core").capability().__dict__, "noise_sigma": 0.0})
    throughput = {
        k: k / max(run_together(cap, [TaskDemand(cpu_s=10.0, write_mb=5.0)] * k).values())
        for k in range(4, 25)
    }
    assert 10 <= max(throughput, key=lambda k: throughput[k]) <= 14


def test_cpu_and_disk_bound_tasks_barely_slow_each_other() -> None:
    """Seed 002 §4.2: Pi tasks barely slow Sort tasks and vice versa (different resources)."""
    cpu_task, disk_task = TaskDemand(cpu_s=10.0), TaskDemand(cpu_s=0.2, read_mb=200.0)
    alone_cpu = run_alone(CAP, cpu_task)
    mixed = run_together(CAP, [cpu_task, disk_task])
    assert mixed["0"] == pytest.approx(alone_cpu)
    assert mixed["1"] == pytest.approx(run_alone(CAP, disk_task))


def test_memory_over_subscription_slows_then_kills() -> None:
    cap = NodeCapability(cores=8, memory_mb=1000, noise_sigma=0.0, swap_penalty=10.0, oom_ratio=1.5)
    fits = run_together(cap, [TaskDemand(cpu_s=10.0, memory_mb=500)] * 2)
    swaps = run_together(cap, [TaskDemand(cpu_s=10.0, memory_mb=600)] * 2)  # 1.2× memory
    assert max(swaps.values()) > 2.5 * max(fits.values())
    model = NodeModel("n", cap)
    assert model.start("a", TaskDemand(cpu_s=1.0, memory_mb=900), 0.0)
    assert not model.start("b", TaskDemand(cpu_s=1.0, memory_mb=700), 0.0)  # 1.6× > oom_ratio
    (killed,) = model.pop_finished()
    assert killed.task_id == "b" and killed.oom_killed


def test_faults_take_effect_from_their_start_and_end() -> None:
    demand = TaskDemand(cpu_s=20.0)
    healthy = run_alone(CAP, demand)
    # One busy loop per core: a lone task competes with 4 loops for 4 cores and gets 4/5 of one.
    lone = 3.0 + 10.0 / (4 / 5) * (1 + CAP.cpu_contention * 1 / 4)
    assert run_alone(CAP, demand, faults=[Fault("cpu-hog", 0.0, intensity=1.0)]) == pytest.approx(lone)
    full = [TaskDemand(cpu_s=20.0)] * 4
    model = NodeModel("n", CAP)
    model.add_fault(Fault("cpu-hog", start_s=0.0, intensity=1.0))
    for i, d in enumerate(full):
        model.start(str(i), d, 0.0)
    hogged = max(run_all(model).values())
    cost = 1 + CAP.cpu_contention * 4 / 4
    assert hogged == pytest.approx(3.0 + 10.0 * 2 * cost)
    # A fault that starts after the task ends changes nothing; lost cores act from their start.
    assert run_alone(CAP, demand, faults=[Fault("disk-hog", start_s=100.0, intensity=4)]) == pytest.approx(
        healthy
    )
    model = NodeModel("n", CAP)
    model.add_fault(Fault("lost-cores", start_s=8.0, end_s=None, intensity=2))
    for i, d in enumerate(full):
        model.start(str(i), d, 0.0)
    # 5 s of CPU at full speed (t = 3..8), then 4 tasks on 2 cores with contention until done.
    remaining = 20.0 - 2.0 * 5.0
    rate = 2.0 * (2 / 4) / (1 + CAP.cpu_contention * 2 / 2)
    assert max(run_all(model).values()) == pytest.approx(8.0 + remaining / rate)


def test_disk_hog_slows_disk_work_not_cpu_work() -> None:
    hog = [Fault("disk-hog", 0.0, intensity=2)]
    cpu_task, disk_task = TaskDemand(cpu_s=10.0), TaskDemand(read_mb=100.0)
    assert run_alone(CAP, cpu_task, faults=hog) == pytest.approx(run_alone(CAP, cpu_task))
    slowed = run_alone(CAP, disk_task, faults=hog) - CAP.overhead_s
    assert slowed == pytest.approx((run_alone(CAP, disk_task) - CAP.overhead_s) * 3 * (1 + 0.1 * 2))


def test_network_input_crosses_the_nic() -> None:
    local = TaskDemand(cpu_s=1.0, read_mb=125.0)
    remote = TaskDemand(cpu_s=1.0, network_mb=125.0)
    assert run_alone(CAP, remote) == pytest.approx(3.0 + 1.0 + 0.5)  # 125 MB at 125 MB/s + CPU
    assert run_alone(CAP, local) == pytest.approx(3.0 + 0.5 + 2.5)


def test_the_nic_is_full_duplex_sends_share_its_transmit_side_only() -> None:
    """A node sending 125 MB while it receives 125 MB takes 1 s for each (125 MB/s each way); two sends share
    the transmit side; the bytes sent are counted as node_exporter's transmit counter."""

    def run(*demands: TaskDemand) -> tuple[list[float], NodeModel]:
        model = NodeModel("n", replace(CAP, noise_sigma=0.0))
        for i, demand in enumerate(demands):
            model.start(f"t{i}", demand, 0.0)
        while model.running_ids:
            model.advance(model.next_event_s())
        return [o.duration_s for o in sorted(model.pop_finished(), key=lambda o: o.task_id)], model

    send = TaskDemand(transmit_mb=125.0, startup=False)
    receive = TaskDemand(network_mb=125.0, startup=False)
    times, model = run(send, receive)
    assert times == pytest.approx([1.0, 1.0])
    assert model.counters.network_transmit_bytes == pytest.approx(125e6)
    assert model.counters.network_receive_bytes == pytest.approx(125e6)
    assert run(send, send)[0] == pytest.approx([2.0, 2.0])
    assert isolated_duration(CAP, send) == pytest.approx(1.0)
    assert model.runnable() == 0  # a send waits on the NIC, not a core or the disk


def test_noise_is_deterministic_per_seed_node_and_task() -> None:
    assert noise_factor(1, "a", "t", 0.1) == noise_factor(1, "a", "t", 0.1)
    draws = [noise_factor(1, "a", f"t{i}", 0.1) for i in range(2000)]
    assert len(set(draws)) == 2000
    logs = [math.log(d) for d in draws]
    mean = sum(logs) / len(logs)
    std = (sum((x - mean) ** 2 for x in logs) / len(logs)) ** 0.5
    assert abs(mean) < 0.01 and std == pytest.approx(0.1, rel=0.1)
    assert noise_factor(2, "a", "t0", 0.1) != draws[0]


def test_noise_is_random_random_gauss_seeded_by_the_hash() -> None:
    """The committed results were drawn with random.Random(blake2b(seed/node/task)).gauss(0, σ); the unrolled
    draw must give the very same factors, or every result would silently change."""
    import hashlib
    import random

    for i in range(500):
        seed, node, task = i % 5, f"node-{i % 37}", f"job-{i}/map/{i % 11}#1"
        digest = hashlib.blake2b(f"{seed}/{node}/{task}".encode(), digest_size=8).digest()
        expected = math.exp(random.Random(int.from_bytes(digest, "big")).gauss(0.0, 0.05))
        assert noise_factor(seed, node, task, 0.05) == expected


def test_usage_and_counters_account_for_the_work_done() -> None:
    model = NodeModel("n", CAP)
    model.start("t", TaskDemand(cpu_s=4.0, read_mb=30.0, write_mb=20.0, memory_mb=100), 0.0)
    run_all_outcomes = []
    while model.running_ids:
        model.advance(model.next_event_s())
    run_all_outcomes = model.pop_finished()
    usage = run_all_outcomes[0].usage
    assert usage.read_bytes == pytest.approx(30e6, abs=2) and usage.written_bytes == pytest.approx(
        20e6, abs=2
    )
    assert usage.cpu_s == pytest.approx(4.0 / 2.0 + 0.5 * 3.0)  # CPU phase on one core + half the overhead
    assert model.counters.disk_read_bytes == pytest.approx(30e6)
    assert model.counters.cpu_busy_s == pytest.approx(2.0)


def test_time_only_moves_forward() -> None:
    model = NodeModel("n", CAP)
    model.advance(5.0)
    with pytest.raises(ValueError, match="forward"):
        model.advance(1.0)
    with pytest.raises(ValueError, match="positive"):
        NodeCapability(cores=1, memory_mb=1, cpu_rate=0.0)


def test_a_task_with_almost_no_work_finishes_instead_of_stalling_the_clock() -> None:
    """A trace job scaled down to a few bytes leaves float residue smaller than the clock can move."""
    model = NodeModel("n", CAP)
    model.advance(33_689.0)
    model.start("tiny", TaskDemand(read_mb=1e-12), 33_689.0)
    model.advance(33_689.0 + CAP.overhead_s)  # its disk phase lasts 2e-14 s: less than the clock's resolution
    (done,) = model.pop_finished()
    assert done.task_id == "tiny" and not model.running_ids
    assert model.next_event_s() == math.inf


def test_a_sleeping_task_is_not_runnable_and_sleeps_in_parallel() -> None:
    """The wait phase (seed 000's URLGet server replies and deliberate delays): wall time only, no core, no
    disk, no load; any number of sleepers sleep at once."""
    sleepy = TaskDemand(cpu_s=4.0, wait_s=20.0)  # alone: 3 s overhead + 20 s asleep + 4/2 s of CPU
    assert run_alone(CAP, sleepy) == pytest.approx(isolated_duration(CAP, sleepy)) == pytest.approx(25.0)
    model = NodeModel("n", CAP)
    for i in range(8):  # twice the cores
        model.start(str(i), sleepy, 0.0)
    model.advance(10.0)  # all past their 3 s overhead, all asleep
    assert model.runnable() == 0.0
    busy_before = model.counters.cpu_busy_s
    model.advance(20.0)
    assert model.counters.cpu_busy_s == pytest.approx(busy_before)  # sleeping burns no CPU
    # They wake together at 23 s and share 4 cores: 8 × 4 reference-s at rate 2 on 4 cores is 4 s, times the
    # over-subscription cost 1 + 0.2·(8 − 4)/4 = 1.2.
    assert sorted(run_all(model).values()) == pytest.approx([23.0 + 4.0 * 1.2] * 8)


# --- start-up that costs CPU (issue 19; the default since issue 49, each class its share) --------------------


def _startups(cap: NodeCapability, tasks: int) -> tuple[dict[str, float], list[float]]:
    model = NodeModel("n", cap)
    for i in range(tasks):
        model.start(f"t{i}", TaskDemand(), 0.0)  # nothing but start-up
    outcomes = []
    while model.running_ids:
        model.advance(model.next_event_s())
        outcomes += model.pop_finished()
    return {o.task_id: o.duration_s for o in outcomes}, [o.usage.cpu_s for o in outcomes]


def test_startup_is_a_free_parallel_delay_unless_it_uses_cpu() -> None:
    durations, _ = _startups(CAP, 8)
    assert list(durations.values()) == [pytest.approx(3.0)] * 8  # 8 start-ups on 4 cores: each still Ω
    on = replace(CAP, overhead_cpu_share=1.0)
    durations, cpu = _startups(on, 8)
    # 8 consumers on 4 cores: half a core each, over-subscription cost 1 + 0.2 * (8 - 4) / 4 = 1.2.
    assert list(durations.values()) == [pytest.approx(3.0 * 2 * 1.2)] * 8
    assert cpu == [pytest.approx(3.0 * 1.2)] * 8  # a core's worth of Ω each, stretched by the cost
    durations, cpu = _startups(on, 1)
    assert durations == {"t0": pytest.approx(3.0)} and cpu == [pytest.approx(3.0)]  # alone: Ω, all CPU


def test_a_startup_partly_on_the_cpu_shares_the_cores_by_its_share() -> None:
    half = replace(CAP, overhead_cpu_share=0.5)
    durations, _ = _startups(half, 8)  # 8 half-consumers on 4 cores: a core each, Ω as alone
    assert list(durations.values()) == [pytest.approx(3.0)] * 8
    durations, _ = _startups(
        half, 16
    )  # 8 consumers: half a core each at cost 1.2, the CPU half stretched 2.4x
    assert list(durations.values()) == [pytest.approx(3.0 * (0.5 + 0.5 * 2.4))] * 16
    demand = TaskDemand(cpu_s=8.0)
    assert predicted_duration(half, demand, 7) == pytest.approx(3.0 * (0.5 + 0.5 * 2.4) + 4.0 * 2.4)
    with pytest.raises(ValueError, match="share of the start-up"):
        replace(CAP, overhead_cpu_share=1.5)


def test_an_ssd_class_has_no_seek_thrashing_and_a_scenario_may_mark_a_class_so() -> None:
    from mrsched.simulator.scenario import ClusterSpec

    assert node_class("large").capability().disk_contention == 0.0  # the catalog's SSD box
    assert node_class("small").capability().disk_contention == 0.1  # a hard disk
    cluster = ClusterSpec.model_validate(
        {"nodes": [{"class": "small"}, {"class": "medium"}], "storageByClass": {"small": "ssd"}}
    )
    assert cluster.node_class(node_class("small")).capability().disk_contention == 0.0
    assert cluster.node_class(node_class("medium")) == node_class("medium")
    streams = [TaskDemand(read_mb=100.0)] * 4
    ssd = cluster.node_class(node_class("small")).capability()
    hdd = node_class("small").capability()
    assert max(run_together(replace(ssd, noise_sigma=0.0), streams).values()) < max(
        run_together(replace(hdd, noise_sigma=0.0), streams).values()
    )
    with pytest.raises(ValueError, match="storageByClass names large"):
        ClusterSpec.model_validate({"nodes": [{"class": "small"}], "storageByClass": {"large": "ssd"}})


def test_startup_on_cpu_slows_the_cpu_work_beside_it() -> None:
    one_core = replace(CAP, cores=1, overhead_s=2.0, overhead_cpu_share=1.0)
    model = NodeModel("n", one_core)
    model.start("busy", TaskDemand(cpu_s=20.0), 0.0)  # Ω 2 s alone, then 10 s of CPU at κc = 2
    model.advance(2.0)
    model.start("starting", TaskDemand(), 2.0)  # its 2 s of start-up take half the core from "busy"
    durations = run_all(model)
    assert durations["busy"] > 12.0 + 1.0  # it lost about the start-up's core time
    free = replace(one_core, overhead_cpu_share=0.0)
    model = NodeModel("n", free)
    model.start("busy", TaskDemand(cpu_s=20.0), 0.0)
    model.advance(2.0)
    model.start("starting", TaskDemand(), 2.0)
    assert run_all(model)["busy"] == pytest.approx(12.0)  # a free start-up takes nothing from it


def test_predicted_duration_charges_startup_the_cpu_stretch() -> None:
    on = replace(CAP, overhead_cpu_share=1.0)
    demand = TaskDemand(cpu_s=8.0)
    alone = predicted_duration(on, demand, 0)
    assert alone == pytest.approx(run_alone(on, demand)) == pytest.approx(3.0 + 4.0)
    # 8 tasks on 4 cores: everything on the CPU, start-up included, is stretched by 2 x 1.2.
    assert predicted_duration(on, demand, 7) == pytest.approx((3.0 + 4.0) * 2.4)
    assert predicted_duration(CAP, demand, 7) == pytest.approx(3.0 + 4.0 * 2.4)


def test_a_task_of_several_threads_uses_that_many_cores_alone() -> None:
    demand = TaskDemand(cpu_s=16.0, threads=2)  # 8 s on one core at κc = 2, 4 s on two
    assert run_alone(CAP, demand) == pytest.approx(3.0 + 4.0) == pytest.approx(isolated_duration(CAP, demand))
    many = TaskDemand(cpu_s=16.0, threads=8)  # more threads than the node's 4 cores: 4 cores and the cost of
    # 8 consumers on them, 1 + 0.2 * 4 / 4 = 1.2
    assert (
        run_alone(CAP, many) == pytest.approx(3.0 + 2.0 * 1.2) == pytest.approx(isolated_duration(CAP, many))
    )
    assert predicted_duration(CAP, demand, 0) == pytest.approx(run_alone(CAP, demand))


def test_threads_compete_for_cores_as_consumers_and_count_in_the_load() -> None:
    model = NodeModel("n", replace(CAP, overhead_s=0.0))
    model.start("two", TaskDemand(cpu_s=16.0, threads=2), 0.0)
    model.start("one-a", TaskDemand(cpu_s=16.0), 0.0)
    model.start("one-b", TaskDemand(cpu_s=16.0), 0.0)
    assert model.runnable() == 4  # 2 + 1 + 1 runnable threads: the load average sees the JVM's threads
    model.start("one-c", TaskDemand(cpu_s=16.0), 0.0)
    # 5 threads on 4 cores: 0.8 of a core each, cost 1 + 0.2 * 1 / 4 = 1.05; the two-thread task gets 2 shares.
    share = 0.8 / 1.05
    durations = run_all(model)
    assert durations["two"] == pytest.approx(16.0 / (2.0 * 2 * share))
    assert durations["one-a"] > durations["two"]


def test_each_thread_is_charged_the_core_time_it_holds() -> None:
    model = NodeModel("n", replace(CAP, overhead_s=0.0))
    model.start("two", TaskDemand(cpu_s=16.0, threads=2), 0.0)
    model.advance(model.next_event_s())
    (outcome,) = model.pop_finished()
    assert outcome.duration_s == pytest.approx(4.0)
    assert outcome.usage.cpu_s == pytest.approx(8.0)  # two cores for 4 s: what rusage would report


def test_predicted_duration_counts_every_thread_of_every_task() -> None:
    demand = TaskDemand(cpu_s=16.0, threads=2)
    # 4 such tasks are 8 threads on 4 cores: each thread half a core, cost 1.2; alone 4 s of CPU on 2 cores.
    assert predicted_duration(CAP, demand, 3) == pytest.approx(3.0 + 4.0 * 2 * 1.2)
    one = TaskDemand(cpu_s=16.0)
    assert predicted_duration(CAP, replace(one, threads=1), 7) == predicted_duration(CAP, one, 7)


def test_a_replayed_container_skips_the_nodes_startup() -> None:
    demand = TaskDemand(cpu_s=10.0, startup=False)
    assert run_alone(CAP, demand) == pytest.approx(5.0) == pytest.approx(isolated_duration(CAP, demand))
    assert predicted_duration(CAP, demand, 0) == pytest.approx(5.0)
    assert run_alone(CAP, TaskDemand(startup=False)) == 0.0


def test_a_transfer_given_more_bytes_ends_that_much_later() -> None:
    cap = replace(CAP, overhead_s=0.0)
    model = NodeModel("n", cap)
    model.start("fetch", TaskDemand(network_mb=125.0, startup=False), 0.0)  # 1 s at 125 MB/s
    assert model.next_event_s() == pytest.approx(1.0)
    assert model.add_network("fetch", 250.0, 0.5)  # half done, then 2 s more to move
    assert run_all(model)["fetch"] == pytest.approx(3.0)
    model.start("cpu", TaskDemand(cpu_s=2.0), 5.0)
    assert not model.add_network("cpu", 10.0, 5.0)  # not in its network phase
    assert not model.add_network("gone", 10.0, 5.0)
