"""The task usage report format and the load average."""

from __future__ import annotations

import math

import pytest

from mrsched.core.node_metrics import LoadAverage
from mrsched.core.report import TaskReport


def test_report_round_trips_and_stays_under_four_kib() -> None:
    report = TaskReport("succeeded", cpu_user_s=1.5, read_bytes=10, records_out=3, wall_s=2.25)
    assert TaskReport.from_json(report.to_json()) == report
    failed = TaskReport("failed", error="x" * 10_000)
    text = failed.to_json()
    assert len(text.encode()) <= 4096
    assert TaskReport.from_json(text).error.startswith("xxx")


@pytest.mark.parametrize(
    "text, message",
    [
        ("nope", "not JSON"),
        ('{"v": 9}', "version 9"),
        ('{"v": 1, "status": "odd"}', "status"),
        ('{"v": 1, "status": "failed", "readBytes": "x"}', "readBytes"),
    ],
)
def test_bad_reports_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TaskReport.from_json(text)


def test_load_average_follows_the_kernels_damping() -> None:
    load = LoadAverage()
    for _ in range(12):  # one minute at 4 runnable threads
        load.sample(4.0)
    assert load.values["load1"] == pytest.approx(4 * (1 - math.exp(-1)))
    assert load.values["load1"] > load.values["load5"] > load.values["load15"] > 0
