"""Memory is bounded by the sort buffer, not by the input size."""

from __future__ import annotations

from tests.workers.image import Worker


def _peak(worker: Worker, rows: int, app: str) -> int:
    worker.job("teragen", maps=1, reduces=0, output=f"in-{rows}", args=["--rows", str(rows)])
    result = worker.run(
        "map",
        "--app",
        app,
        "--reduces",
        "4",
        "--input",
        f"in-{rows}",
        "--output",
        f"out-{rows}-{app}",
        "--sort-buffer-mb",
        "2",
    )
    return int(result.report["peakMemoryBytes"])


def test_sort_memory_does_not_grow_with_input(worker: Worker) -> None:
    small, large = (
        _peak(worker, 20_000, "sort"),
        _peak(worker, 400_000, "sort"),
    )  # 2 MB and 40 MB = 20 buffers
    assert large - small < 8 << 20, f"peak {small >> 20} MiB on 2 MB of input, {large >> 20} MiB on 40 MB"
    assert large < (2 << 20) + (64 << 20)
