"""``mrworker probe``: real probe work as the operator's probe pods run it (seed 002 P3-A, core/probes.py)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from mrsched.core import physics, probes
from mrsched.core.report import TaskReport
from mrworker import probe as worker_probe
from tests.workers.image import Worker, kill_when

SCALE = 0.01  # 0.2 reference seconds of CPU and 20 MB of disk for the base probe


def probe_env(kind: str, scale: float = SCALE) -> dict[str, str]:
    """What the operator's probe pod sets (no MRSCHED_APP); MRSCHED_DATA_DIR comes from the image."""
    return {"MRSCHED_TASK_TYPE": "probe", "MRSCHED_PROBE_KIND": kind, "MRSCHED_PROBE_SCALE": str(scale)}


def leftovers(worker: Worker) -> list[Path]:
    return sorted(worker.data.rglob("*"))


def test_constants_agree_with_the_core() -> None:
    """The worker is standard-library only, so it keeps its own copies of the core's probe constants."""
    assert worker_probe.PROBE_KINDS == probes.PROBE_KINDS
    assert worker_probe.PROBE_ETA == probes.PROBE_ETA
    assert worker_probe.PROBE_CPU_S == probes.PROBE_CPU_S
    assert worker_probe.PROBE_DISK_S == probes.PROBE_DISK_S
    assert worker_probe.REFERENCE_DISK_MBPS == physics.REFERENCE_DISK_MBPS
    for kind in probes.PROBE_KINDS:
        for scale in (1.0, 0.01, 2.5):
            assert worker_probe.probe_work(kind, scale) == probes.probe_work(kind, scale)
            demand = probes.probe_demand(kind, scale)
            done = worker_probe.Probe(kind, scale, Path("/data"))
            assert done.disk_bytes == round(demand.write_mb * 1e6) == round(demand.read_mb * 1e6)
            assert done.cpu_bytes == round(demand.cpu_s * worker_probe.CPU_BYTES_PER_REFERENCE_S)


@pytest.mark.parametrize("kind", probes.PROBE_KINDS)
def test_probe_does_its_work_reports_it_and_cleans_up(worker: Worker, kind: probes.ProbeKind) -> None:
    result = worker.run("probe", env=probe_env(kind))
    report = TaskReport.from_json(json.dumps(result.report))
    assert report.status == "succeeded" and report.wall_s > 0
    demand = probes.probe_demand(kind, SCALE)
    assert report.written_bytes == round(demand.write_mb * 1e6)
    assert report.read_bytes == round(demand.read_mb * 1e6)
    assert report.network_bytes == 0
    if kind == "unit":
        assert report.written_bytes == 0 and report.read_bytes == 0
    else:
        assert report.written_bytes == 10_000_000 * (probes.PROBE_ETA if kind == "disk" else 1)
    assert leftovers(worker) == [], "the probe's scratch directory is removed"


def test_the_cpu_probe_does_eta_times_the_cpu_work_of_the_base_probe(worker: Worker) -> None:
    scale = 0.02  # base: 0.4 reference-core seconds, cpu: 1.6
    base = worker.run("probe", "--probe-kind", "base", "--probe-scale", str(scale)).report
    cpu = worker.run("probe", "--probe-kind", "cpu", "--probe-scale", str(scale)).report
    assert cpu["wallS"] > base["wallS"] and cpu["cpuUserS"] > base["cpuUserS"]
    assert cpu["writtenBytes"] == base["writtenBytes"] and cpu["readBytes"] == base["readBytes"]
    # The calibration: 1.2 reference-core seconds of extra work cost about that much CPU on a current core
    # (loosely: slow or busy test machines too).
    extra = cpu["cpuUserS"] - base["cpuUserS"]
    assert 0.1 < extra < 12, f"{extra:.2f} s of CPU for 1.2 reference-core seconds"


def test_arguments_win_over_the_environment(worker: Worker) -> None:
    result = worker.run("probe", "--probe-kind", "unit", env=probe_env("disk", scale=100))
    assert result.report["status"] == "succeeded" and result.report["writtenBytes"] == 0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"MRSCHED_PROBE_KIND": "gpu"},
            "probe kind 'gpu' (--probe-kind or MRSCHED_PROBE_KIND): must be one of",
        ),
        ({}, "give --probe-kind or MRSCHED_PROBE_KIND (unit, base, cpu, disk)"),
        (
            {"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "big"},
            "MRSCHED_PROBE_SCALE='big' is not a number",
        ),
        ({"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "0"}, "probe scale 0.0 (--probe-scale"),
        ({"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "nan"}, "probe scale nan (--probe-scale"),
        ({"MRSCHED_PROBE_KIND": "disk", "MRSCHED_PROBE_SCALE": "-1"}, "must be a positive number"),
    ],
)
def test_bad_probe_arguments_are_a_usage_error(worker: Worker, env: dict[str, str], message: str) -> None:
    result = worker.run(env={"MRSCHED_TASK_TYPE": "probe", **env}, expect=2)
    assert result.report["status"] == "failed"
    assert message in result.report["error"] and message in result.stderr
    assert leftovers(worker) == []


def test_sigterm_removes_the_scratch_directory(worker: Worker) -> None:
    proc, log = worker.start("probe", "--probe-kind", "cpu", "--probe-scale", "1")  # 80 s if left alone
    scratch = worker.data / worker_probe.PROBE_DIR
    kill_when(proc, lambda: scratch.exists() and any(scratch.iterdir()), sig=signal.SIGTERM)
    assert proc.returncode == 143
    report = json.loads(log.read_text())
    assert report["status"] == "failed" and "SIGTERM" in report["error"]
    assert leftovers(worker) == []


def test_other_probes_scratch_directories_are_left_alone(worker: Worker) -> None:
    """Probes on other nodes share the data volume: each removes only its own directory."""
    other = worker.data / worker_probe.PROBE_DIR / "other-node-abc123"
    other.mkdir(parents=True)
    (other / "probe.bin").write_bytes(b"x")
    worker.run("probe", env=probe_env("base"))
    assert leftovers(worker) == [other.parent, other, other / "probe.bin"]


def test_a_sigterm_held_back_while_the_scratch_directory_is_made_still_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SIGTERM that arrives while the directory is being made is delivered as soon as it is made: the
    directory must already be owned by the cleanup then (CI once found it left behind, 1 run in many)."""
    import threading

    from mrworker.errors import Terminated

    made = worker_probe._make_private_dir

    def make_then_sigterm(parent: Path, prefix: str) -> Path:
        work = made(parent, prefix)
        # To this thread, as the kernel sends it to the single-threaded worker: held back here, delivered on
        # leaving the deferral (os.kill could land on another of pytest's threads, where nothing holds it back).
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        return work

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    monkeypatch.setattr(worker_probe, "_make_private_dir", make_then_sigterm)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with pytest.raises(Terminated), worker_probe.scratch_dir(tmp_path):
            pytest.fail("the probe's work must not start after a SIGTERM")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sorted(tmp_path.rglob("*")) == []
