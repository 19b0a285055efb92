"""The simulator's soft-fault detection metrics (mrsched.simulator.detection): detection delay, suspected
resource and false alarms on hand-made verdict timelines, and a small run in which the health monitor flags the
CPU-hogged node, for cpu, and no other node."""

from __future__ import annotations

from typing import Any

import pytest

from mrsched.simulator.detection import (
    Verdict,
    degraded_spans,
    false_alarms,
    fault_detection,
    summarise_detection,
)
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import FaultSpec, Scenario


def _fault(
    node: str = "n1", kind: str = "cpu-hog", start: float = 600.0, end: float | None = None
) -> FaultSpec:
    return FaultSpec.model_validate({"node": node, "kind": kind, "startS": start, "endS": end})


def test_degraded_spans_follow_the_verdict_changes() -> None:
    changes = [Verdict(100, ("cpu",)), Verdict(150, ()), Verdict(700, ("cpu", "disk"))]
    assert degraded_spans(changes, 1000) == [(100, 150, ("cpu",)), (700, 1000, ("cpu", "disk"))]
    assert degraded_spans([], 1000) == []


def test_detection_delay_is_the_first_degraded_verdict_after_the_start() -> None:
    # Healthy, a short false alarm before the fault, then the right verdict 95 s after it starts.
    changes = [Verdict(300, ("disk",)), Verdict(320, ()), Verdict(695, ("cpu",))]
    got = fault_detection(_fault(), changes, 1000)
    assert got["detected"] and got["delay_s"] == pytest.approx(95)
    assert got["suspected"] == ["cpu"] and got["resource_right"]
    assert got["right_resource_delay_s"] == pytest.approx(95)
    assert got["degraded_fraction"] == pytest.approx(305 / 400)


def test_a_verdict_standing_at_the_fault_start_counts_from_the_start_and_a_wrong_resource_is_named() -> None:
    changes = [Verdict(550, ("disk",)), Verdict(800, ("cpu", "disk"))]
    got = fault_detection(_fault(), changes, 1000)
    assert got["delay_s"] == 0.0 and got["suspected"] == ["disk"] and not got["resource_right"]
    assert got["right_resource_delay_s"] == pytest.approx(200)  # cpu joins the verdict at 800 s
    disk = fault_detection(_fault(kind="disk-hog"), changes, 1000)
    assert disk["resource_right"] and disk["expected"] == "disk"
    assert fault_detection(_fault(kind="lost-cores"), changes, 1000)["expected"] == "cpu"


def test_a_fault_never_flagged_while_active_is_missed() -> None:
    # Flagged only after the fault ended: a miss, not a late detection.
    changes = [Verdict(900, ("cpu",))]
    got = fault_detection(_fault(end=800), changes, 1000)
    assert not got["detected"] and got["delay_s"] is None and got["suspected"] == []
    assert got["degraded_fraction"] == 0.0
    assert fault_detection(_fault(), [], 1000)["delay_s"] is None


def test_false_alarms_count_onsets_and_node_seconds_outside_fault_windows() -> None:
    timelines = {
        "n1": [Verdict(300, ("cpu",)), Verdict(320, ()), Verdict(650, ("cpu",)), Verdict(900, ())],
        "n2": [Verdict(100, ("disk",)), Verdict(130, ("cpu", "disk")), Verdict(200, ())],  # one onset
        "n3": [],
    }
    got = false_alarms(timelines, [_fault(end=800)], 1000)
    # n1: the onset at 300 s (before its fault) counts, the one at 650 s (during it) does not; it stays
    # Degraded 100 s past the fault's end. n2 has no fault: one onset (the change at 130 s is no new onset).
    assert got["count"] == 2
    assert [(o["node"], o["t"]) for o in got["onsets"]] == [("n1", 300), ("n2", 100)]
    assert got["by_node_s"] == {"n1": pytest.approx(20 + 100), "n2": pytest.approx(100)}
    assert got["node_s"] == pytest.approx(220)
    assert false_alarms({"n1": [Verdict(650, ("cpu",))]}, [_fault()], 1000)["count"] == 0


def test_summary_over_seeds_keeps_misses_apart_from_delays() -> None:
    fault = _fault()
    runs: list[dict[str, Any]] = []
    for changes in ([Verdict(660, ("cpu",))], [Verdict(720, ("disk",))], []):
        runs.append(
            {
                "faults": [fault_detection(fault, changes, 1000)],
                "false_alarms": false_alarms({"n1": changes, "n2": [Verdict(10, ("cpu",))]}, [fault], 1000),
                "throughput": [],
            }
        )
    summary = summarise_detection(runs)
    (f,) = summary["faults"]
    assert f["detected_seeds"] == 2 and f["seeds"] == 3
    assert f["mean_delay_s"] == pytest.approx(90)  # (60 + 120) / 2; the miss is not a zero
    assert f["delays_s"] == [pytest.approx(60), pytest.approx(120), None]
    assert f["resource_right_seeds"] == 1 and f["suspected"] == ["cpu", "disk", "-"]
    assert summary["false_alarms_total"] == 3 and summary["false_alarms_mean"] == 1.0
    assert summary["false_alarm_node_s_mean"] == pytest.approx(990)


# A small Table 5.1-like cluster: three identical fast nodes and one old one; a CPU hog on new-1 from 300 s, and
# a stream of CPU-heavy (Pi) and disk-heavy (TestDFSIO) jobs across it. Three busy loops per core: with two map
# slots on eight cores, one loop per core stretches a task's CPU phase only 1.25x (10 consumers on 8 cores),
# below the detector's 1.5x threshold; three stretch it 3.25x.
SMALL: dict[str, Any] = {
    "name": "detect-small",
    "source": "test",
    "headline": "test",
    "cluster": {
        "nodes": [
            {"class": "gupta-ch5-new", "count": 3, "rack": "r1"},
            {"class": "gupta-ch5-old", "count": 1, "rack": "r1"},
        ],
        "faults": [{"node": "gupta-ch5-new-1", "kind": "cpu-hog", "startS": 300, "intensity": 3.0}],
    },
    "workload": {
        "jobs": [
            {
                "id": "pi",
                "app": "pi",
                "maps": 16,
                "reduces": 1,
                "inputMBPerMap": 0,
                "repeat": 20,
                "everyS": 60,
            },
            {
                "id": "dfsio",
                "app": "testdfsio",
                "submitS": 30,
                "maps": 8,
                "reduces": 0,
                "inputMBPerMap": 0,
                "repeat": 20,
                "everyS": 60,
            },
        ]
    },
    "monitor": {"enabled": True, "windowS": 60},
    "policies": ["fair"],
    "seeds": [1],
}


def test_the_monitor_flags_the_hogged_node_for_cpu_and_no_other() -> None:
    summary, first = run_scenario(Scenario.model_validate(SMALL))
    detection = summary["policies"]["fair"]["detection"]
    (fault,) = detection["faults"]
    assert fault["detected_seeds"] == 1 and fault["suspected"] == ["cpu"]
    assert fault["delays_s"][0] is not None and 0 <= fault["delays_s"][0] < 600
    assert detection["false_alarms_total"] == 0 and detection["false_alarm_node_s_mean"] == 0
    run = first["fair"].extra["detection"]
    assert set(run["timeline"]) == {"gupta-ch5-new-1"}  # no other node's verdict ever changed
    assert "cpu" in run["final"]["gupta-ch5-new-1"]["degraded"]
    # Every successful map was observed, and counted in its node's throughput windows.
    assert run["observations"] == 20 * (16 + 8)
    assert sum(sum(s["maps_per_min"]) for s in run["series"].values()) == pytest.approx(20 * 24)


def test_the_monitor_is_off_unless_enabled() -> None:
    off = {**SMALL, "monitor": {"enabled": False}}
    summary, first = run_scenario(Scenario.model_validate(off))
    assert "detection" not in summary["policies"]["fair"]
    assert "detection" not in first["fair"].extra
