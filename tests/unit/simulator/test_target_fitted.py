"""Which target-fitted constants a scenario's results rest on (issue 19, mrsched.simulator.fitted): its own
flagged sources and those of the node classes and applications it uses; results.json records them as
``targetFitted``, a report lists them under its headline, and a verdict over them is never "met"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mrsched.simulator import fitted
from mrsched.simulator.report import markdown
from mrsched.simulator.run import run_scenario
from mrsched.simulator.scenario import Scenario, ScenarioError, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "bench" / "scenarios"
CPU_RATE = "node class yao-m1large: physics.cpuRate"
WAIT = "application wordcountdelay: map.waitSPerMB"


def _flags(name: str) -> dict[str, str]:
    return fitted.target_fitted_constants(load_scenario(SCENARIOS / f"{name}.yaml"))


def test_yao_rests_on_its_node_class_cpu_rate() -> None:
    flags = _flags("yao-four-users")
    assert list(flags) == [CPU_RATE]
    assert flags[CPU_RATE].startswith("target-fitted:")
    assert list(_flags("yao-four-users-variable")) == [CPU_RATE]


def test_tan_rests_on_nothing() -> None:
    assert _flags("tan-22-jobs") == {}
    assert _flags("elkholy-four-jobs") == {}


def test_the_listed_scenarios_name_their_own_and_their_catalogs_flags() -> None:
    assert list(_flags("dhok-job-mix")) == [WAIT]
    assert list(_flags("dara-wl4")) == ["scenario dara-wl4: policyOptions.dara.alphas"]
    assert list(_flags("gupta-ch5-detect-cpu-hog")) == [
        "scenario gupta-ch5-detect-cpu-hog: cluster.faults.intensity"
    ]
    assert list(_flags("gupta-ch6-core-shutdown")) == [
        "scenario gupta-ch6-core-shutdown: cluster.faults.intensity",
        "scenario gupta-ch6-core-shutdown: policyOptions.dara.alphas",
        "scenario gupta-ch6-core-shutdown: policyOptions.diagnosis.alphas",
        "scenario gupta-ch6-core-shutdown: policyOptions.diagnosis:frozen.alphas",
    ]


SYNTHETIC: dict[str, Any] = {
    "name": "synthetic",
    "source": "test",
    "headline": "test",
    "sources": {
        "cluster.heartbeatS": "target-fitted: raised until the headline held",
        "cluster.nodes": "paper: a table",
    },
    "cluster": {"nodes": [{"class": "gupta-new", "count": 2}], "heartbeatS": 4},
    "workload": {
        "jobs": [
            {"app": "pi", "maps": 2},
            {"app": "wordcountdelay", "maps": 2},
            {"app": "wordcountdelay", "maps": 3},  # one application, named once
        ],
        "trace": {"format": "swim", "path": "none.tsv", "app": "wordcount"},
    },
    "policies": ["fifo", "fifo:small"],
    # A node class only a policy entry's cluster uses: its results rest on it too.
    "clusterOverrides": {"fifo:small": {"nodes": [{"class": "yao-m1large", "count": 1}]}},
}


def test_a_synthetic_scenario_lists_its_own_its_node_classes_and_its_applications() -> None:
    flags = fitted.target_fitted_constants(Scenario.model_validate(SYNTHETIC))
    assert list(flags) == ["scenario synthetic: cluster.heartbeatS", CPU_RATE, WAIT]
    assert flags["scenario synthetic: cluster.heartbeatS"] == "target-fitted: raised until the headline held"
    clean = {
        **SYNTHETIC,
        "sources": {"cluster": "paper: a table"},
        "clusterOverrides": {},
        "policies": ["fifo"],
    }
    clean["workload"] = {
        "jobs": [{"app": "pi"}],
        "trace": {"format": "swim", "path": "x", "app": "wordcountdelay"},
    }
    assert list(fitted.target_fitted_constants(Scenario.model_validate(clean))) == [WAIT]  # the trace's app


def test_recorded_reads_the_key_else_the_scenario_file(tmp_path: Path) -> None:
    assert fitted.recorded({"scenario": "yao-four-users", "targetFitted": {}}, SCENARIOS) == {}
    assert list(fitted.recorded({"scenario": "yao-four-users"}, SCENARIOS)) == [CPU_RATE]
    (tmp_path / "synthetic.yaml").write_text(yaml.safe_dump(SYNTHETIC))
    assert len(fitted.recorded({"scenario": "synthetic"}, tmp_path)) == 3
    with pytest.raises(ScenarioError, match="targetFitted"):
        fitted.recorded({"scenario": "no-such-scenario"}, tmp_path)


def test_merge_names_a_shared_scenario_constant_once() -> None:
    alphas = "target-fitted: Table 4.2"
    merged = fitted.merge(
        *({f"scenario dara-wl{n}: policyOptions.dara.alphas": alphas} for n in (1, 2, 3, 5)),
        {CPU_RATE: "target-fitted: queues"},
        {CPU_RATE: "target-fitted: queues"},
    )
    key = "scenarios dara-wl1, dara-wl2, dara-wl3, dara-wl5: policyOptions.dara.alphas"
    assert merged == {key: alphas, CPU_RATE: "target-fitted: queues"}
    assert fitted.merge(merged, {"scenario dara-wl6: policyOptions.dara.alphas": alphas}) == {
        key.replace("wl5:", "wl5, dara-wl6:"): alphas,
        CPU_RATE: "target-fitted: queues",
    }
    assert (
        fitted.names(merged)
        == f"scenarios dara-wl1 to dara-wl3, dara-wl5: policyOptions.dara.alphas; {CPU_RATE}"
    )
    assert fitted.merge() == {}


def test_a_met_verdict_over_flags_is_not_claimed() -> None:
    flags = {CPU_RATE: "target-fitted: queues"}
    assert fitted.claim("met", flags) == f"not claimed: rests on target-fitted {CPU_RATE}"
    assert fitted.claim("met where run (5 not run)", flags).startswith("not claimed: ")
    assert fitted.claim("not met", flags) == f"not met; rests on target-fitted {CPU_RATE}"
    assert (
        fitted.claim("missed by 3.1 points", flags)
        == f"missed by 3.1 points; rests on target-fitted {CPU_RATE}"
    )
    assert fitted.claim("-", flags) == "-" and fitted.claim("", flags) == ""
    assert fitted.claim("met", {}) == "met"


def _summary(**extra: Any) -> dict[str, Any]:
    policy = {
        "makespan_s": 100.0,
        "mean_job_time_s": 50.0,
        "p50_job_time_s": 50.0,
        "p95_job_time_s": 90.0,
        "mean_starvation_s": 0.0,
        "locality": {"node": 1.0},
        "failed_jobs": 0,
    }
    return {
        "scenario": "hand-made",
        "source": "test",
        "headline": "the headline",
        "mode": "hadoop",
        "seeds": [1],
        "lower_bound": {"makespan_s": 80.0, "work_bound_s": 80.0, "critical_path_s": 10.0},
        "policies": {"fifo": policy},
        **extra,
    }


def test_the_report_lists_the_flags_under_the_headline() -> None:
    lines = markdown(_summary(targetFitted={CPU_RATE: "target-fitted: queues"})).splitlines()
    at = lines.index("Headline to reproduce: the headline")
    assert lines[at + 2].startswith("Rests on target-fitted constants:")
    assert f"* {CPU_RATE}: target-fitted: queues" in lines[at + 2 :]
    assert "target-fitted" not in markdown(_summary(targetFitted={}))
    assert "not recorded" in markdown(_summary())  # a results.json written before the key: no crash


def test_results_json_records_the_flags() -> None:
    tiny = {
        "name": "tiny",
        "source": "test",
        "headline": "test",
        "cluster": {"nodes": [{"class": "yao-m1large", "count": 1}]},
        "workload": {"jobs": [{"app": "pi", "maps": 1, "reduces": 0, "inputMBPerMap": 0}]},
        "policies": ["fifo"],
    }
    summary, _ = run_scenario(Scenario.model_validate(tiny))
    assert list(summary["targetFitted"]) == [CPU_RATE]
    assert json.loads(json.dumps(summary))["targetFitted"] == summary["targetFitted"]
