"""The calibration fit (mrsched.simulator.calibration) on measurements made by the physics itself.

If the physics generated the data, the fit must find the parameters it was generated with (up to the small
noise added) and reproduce the times; and a profile far from the data must show a large error, or the error
figure that ``make calibrate`` reports could never fail. The CPU seconds the physics reports are a target too:
without them a CPU-bound application on a loaded machine is fitted as disk work with no wall error at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mrsched.core.physics import NodeCapability
from mrsched.simulator.calibration import (
    AppProfile,
    Measurement,
    compare,
    fit,
    mean_abs_error,
    mean_duration,
    mean_outcome,
    profile_from_usage,
    relative_errors,
)

REPO = Path(__file__).resolve().parents[3]
# A free start-up (share 0), as bench/calibrate.py fits: with Ω on the CPU, Ω and θc would trade off exactly.
NODE = NodeCapability(
    cores=2, memory_mb=8000, noise_sigma=0.0, cpu_contention=0.3, disk_contention=0.15, overhead_cpu_share=0.0
)
TRUE = {
    "cpu-heavy": AppProfile(cpu_s=3.0, disk_s=0.3, overhead_s=0.4, read_share=0.9),
    "disk-heavy": AppProfile(cpu_s=0.6, disk_s=2.5, overhead_s=0.3, read_share=0.2),
    "mixed": AppProfile(cpu_s=1.5, disk_s=1.2, overhead_s=0.6),
}
KS = (1, 2, 3, 4, 6, 8)
#: Deterministic ±2 % "measurement noise", a different pattern for each application.
WIGGLE = (0.02, -0.015, 0.01, -0.02, 0.005, 0.015, -0.01)


def _synthetic(noise: bool = True) -> list[Measurement]:
    out = []
    for i, (app, profile) in enumerate(sorted(TRUE.items())):
        for j, k in enumerate(KS):
            wall, cpu = mean_outcome(NODE, profile, k)
            if noise:
                wall *= 1 + WIGGLE[(i * 3 + j) % len(WIGGLE)]
                cpu *= 1 + WIGGLE[(i * 2 + j + 3) % len(WIGGLE)]
            out.append(Measurement(app, k, wall, cpu))
    return out


def _start(profile: AppProfile) -> AppProfile:
    # As bench/calibrate.py starts: from the measured CPU seconds and bytes, both overstated here.
    return replace(profile, cpu_s=profile.cpu_s * 1.3, disk_s=profile.disk_s * 2.0, overhead_s=0.1)


def test_mean_duration_matches_the_closed_form_of_synchronised_tasks() -> None:
    # k identical tasks in step: Ω, then CPU shared by k on C cores with the over-subscription cost, then k disk
    # streams with seek thrashing.
    p, c = TRUE["mixed"], NODE
    for k in KS:
        cpu = p.cpu_s * max(1, k / c.cores) * (1 + c.cpu_contention * max(0, k - c.cores) / c.cores)
        disk = p.disk_s * k * (1 + c.disk_contention * (k - 1))
        assert mean_duration(NODE, p, k) == pytest.approx(p.overhead_s + cpu + disk, rel=1e-9)
        # CPU seconds: θc times the over-subscription cost (time held on a core), plus half of Ω.
        cost = 1 + c.cpu_contention * max(0, k - c.cores) / c.cores
        assert mean_outcome(NODE, p, k)[1] == pytest.approx(p.cpu_s * cost + 0.5 * p.overhead_s, rel=1e-9)


def test_fit_recovers_known_profiles_and_contention() -> None:
    start_node = replace(NODE, cpu_contention=0.1, disk_contention=0.05)
    result = fit(start_node, _synthetic(), {a: _start(p) for a, p in TRUE.items()})
    assert result.success
    assert result.node.cpu_contention == pytest.approx(NODE.cpu_contention, rel=0.25)
    assert result.node.disk_contention == pytest.approx(NODE.disk_contention, rel=0.25)
    for app, true in TRUE.items():
        got = result.profiles[app]
        # With ±2 % noise, Ω and θc trade off (both are constant up to the core count), so each part is held
        # to 10 % of the task's time alone rather than of itself.
        tolerance = 0.1 * (true.cpu_s + true.disk_s + true.overhead_s)
        assert got.cpu_s == pytest.approx(true.cpu_s, abs=tolerance), app
        assert got.disk_s == pytest.approx(true.disk_s, abs=tolerance), app
        assert got.overhead_s == pytest.approx(true.overhead_s, abs=tolerance), app
        assert got.read_share == true.read_share  # carried over from the starting profile
        assert result.mean_errors[app] < 0.02, app
        assert result.mean_cpu_errors[app] < 0.02, app
        assert (
            set(result.modelled[app])
            == set(result.modelled_cpu[app])
            == set(result.cpu_errors[app])
            == set(KS)
        )


def test_fit_without_noise_is_exact_and_can_hold_the_machine() -> None:
    result = fit(NODE, _synthetic(noise=False), {a: _start(p) for a, p in TRUE.items()}, fit_contention=False)
    assert (result.node.cpu_contention, result.node.disk_contention) == (0.3, 0.15)
    for app, true in TRUE.items():
        assert result.profiles[app].cpu_s == pytest.approx(true.cpu_s, rel=1e-3)
        assert result.mean_errors[app] < 1e-4
        assert result.mean_cpu_errors[app] < 1e-4


def test_wall_alone_fits_cpu_work_as_disk_work_and_the_cpu_target_prevents_it() -> None:
    # A CPU-bound application measured while other work holds one of the two cores (made here by the physics on
    # one core): its wall time grows from k = 1 on, as a disk-bound task's does, and exactly like one (the
    # one-core CPU stretch k·(1 + a(k − 1)) is the disk stretch's form), so wall times alone are fitted
    # perfectly with all of θc moved into θd. This is what the first loaded run of `make calibrate` did.
    true = AppProfile(cpu_s=3.0, disk_s=0.1, overhead_s=0.4)
    loaded = replace(NODE, cores=1)
    measured = [Measurement("pi", k, *mean_outcome(loaded, true, k)) for k in KS]
    start = {"pi": replace(true, cpu_s=measured[0].cpu_s or 0.0, disk_s=0.4, overhead_s=0.1)}

    wall_only = fit(NODE, [replace(m, cpu_s=None) for m in measured], start)
    assert wall_only.profiles["pi"].cpu_s < 0.1 * true.cpu_s
    assert wall_only.profiles["pi"].disk_s > 0.9 * true.cpu_s
    assert wall_only.mean_errors["pi"] < 0.01  # a small error, and a wrong profile
    assert wall_only.cpu_errors == {} and wall_only.mean_cpu_errors == {}

    # With the CPU seconds the task used as a target, θc stays CPU work; the wall shortfall of a model that
    # counts the busy core as free is then shown, not hidden.
    both = fit(NODE, measured, start)
    assert both.profiles["pi"].cpu_s == pytest.approx(true.cpu_s, rel=0.25)
    assert both.profiles["pi"].disk_s < 0.5 * true.cpu_s
    assert both.mean_cpu_errors["pi"] < 0.1
    assert both.mean_errors["pi"] > 0.05


def test_a_profile_far_from_the_data_shows_a_large_error() -> None:
    doubled = {a: replace(p, cpu_s=p.cpu_s * 2, disk_s=p.disk_s * 2) for a, p in TRUE.items()}
    assert all(mean_abs_error(e) > 0.5 for e in relative_errors(NODE, doubled, _synthetic()).values())
    # All the work as CPU: right alone, wrong in shape once tasks share the node.
    all_cpu = {a: replace(p, cpu_s=p.cpu_s + p.disk_s, disk_s=0.0) for a, p in TRUE.items()}
    errors = relative_errors(NODE, all_cpu, _synthetic())
    assert abs(errors["disk-heavy"][1]) < 0.03
    assert mean_abs_error(errors["disk-heavy"]) > 0.3
    right = compare(NODE, TRUE, _synthetic())
    assert all(mean_abs_error(e) < 0.03 for e in right.errors.values())
    assert all(mean_abs_error(e) < 0.03 for e in right.cpu_errors.values())
    # The CPU work moved to the disk: the wall times may still pass, the CPU seconds cannot.
    as_disk = {a: replace(p, cpu_s=0.0, disk_s=p.disk_s + p.cpu_s) for a, p in TRUE.items()}
    moved = compare(NODE, as_disk, _synthetic())
    assert abs(moved.errors["cpu-heavy"][1]) < 0.03
    assert all(mean_abs_error(e) > 0.5 for e in moved.cpu_errors.values())


def test_starting_profile_from_a_usage_report() -> None:
    p = profile_from_usage(2.0, read_bytes=150e6, written_bytes=50e6, overhead_s=0.2)
    assert (p.cpu_s, p.disk_s, p.overhead_s, p.read_share) == (2.0, 2.0, 0.2, 0.75)
    assert p.demand().read_mb == pytest.approx(150) and p.demand().write_mb == pytest.approx(50)


def test_fit_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="starting profile"):
        fit(NODE, _synthetic(), {"mixed": TRUE["mixed"]})
    with pytest.raises(ValueError, match="one measurement"):
        fit(NODE, [Measurement("mixed", 1, 1.0)] * 2, TRUE)
    with pytest.raises(ValueError, match="CPU seconds"):
        fit(NODE, [Measurement("mixed", 1, 1.0, 0.0)], TRUE)


def test_quick_calibration_of_one_app_runs_real_workers(tmp_path: Path) -> None:
    """One tiny real run of bench/calibrate.py: structure and positive times only, no numbers judged."""
    out = tmp_path / "out"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "calibrate.py"),
            "--quick",
            "--apps",
            "wordcount",
            "--concurrency",
            "1,2",
            "--probe-repeats",
            "1",
            "--no-plots",
            "--size",
            "wordcount=0.5",
            "--out",
            str(out),
            "--work-dir",
            str(tmp_path),
        ],
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "operator"), str(REPO)])},
        stdout=subprocess.DEVNULL,
        timeout=120,
    )
    data = json.loads((out / "calibration.json").read_text())
    assert data["machine"]["cores"] == os.cpu_count()
    tasks = [t for t in data["tasks"] if t["app"] == "wordcount"]
    assert sorted(t["concurrency"] for t in tasks) == [1, 2, 2]
    assert all(t["wall_s"] > 0 and t["cpu_s"] > 0 and t["read_bytes"] > 0 for t in tasks)
    assert {t["concurrency"] for t in data["tasks"] if t["app"] == "probe-unit"} == {1, 2}
    app = data["apps"]["wordcount"]
    assert set(app["points"]) == {"1", "2"} and app["mean_abs_error"] >= 0 and app["mean_abs_cpu_error"] >= 0
    assert all(p["modelled_cpu_s"] > 0 and "cpu_error" in p for p in app["points"].values())
    assert {"cpu_s", "disk_s", "overhead_s"} <= set(app["profile"])
    assert (out / "report.md").read_text().count("wordcount") >= 1
