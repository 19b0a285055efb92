"""The per-paper summaries (bench/*_summary.py, bench/gupta_ch6_steady.py) on hand-made results.

Like-for-like naming (issue 18): the thesis's vs-Capacity figures are held against the ``fifo`` row where a
scenario has one queue, the policy once named "oracle" is ``greedy-informed``, Tan's Coupling is judged
against both readings of Fair's T, and a policy a scenario did not run gives "-" rather than a crash.

Target-fitted constants (issue 19): a result that rests on one (results.json's ``targetFitted``, else its
scenario file's) is never called "met" by any summary; "not met" names the flags too."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


dara = _module("dara_summary")
tan = _module("tan_summary")
yao = _module("yao_summary")
elkholy = _module("elkholy_summary")
dhok = _module("dhok_summary")


def _policy(makespans: list[float], mean_job: float | None = None, **extra: Any) -> dict[str, Any]:
    job = mean_job if mean_job is not None else statistics.fmean(makespans)
    return {
        "makespan_s": statistics.fmean(makespans),
        "mean_job_time_s": job,
        "per_seed": [{"makespan_s": m, "mean_job_time_s": job} for m in makespans],
        **extra,
    }


def _result(policies: dict[str, dict[str, Any]], mode: str = "hadoop") -> dict[str, Any]:
    seeds = len(next(iter(policies.values()))["per_seed"])
    return {
        "scenario": "hand-made",
        "targetFitted": {},  # results.json's record: rests on no target-fitted constant
        "mode": mode,
        "seeds": list(range(1, seeds + 1)),
        "policies": policies,
    }


# dara_summary ---------------------------------------------------------------------------------------------


def _dara_data() -> dict[int, dict[str, Any]]:
    return {
        1: _result(
            {
                "dara": _policy([100, 100]),
                "fair": _policy([120, 120]),
                "fifo": _policy([150, 130]),
                "greedy-informed": _policy([90, 90]),
            }
        ),
        2: _result({"dara": _policy([200]), "fair": _policy([180])}),  # no fifo, no greedy-informed here
    }


def test_dara_capacity_is_compared_with_the_fifo_row() -> None:
    rows, totals = dara.summarise(_dara_data())
    assert "capacity" not in dara.BASELINES and "fifo" in dara.BASELINES
    assert dara.THESIS["fifo"] == (1.16, 1.50)  # the thesis's vs-Capacity figures
    assert rows[0]["speedup_fifo"] == pytest.approx(1.4)
    assert totals["speedup_fifo"] == pytest.approx(1.4) and totals["count_fifo"] == 1
    text = dara.markdown(rows, totals, dara.modes(_dara_data()))
    assert dara.CAPACITY_NOTE in text
    assert (
        "Capacity with one queue = FIFO: the thesis's vs-Capacity figure is compared with our fifo row"
        in text
    )
    verdicts = {metric: (ours, paper, verdict) for metric, ours, paper, verdict in dara.verdicts(totals)}
    assert verdicts["mean speedup vs Capacity (= FIFO, one queue), 1 workloads"] == ("1.400", "1.16", "met")
    assert verdicts["max speedup vs Capacity (= FIFO, one queue)"][1] == "1.50"


def test_dara_greedy_informed_column_and_missing_policies() -> None:
    data = _dara_data()
    rows, totals = dara.summarise(data)
    text = dara.markdown(rows, totals, dara.modes(data))
    assert "hadoop mode" in text.splitlines()[0]
    assert "| greedy-informed |" in text and "oracle" not in text.lower()
    wl2 = next(line for line in text.splitlines() if line.startswith("| WL2 "))
    cells = [c.strip() for c in wl2.strip("|").split("|")]
    assert cells[4] == "-" and cells[5] == "-"  # fifo and greedy-informed were not run
    assert cells[6] == f"{180 / 200:.3f}"  # speedup vs Fair: a loss
    assert totals["wins_fair"] == 1 and totals["count_fair"] == 2
    verdicts = {metric: verdict for metric, _, _, verdict in dara.verdicts(totals)}
    assert verdicts["workloads DARA speeds up vs Fair"] == "not met"
    assert verdicts["mean DARA / greedy-informed makespan, 1 workloads"] == "met"  # 100 / 90 ≤ 1.15


def test_dara_without_any_baseline_prints_dashes() -> None:
    rows, totals = dara.summarise({3: _result({"dara": _policy([50])})})
    assert totals["speedup_fair"] is None
    assert all(verdict in ("-", "") for _, _, _, verdict in dara.verdicts(totals))
    assert "| WL3 | 1 | 50 | - | - | - |" in dara.markdown(rows, totals, "kubernetes")


# tan_summary ----------------------------------------------------------------------------------------------


def _tan() -> dict[str, Any]:
    extra = {"mean_starvation_s": 0.0, "locality": {"node": 1.0}, "jobs": []}
    return _result(
        {
            "fair": _policy([100], **extra),
            "fair:hadoop-delay": _policy([70], **extra),
            "coupling": _policy([60], **extra),
        }
    )


def test_tan_judges_coupling_against_both_fair_readings() -> None:
    result = _tan()
    got = {(entry, fair): (value, verdict) for entry, fair, value, verdict in tan.verdicts(result, 0.391)}
    assert got[("coupling", "fair")] == (pytest.approx(0.40), "met")
    value, verdict = got[("coupling", "fair:hadoop-delay")]
    assert value == pytest.approx(1 - 60 / 70) and verdict.startswith("missed by")
    assert got[("coupling:spread", "fair")] == (None, "-")  # not run: a dash, no crash
    text = "\n".join(tan.overview(result, 0.391))
    assert "reduction vs Fair, T = 15 s" in text and "reduction vs Fair, T = 4.5 s" in text


def test_tan_without_the_hadoop_delay_reading_gives_dashes() -> None:
    result = _tan()
    del result["policies"]["fair:hadoop-delay"]
    got = {(entry, fair): verdict for entry, fair, _, verdict in tan.verdicts(result, 0.213)}
    assert got[("coupling", "fair:hadoop-delay")] == "-"
    assert got[("coupling", "fair")] == "met"
    tan.overview(result, 0.213)
    assert tan.table_iv(result)  # no per-job records: a note, not a crash


# yao, elkholy, dhok ---------------------------------------------------------------------------------------


def test_yao_factors_and_a_missing_baseline() -> None:
    users = {"mean_job_time_by_user_s": {"user1": 10.0, "user4": 40.0}}
    result = _result(
        {
            "fifo": _policy([350], **users),
            "lsps": _policy([100], **users),
            "capacity": _policy([300], **users),
        }
    )
    rows = {base: (factor, verdict) for base, factor, _, verdict in yao.verdicts(result)}
    assert rows["fifo"] == (pytest.approx(3.5), "met")
    assert rows["fair"] == (None, "-")
    assert "| capacity |" in "\n".join(yao.section(result, "test"))


def test_elkholy_missing_policies_give_dashes() -> None:
    four = _result({"fair": _policy([1000]), "adaptive-slots": _policy([700])})
    lines = "\n".join(elkholy.table_v(four))
    assert "| 3 | - | - | 856 |" in lines and "met where run (5 not run)" in lines
    three = _result({"fair": _policy([950])})
    assert "| 3 | 950 | - | - | 950 | 676 |" in "\n".join(elkholy.table_vi({3: three, 4: four}))
    assert "did not run" in "\n".join(elkholy.table_v(three))


def test_dhok_without_native_prints_dashes() -> None:
    job = {"id": "wordcount", "start_s": 0.0, "finish_s": 100.0, "submit_s": 0.0, "task_s": 700.0}
    learner = _policy([100])
    learner["per_seed"][0]["jobs"] = [job]
    result = _result({"learning": learner})
    assert dhok.per_job(result, "fifo") == {}
    row = next(line for line in dhok.fig_11(result) if line.startswith("| wordcount "))
    assert "| 1.00 | - | - |" in row
    assert any("| - |" in line for line in dhok.fig_8(result))


# gupta_ch6_steady -----------------------------------------------------------------------------------------


def test_gupta_steady_uses_fifo_for_capacity_and_greedy_informed() -> None:
    steady = _module("gupta_ch6_steady")
    assert "capacity" not in steady.OLD and "oracle" not in steady.OLD
    committed = _result(
        {"fifo": _policy([120, 240]), "fair": _policy([110, 220]), "dara": _policy([100, 200])}
    )
    means = steady.committed_means(committed, [2])
    assert means["fifo"] == 240 and means["greedy-informed"] is None
    assert all(v is None for v in steady.committed_means(committed, [3]).values())  # not the same workloads
    row = {"wl": "wl1", "seeds": 1, "flags": {}, "diagnosis": 200.0, "diagnosis:frozen": 210.0, **means}
    assert steady.gain(row, "fifo") == pytest.approx(0.2)
    text = steady.markdown([row], "hadoop")
    assert steady.CAPACITY_NOTE in text and "oracle" not in text.lower()
    assert "| largest gain vs Capacity (= FIFO, one queue) | +20.0% | up to +18 % (§6.2.1) | met |" in text
    assert "| worst diagnosis / greedy-informed | - | aim ≤ 1.2 | - |" in text


# target-fitted constants (issue 19) -----------------------------------------------------------------------

ALPHAS = "scenario dara-wl1: policyOptions.dara.alphas"
CPU_RATE = "node class yao-m1large: physics.cpuRate"


def _never_met(verdicts: list[str]) -> None:
    assert verdicts, "no verdicts to check"
    for verdict in verdicts:
        assert verdict != "met" and not verdict.startswith("met "), verdict


def _flagged(result: dict[str, Any], **flags: str) -> dict[str, Any]:
    return {**result, "targetFitted": {k.replace("__", " "): v for k, v in flags.items()}}


def test_a_flagged_yao_result_is_never_met_even_without_the_key() -> None:
    users: dict[str, Any] = {"mean_job_time_by_user_s": {"user1": 10.0, "user4": 40.0}}
    result = _result(
        {"fifo": _policy([350], **users), "fair": _policy([300], **users), "lsps": _policy([100], **users)}
    )
    result = {k: v for k, v in result.items() if k != "targetFitted"}
    result["scenario"] = "yao-four-users"  # a committed results.json: the flags come from the scenario file
    rows = {base: verdict for base, _, _, verdict in yao.verdicts(result)}
    assert rows["fifo"] == f"not claimed: rests on target-fitted {CPU_RATE}"  # 3.5x: met, were it not flagged
    assert rows["fair"] == f"not claimed: rests on target-fitted {CPU_RATE}"
    text = "\n".join(yao.section(result, "test"))
    assert f"* {CPU_RATE}: target-fitted:" in text
    assert f"no worse than FIFO; not claimed: rests on target-fitted {CPU_RATE})" in text
    _never_met(list(rows.values()))


def test_a_flagged_dara_verdict_is_never_met() -> None:
    data = _dara_data()
    data[1] = {**data[1], "targetFitted": {ALPHAS: "target-fitted: Table 4.2"}}
    rows, totals = dara.summarise(data)
    verdicts = {metric: verdict for metric, _, _, verdict in dara.verdicts(totals)}
    claimed = f"not claimed: rests on target-fitted {ALPHAS}"
    assert verdicts["mean speedup vs Capacity (= FIFO, one queue), 1 workloads"] == claimed
    assert verdicts["workloads DARA speeds up vs Fair"] == f"not met; rests on target-fitted {ALPHAS}"
    _never_met([v for v in verdicts.values() if v not in ("", "-")])
    text = dara.markdown(rows, totals, "hadoop")
    assert f"* {ALPHAS}: target-fitted: Table 4.2" in text and "| met |" not in text


def test_flagged_tan_elkholy_and_steady_verdicts_are_never_met() -> None:
    result = _flagged(_tan(), scenario__tan__x="target-fitted: y")
    verdicts = [v for _, _, _, v in tan.verdicts(result, 0.391) if v != "-"]
    _never_met(verdicts)
    assert "not claimed: rests on target-fitted scenario tan x" in verdicts
    four = _flagged(
        _result({"fair": _policy([1000]), "adaptive-slots": _policy([700])}), a__b="target-fitted: c"
    )
    assert "Verdict: not claimed: rests on target-fitted a b." in "\n".join(elkholy.table_v(four))
    assert "Verdict: not claimed: rests on target-fitted a b." in "\n".join(elkholy.table_vi({4: four}))
    steady = _module("gupta_ch6_steady")
    row = {"wl": "wl1", "seeds": 1, "flags": {ALPHAS: "target-fitted: Table 4.2"}, "diagnosis": 100.0}
    row |= {"diagnosis:frozen": 150.0, "fifo": 150.0, "fair": 150.0, "dara": 120.0, "greedy-informed": 100.0}
    text = steady.markdown([row], "hadoop")
    assert "| met |" not in text and f"not claimed: rests on target-fitted {ALPHAS} |" in text


def test_dhok_marks_the_row_of_a_flagged_application() -> None:
    job = {"id": "wordcountdelay", "start_s": 0.0, "finish_s": 100.0, "submit_s": 0.0, "task_s": 700.0}
    learner = _policy([100])
    learner["per_seed"][0]["jobs"] = [job]
    result = _result({"learning": learner})
    del result["targetFitted"]
    result["scenario"] = "dhok-job-mix"  # the flags from bench/scenarios/dhok-job-mix.yaml
    lines = dhok.fig_11(result)
    row = next(line for line in lines if line.startswith("| wordcountdelay "))
    assert "not claimed: rests on target-fitted map.waitSPerMB" in row
    assert any(
        line.startswith("* application wordcountdelay: map.waitSPerMB: target-fitted:") for line in lines
    )


def test_the_index_names_each_scenarios_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summarise = _module("summarise")
    bound = {"makespan_s": 50.0, "slot_bound_s": None}
    for name, flags in (("flagged", {ALPHAS: "target-fitted: Table 4.2"}), ("clean", {})):
        out = tmp_path / "hadoop" / name
        out.mkdir(parents=True)
        record = {**_result({"fifo": _policy([100])}), "scenario": name, "targetFitted": flags}
        record |= {"source": "s", "headline": "h", "lower_bound": bound}
        (out / "results.json").write_text(json.dumps(record))
    summarise.main(tmp_path)
    text = capsys.readouterr().out
    assert f"| [flagged](hadoop/flagged/report.md) | {ALPHAS} | 50 |" in text
    assert "| [clean](hadoop/clean/report.md) | - | 50 |" in text
    assert f"* {ALPHAS}: target-fitted: Table 4.2" in text
