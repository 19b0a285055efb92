"""Sort and TeraSort: records are lines, sorted by their bytes.

``sort`` (Hadoop's ``examples/Sort``) hash-partitions records, so each part is sorted on its own. ``terasort``
(Hadoop's TeraSort) reads 100-byte GraySort records (``teragen`` writes them: a 10-byte key, then the rest of
the line, ending in CRLF) and uses a sampled total-order partitioner: reducer ``r`` gets the keys between the
``r``-th and ``r+1``-th cut points, so the parts concatenated in order are one sorted file.

The cut points come from a fixed, evenly spaced sample of the input that every map draws the same way, so all
maps agree on them without a job-client step (Hadoop writes ``_partition.lst`` at submission instead).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import pairwise
from pathlib import Path

from mrworker.apps.common import reduce_identity
from mrworker.collect import LineCollector, Partitioner, hash_partitioner
from mrworker.errors import TaskError
from mrworker.splits import input_files, split_lines
from mrworker.task import Task

#: A record in memory: 100 bytes on disk less the newline, so it ends with the CR.
TERA_LINE = 99
TERA_KEY = 10
SAMPLE_RECORDS = 10_000


class Sort:
    map_only = False
    reads_input = True

    def partitioner(self, task: Task) -> Partitioner:
        return hash_partitioner(task.reduces)

    def check(self, lines: list[bytes], task: Task) -> None:
        pass

    def map(self, task: Task) -> None:
        out = LineCollector(
            task.paths.work_dir,
            task.reduces,
            task.counters,
            self.partitioner(task),
            buffer_bytes=task.sort_buffer_bytes,
            merge_factor=task.merge_factor,
        )
        for block in task.input_blocks():
            lines = split_lines(block)
            self.check(lines, task)
            task.counters.records_in += len(lines)
            out.add(lines, len(block))
        task.commit_map_output(out.finish)

    def reduce(self, task: Task) -> None:
        reduce_identity(task)


class TeraSort(Sort):
    def check(self, lines: list[bytes], task: Task) -> None:
        if lines and (min(map(len, lines)) != TERA_LINE or max(map(len, lines)) != TERA_LINE):
            bad = next(
                i for i, line in enumerate(lines) if len(line) != TERA_LINE or not line.endswith(b"\r")
            )
            raise TaskError(
                f"terasort input is malformed: record {task.counters.records_in + bad + 1} of this split is "
                f"{len(lines[bad]) + 1} bytes, not a 100-byte record (10-byte key ... CRLF); "
                "generate input with the teragen application"
            )
        if not all(line.endswith(b"\r") for line in lines[:: max(1, len(lines) // 16)]):
            raise TaskError("terasort input is malformed: records must end with CRLF")

    def partitioner(self, task: Task) -> Partitioner:
        cuts = cut_points(
            input_files(task.inputs) if task.inputs else [s.path for s in task.my_splits()], task.reduces
        )

        def partition(lines: list[bytes]) -> list[list[bytes]]:
            lines.sort()
            bounds = [0, *(bisect_left(lines, cut) for cut in cuts), len(lines)]
            return [lines[a:b] for a, b in pairwise(bounds)]

        return partition


def cut_points(files: list[Path], reduces: int, samples: int = SAMPLE_RECORDS) -> list[bytes]:
    """``reduces - 1`` keys splitting a sample of the input into equal parts (TeraSort's partition list)."""
    if reduces <= 1:
        return []
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    keys: list[bytes] = []
    positions = iter(k * total // samples for k in range(samples))
    position = next(positions, total)
    offset = 0
    for path, size in zip(files, sizes, strict=True):
        with open(path, "rb") as f:
            while position < offset + size:
                f.seek((position - offset) // (TERA_LINE + 1) * (TERA_LINE + 1))  # records are fixed-size
                record = f.read(TERA_LINE + 1)
                if len(record) == TERA_LINE + 1:
                    keys.append(record[:TERA_KEY])
                position = next(positions, total)
        offset += size
    keys = sorted(set(keys))
    if not keys:
        raise TaskError("terasort input is empty: nothing to sample for the partitioner")
    return [keys[len(keys) * r // reduces] for r in range(1, reduces)]
