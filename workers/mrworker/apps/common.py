"""Reduce functions several applications share."""

from __future__ import annotations

from mrworker.segments import count_key, grouped_counts, merge, write_lines
from mrworker.task import Sink, Task


def reduce_identity(task: Task) -> None:
    """Merge the shuffle's sorted lines into the part file unchanged (sort, terasort)."""
    segments = task.shuffle_segments()

    def write(out: Sink) -> None:
        for batch in merge(segments, task.counters, memory_bytes=task.sort_buffer_bytes):
            task.counters.records_out += write_lines(out, batch)[1]

    task.commit_part(write)


def reduce_sum(task: Task) -> None:
    """Sum the counts per key (Hadoop's LongSumReducer: wordcount, grep)."""
    segments = task.shuffle_segments(count_key)

    def write(out: Sink) -> None:
        batch: list[bytes] = []
        for key, total in grouped_counts(
            merge(segments, task.counters, memory_bytes=task.sort_buffer_bytes, key=count_key)
        ):
            batch.append(b"%s\t%d" % (key, total))
            if len(batch) >= 8192:
                task.counters.records_out += write_lines(out, batch)[1]
                batch = []
        task.counters.records_out += write_lines(out, batch)[1] if batch else 0

    task.commit_part(write)
