"""mrsched's own policy (mrsched.policies.mrsched) on hand-built rounds by requests: shortest remaining work first
with ageing, each task to the node that finishes it soonest by seed 002 ch.3's model (Eq 3.2) with θ learned from
usage, reduces released once the maps are placed, waiting for a faster node only at a phase's end, the health
discount, and the learned θ surviving a restart."""

from __future__ import annotations

import re

import pytest

from mrsched.core.model import UNCAPPED, Attempt, ClusterSnapshot, Job, Node, Resources, Task, TaskOutcome
from mrsched.core.policy import Policy, PolicyConfigError
from mrsched.core.probes import Capability
from mrsched.policies import make_policy

FAST = Capability(4.0, 4.0, 1.0)  # κc, κd, Ω: four times the reference machine, 1 s start-up
SLOW = Capability(1.0, 1.0, 5.0)


def _node(name: str, cores: int, probe: Capability | None = None, **kw: object) -> Node:
    return Node(
        name,
        cores,
        cores * 2048.0,
        map_slots=UNCAPPED,
        reduce_slots=UNCAPPED,
        by_requests=True,
        probe=probe,
        **kw,
    )  # type: ignore[arg-type]


def _job(job_id: str, maps: int, reduces: int = 0, submit: float = 0.0, app: str = "pi") -> Job:
    return Job(
        job_id,
        app,
        submit,
        [Task(job_id, "map", i) for i in range(maps)],
        [Task(job_id, "reduce", i) for i in range(reduces)],
        map_request=Resources(1.0, 1024.0),
        reduce_request=Resources(1.0, 1024.0),
    )


def _snapshot(nodes: list[Node], jobs: list[Job], now: float = 0.0) -> ClusterSnapshot:
    return ClusterSnapshot(now, {n.name: n for n in nodes}, {n.name: [] for n in nodes}, jobs)


def _teach(policy: Policy, job: Job, node: Node, cpu_s: float) -> None:
    """``job``'s one map placed on ``node`` by the policy and finished there, its worker reporting ``cpu_s`` CPU
    seconds and no bytes: what the operator's round and the simulator's engine feed back."""
    (placed,) = policy.schedule_round(_snapshot([node], [job]), [node.name])
    assert placed.node == node.name
    start = 100.0
    omega = (node.probe or Capability(1.0, 1.0, 0.0)).omega_s
    policy.on_task_finished(
        TaskOutcome(placed.task, node.name, start, start + omega + cpu_s, True, cpu_s=cpu_s)
    )


def test_options_are_validated_by_name() -> None:
    assert make_policy("mrsched").cfg.wait_gain == 2.0  # type: ignore[attr-defined]
    with pytest.raises(PolicyConfigError, match="jobOrdr"):
        make_policy("mrsched", {"jobOrdr": "submission"})
    with pytest.raises(PolicyConfigError):
        make_policy("mrsched", {"jobOrder": "random"})


def test_the_job_with_the_least_work_left_goes_first_and_ageing_lets_an_old_large_job_ahead() -> None:
    # One free place: whose map takes it? Both jobs are of an app never seen: 10 reference seconds a task.
    large, small = _job("large", 10, submit=0.0), _job("small", 2, submit=50.0)
    policy = make_policy("mrsched", {"ageing": 0})
    placed = policy.schedule_round(_snapshot([_node("n", 1)], [large, small], now=60.0), ["n"])
    assert [p.task.job_id for p in placed] == ["small"]
    assert "shortest work first" in placed[0].explanation.reason
    # Ageing 1: large's key is 100 - 60 = 40 s, small's 20 - 10 = 10 s: small still first ...
    large, small = _job("large", 10, submit=0.0), _job("small", 2, submit=50.0)
    placed = make_policy("mrsched").schedule_round(
        _snapshot([_node("n", 1)], [large, small], now=60.0), ["n"]
    )
    assert [p.task.job_id for p in placed] == ["small"]
    # ... until large has waited 80 s longer than its extra 80 s of work: at 200 s, 100 - 200 < 20 - 150.
    large, small = _job("large", 10, submit=0.0), _job("small", 2, submit=150.0)
    placed = make_policy("mrsched").schedule_round(
        _snapshot([_node("n", 1)], [large, small], now=200.0), ["n"]
    )
    assert [p.task.job_id for p in placed] == ["large"]
    # jobOrder: submission is FIFO whatever the work.
    large, small = _job("large", 10, submit=0.0), _job("small", 2, submit=50.0)
    fifo = make_policy("mrsched", {"jobOrder": "submission"})
    placed = fifo.schedule_round(_snapshot([_node("n", 1)], [large, small], now=60.0), ["n"])
    assert [p.task.job_id for p in placed] == ["large"]


def test_work_is_learned_per_application_and_orders_the_next_jobs() -> None:
    # pi's maps were measured at 40 CPU-s on the reference machine, grep's at 2: a grep job of 10 maps (20 s) goes
    # before a pi job of 2 maps (80 s), which a count of tasks would order the other way.
    policy = make_policy("mrsched", {"ageing": 0})
    ref = _node("ref", 1)
    _teach(policy, _job("old-pi", 1, app="pi"), ref, 40.0)
    _teach(policy, _job("old-grep", 1, app="grep"), ref, 2.0)
    pi, grep = _job("pi", 2, app="pi"), _job("grep", 10, app="grep")
    placed = policy.schedule_round(_snapshot([_node("n", 1)], [pi, grep]), ["n"])
    assert [p.task.job_id for p in placed] == ["grep"]


def test_each_task_goes_to_the_node_that_finishes_it_soonest_by_the_probed_model() -> None:
    # θc = 20 reference CPU-s: 1 + 20/4 = 6 s on fast, 5 + 20 = 25 s on slow. With two maps and one core each,
    # the second map sees fast busy (CPU stretched x2: 1 + 10 = 11 s), still sooner than slow's 25 s, until fast's
    # load makes it later: four maps on a 1-core fast node would take 1 + 5*4 = 21 s, the fifth 26 s.
    policy = make_policy("mrsched")
    fast, slow = _node("fast", 4, FAST), _node("slow", 4, SLOW)
    _teach(policy, _job("seen", 1), fast, 5.0)  # 5 CPU-s at κc 4: θc = 20
    job = _job("pi", 1)
    placed = policy.schedule_round(_snapshot([slow, fast], [job]), ["slow", "fast"])
    assert [(p.task.index, p.node) for p in placed] == [(0, "fast")]
    assert placed[0].explanation.score == pytest.approx(-6.0)
    # The slow node is not even the runner-up: its 25 s is over 1.2x the 6 s the job's one map takes on fast, so
    # PhaseEnd keeps the map off it; with PhaseEnd off it is.
    assert placed[0].explanation.runner_up is None
    off = make_policy("mrsched", {"phaseEndGain": 1})
    _teach(off, _job("seen", 1), fast, 5.0)
    placed = off.schedule_round(_snapshot([slow, fast], [_job("pi", 1)]), ["slow", "fast"])
    assert placed[0].explanation.runner_up == "slow"
    # Speed-blind (the ablation): every node is the reference machine, so the first offered empty node wins.
    blind = make_policy("mrsched", {"speedAware": False})
    _teach(blind, _job("seen", 1), fast, 5.0)
    placed = blind.schedule_round(_snapshot([slow, fast], [_job("pi", 1)]), ["slow", "fast"])
    assert [p.node for p in placed] == ["slow"]


def test_a_node_judged_degraded_has_its_speed_discounted() -> None:
    # The fast node slowed 8x on CPU by the health monitor (ch.5): 1 + 20/(4/8) = 41 s, slower than slow's 25 s.
    policy = make_policy("mrsched")
    fast = _node("fast", 4, FAST)
    _teach(policy, _job("seen", 1), fast, 5.0)
    degraded = _node("fast", 4, FAST, slowdown=(8.0, 1.0))
    placed = policy.schedule_round(
        _snapshot([degraded, _node("slow", 4, SLOW)], [_job("pi", 1)]), ["fast", "slow"]
    )
    assert [p.node for p in placed] == ["slow"]


def test_a_place_one_job_declines_goes_to_the_next_job_and_none_idles_while_it_has_a_use() -> None:
    # Default 10-s tasks (nothing learned): 3.5 s on fast (4 places), 15 s on slow (2 places).
    jobs = [_job("a", 5, reduces=1), _job("b", 40)]
    nodes = [_node("fast", 4, FAST), _node("slow", 2, SLOW)]
    placed = make_policy("mrsched").schedule_round(_snapshot(nodes, jobs), ["fast", "slow"])
    # a first (least work), on fast. Its fifth map would end on slow in 15 s, while fast does it in about 4.4 s:
    # PhaseEnd keeps it off slow, and slow's two places go to b, whose 40 maps keep fast busy far longer.
    assert sorted((p.task.job_id, p.node) for p in placed) == [("a", "fast")] * 4 + [("b", "slow")] * 2
    assert not any(
        p.task.kind == "reduce" for p in placed
    )  # a's fifth map waits, so its reduce is not released
    # When no job has a use for slow that beats fast, slow idles: b of 7 maps finishes sooner on fast alone.
    jobs = [_job("a", 5, reduces=1), _job("b", 7)]
    placed = make_policy("mrsched").schedule_round(_snapshot(nodes, jobs), ["fast", "slow"])
    assert [p.node for p in placed] == ["fast"] * 4
    # PhaseEnd off (the ablation): every free place takes a task.
    placed = make_policy("mrsched", {"phaseEndGain": 1}).schedule_round(
        _snapshot(nodes, jobs), ["fast", "slow"]
    )
    assert len(placed) == 6


def test_reduces_are_released_once_every_map_is_placed_not_by_slow_start() -> None:
    # Two maps and a reduce on three free places: the maps start, so the reduce may take the third place at once.
    nodes = [_node("n", 3)]
    placed = make_policy("mrsched").schedule_round(_snapshot(nodes, [_job("j", 2, reduces=1)]), ["n"])
    assert sorted(p.task.kind for p in placed) == ["map", "map", "reduce"]
    # While a map waits for a place, the reduce holds none (it would only wait for that map's output).
    placed = make_policy("mrsched").schedule_round(_snapshot(nodes, [_job("j", 4, reduces=1)]), ["n"])
    assert [p.task.kind for p in placed] == ["map", "map", "map"]
    # reduceRelease: slowstart is Hadoop's rule: 5 % of the maps finished, none yet.
    slowstart = make_policy("mrsched", {"reduceRelease": "slowstart"})
    placed = slowstart.schedule_round(_snapshot(nodes, [_job("j", 2, reduces=1)]), ["n"])
    assert [p.task.kind for p in placed] == ["map", "map"]


def _busy_fast_cluster(running_for: float) -> tuple[ClusterSnapshot, Job]:
    """fast (1 core) runs a map of job ``other`` started ``running_for`` s ago; slow is free; one map of ``tail``
    waits (θc = 20: 6 s on fast alone, 25 s on slow)."""
    fast, slow = _node("fast", 1, FAST), _node("slow", 1, SLOW)
    other, tail = _job("other", 1), _job("tail", 1)
    other.maps[0].running, other.running_maps = True, 1
    snap = ClusterSnapshot(
        10.0,
        {"fast": fast, "slow": slow},
        {"fast": [Attempt(other.maps[0], 0, "fast", 10.0 - running_for)], "slow": []},
        [other, tail],
    )
    return snap, tail


def test_at_a_phase_end_a_task_waits_for_a_busy_node_that_finishes_it_twice_as_soon() -> None:
    policy = make_policy("mrsched")
    _teach(policy, _job("seen", 1), _node("fast", 1, FAST), 5.0)
    # fast frees in 6 - 5 = 1 s and then finishes the map in 6 s: 7 s, against 25 s on slow (3.6x): it waits.
    snap, _ = _busy_fast_cluster(running_for=5.0)
    assert policy.schedule_round(snap, ["fast", "slow"]) == []
    # With waitGain 4 the gain of 3.6x is not clear enough: it starts on slow now.
    patient = make_policy("mrsched", {"waitGain": 4.0, "phaseEndGain": 1})
    _teach(patient, _job("seen", 1), _node("fast", 1, FAST), 5.0)
    snap, _ = _busy_fast_cluster(running_for=5.0)
    assert [p.node for p in patient.schedule_round(snap, ["fast", "slow"])] == ["slow"]


def test_no_task_waits_while_startable_work_exceeds_the_free_places() -> None:
    policy = make_policy("mrsched")
    _teach(policy, _job("seen", 1), _node("fast", 1, FAST), 5.0)
    snap, tail = _busy_fast_cluster(running_for=5.0)
    tail.maps.append(Task("tail", "map", 1))  # two maps waiting, one free place: no reason to hold one back
    placed = policy.schedule_round(snap, ["fast", "slow"])
    assert [(p.task.job_id, p.node) for p in placed] == [("tail", "slow")]


def test_learned_work_survives_a_restart_through_its_state() -> None:
    policy = make_policy("mrsched")
    fast = _node("fast", 4, FAST)
    _teach(policy, _job("seen", 1, app="wordcount"), fast, 5.0)
    state = policy.state()
    # Under the application's name, by kind: the operator writes each app's entry to AppProfile/<app>, so the key
    # must be a name Kubernetes accepts (RFC 1123 subdomain; "wordcount/map" was refused live), and the totals to
    # PolicyProfile/mrsched.
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", app) for app in state["apps"])
    assert state["apps"]["wordcount"]["map"]["tasks"] == 1
    assert state["apps"]["wordcount"]["map"]["cpuS"] == pytest.approx(20.0)
    assert state["policy"] == {"appsLearned": 1, "tasksLearned": 1}
    restarted = make_policy("mrsched")
    restarted.load_state(state)
    assert restarted.state() == state
    nodes = [_node("slow", 4, SLOW), fast]
    placed = restarted.schedule_round(_snapshot(nodes, [_job("next", 1, app="wordcount")]), ["slow", "fast"])
    assert placed[0].explanation.score == pytest.approx(-6.0)  # θc = 20 on κc = 4 with Ω = 1, not the default


def _teach_reduce(policy: Policy, app: str, node: Node, cpu_s: float) -> None:
    """A job of ``app`` with only a reduce, placed by the policy on ``node`` and finished with ``cpu_s`` CPU-s."""
    job = _job(f"seen-{app}-reduce", 0, reduces=1, app=app)
    (placed,) = policy.schedule_round(_snapshot([node], [job]), [node.name])
    assert placed.task.kind == "reduce"
    policy.on_task_finished(TaskOutcome(placed.task, node.name, 100.0, 100.0 + cpu_s, True, cpu_s=cpu_s))


def test_shortest_time_alone_credits_a_long_reduce_that_shortest_work_does_not() -> None:
    # On the reference machine: "tail" maps take 1 s and its reduce 100 s; "wide" maps 10 s. tail (4 maps and the
    # reduce) has 104 s of work, wide (20 maps) 200 s: shortest work runs tail first. On 4 places, though, tail
    # alone still takes 4/4 + 100 = 101 s (a reduce is not divided) and wide 200/4 = 50 s: shortest time runs wide.
    ref = _node("ref", 4)
    firsts = {}
    for order in ("shortest-work", "shortest-time"):
        policy = make_policy("mrsched", {"jobOrder": order, "ageing": 0, "phaseEndGain": 1})
        _teach(policy, _job("seen-tail", 1, app="tail"), ref, 1.0)
        _teach(policy, _job("seen-wide", 1, app="wide"), ref, 10.0)
        _teach_reduce(policy, "tail", ref, 100.0)
        tail, wide = _job("tail", 4, reduces=1, app="tail"), _job("wide", 20, app="wide")
        placed = policy.schedule_round(_snapshot([_node("n", 4)], [tail, wide]), ["n"])
        firsts[order] = {p.task.job_id for p in placed}
        assert order.replace("-", " ").split()[1] in placed[0].explanation.reason
    assert firsts == {"shortest-work": {"tail"}, "shortest-time": {"wide"}}


def test_a_long_reduce_is_released_to_shuffle_beside_the_last_maps_a_short_one_is_not() -> None:
    ref = _node("ref", 3)
    for reduce_s, released in ((100.0, True), (1.0, False)):
        policy = make_policy("mrsched", {"reduceRelease": "shuffle", "reducesFirst": True, "phaseEndGain": 1})
        _teach(policy, _job("seen", 1, app="app"), ref, 1.0)
        _teach_reduce(policy, "app", ref, reduce_s)
        # 5 maps of 1 s on 3 places: 5/3 s of map work left per place, under the 100-s reduce, over the 1-s one.
        placed = policy.schedule_round(
            _snapshot([_node("n", 3)], [_job("j", 5, reduces=1, app="app")]), ["n"]
        )
        kinds = sorted(p.task.kind for p in placed)
        assert kinds == (["map", "map", "reduce"] if released else ["map", "map", "map"])
