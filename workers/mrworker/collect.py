"""Map-side output buffers: records are kept in memory up to the sort buffer, then sorted, partitioned per
reducer and spilled to a run file; at the end the runs are merged into the map's output (Hadoop's
MapOutputBuffer with ``io.sort.mb`` and ``io.sort.factor``).

The buffer limit counts what records cost in Python memory, not just their bytes, so that the process's
peak memory stays near the sort buffer whatever the input size.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from mrworker.report import Counters
from mrworker.segments import (
    RunWriter,
    Segment,
    SortKey,
    count_key,
    grouped_counts,
    merge,
    merge_in_passes,
)

#: A bytes object's header (33 bytes), its list slot (8) and allocator rounding: what a line costs beyond
#: its length when held in a list.
LINE_OVERHEAD = 48
#: What a distinct key costs in a Counter beyond its length: the dict slot and index, the bytes header, the
#: count object, with the dict's spare capacity.
COUNT_OVERHEAD = 160

Partitioner = Callable[[list[bytes]], list[list[bytes]]]


def hash_partitioner(reduces: int) -> Partitioner:
    """Hadoop's HashPartitioner with a hash that is the same in every process (CRC-32, not ``hash()``)."""

    def partition(lines: list[bytes]) -> list[list[bytes]]:
        if reduces == 1:
            return [sorted(lines)]
        parts: list[list[bytes]] = [[] for _ in range(reduces)]
        add = [p.append for p in parts]
        crc = zlib.crc32
        for line in lines:
            add[crc(line) % reduces](line)
        for part in parts:
            part.sort()
        return parts

    return partition


class _Spiller:
    def __init__(
        self, work_dir: Path, reduces: int, counters: Counters, *, merge_factor: int, buffer_bytes: int
    ):
        self.work_dir = work_dir
        self.reduces = reduces
        self.counters = counters
        self.merge_factor = merge_factor
        self.buffer_bytes = buffer_bytes
        self.runs: list[list[Segment]] = []

    def spill(self, partitions: Iterable[Iterable[bytes]]) -> None:
        writer = RunWriter(self.work_dir / f"spill-{len(self.runs):04d}", self.counters)
        for part in partitions:
            writer.write(part)
            writer.end_segment()
        self.runs.append(writer.close())

    def merged(
        self, out: Path, key: SortKey, combine: Callable[[Iterator[list[bytes]]], Iterable[list[bytes]]]
    ) -> list[Segment]:
        """The map's final output in ``out``: the runs' segments merged per reducer."""
        if len(self.runs) == 1:
            self.runs[0][0].path.rename(out)
            return [Segment(out, s.offset, s.length, s.records) for s in self.runs[0]]
        writer = RunWriter(out, self.counters)
        for r in range(self.reduces):
            segments = merge_in_passes(
                [run[r] for run in self.runs],
                self.work_dir,
                self.counters,
                factor=self.merge_factor,
                memory_bytes=self.buffer_bytes,
                key=key,
            )
            for batch in combine(merge(segments, self.counters, memory_bytes=self.buffer_bytes, key=key)):
                writer.write(batch)
            writer.end_segment()
        return writer.close()


def _as_is(batches: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
    return batches


class LineCollector:
    """Output of maps whose records are whole lines (sort, terasort): sorted by the line's bytes."""

    def __init__(
        self,
        work_dir: Path,
        reduces: int,
        counters: Counters,
        partitioner: Partitioner,
        *,
        buffer_bytes: int,
        merge_factor: int,
    ) -> None:
        self._spiller = _Spiller(
            work_dir, reduces, counters, merge_factor=merge_factor, buffer_bytes=buffer_bytes
        )
        self._partitioner = partitioner
        self._lines: list[bytes] = []
        self._bytes = 0

    def add(self, lines: list[bytes], size: int) -> None:
        """Buffer ``lines`` (``size`` bytes of input); spill first when they would overflow the buffer."""
        cost = size + LINE_OVERHEAD * len(lines)
        if self._lines and self._bytes + cost > self._spiller.buffer_bytes:
            self._spill()
        self._lines.extend(lines)
        self._bytes += cost

    def _spill(self) -> None:
        lines, self._lines, self._bytes = self._lines, [], 0
        partitions = self._partitioner(lines)
        del lines
        self._spiller.spill(partitions)

    def finish(self, out: Path) -> list[Segment]:
        self._spill()
        return self._spiller.merged(out, None, _as_is)


class CountCollector:
    """Output of maps that count keys (wordcount, grep, pi): ``key<TAB>count`` lines sorted by key.

    With the combiner (Hadoop's ``setCombinerClass`` with the reducer, as WordCount does) counts are summed in
    the map before they are written; without it every occurrence is written as ``key<TAB>1``.
    """

    def __init__(
        self,
        work_dir: Path,
        reduces: int,
        counters: Counters,
        *,
        combiner: bool,
        buffer_bytes: int,
        merge_factor: int,
    ) -> None:
        self._spiller = _Spiller(
            work_dir, reduces, counters, merge_factor=merge_factor, buffer_bytes=buffer_bytes
        )
        self._combiner = combiner
        self._counts: Counter[bytes] = Counter()

    def add(self, keys: Iterable[bytes]) -> None:
        self._counts.update(keys)
        self._check()

    def add_count(self, key: bytes, count: int) -> None:
        self._counts[key] += count
        self._check()

    def _check(self) -> None:
        if len(self._counts) * COUNT_OVERHEAD > self._spiller.buffer_bytes:
            self._spill()

    def _spill(self) -> None:
        counts, self._counts = self._counts, Counter()
        reduces = self._spiller.reduces
        parts: list[list[bytes]] = [[] for _ in range(reduces)]
        for key in counts:
            parts[zlib.crc32(key) % reduces if reduces > 1 else 0].append(key)
        self._spiller.spill(_CountLines(part, counts, self._combiner) for part in parts)

    def finish(self, out: Path) -> list[Segment]:
        self._spill()
        combine = _sum_batches if self._combiner else _as_is
        return self._spiller.merged(out, count_key, combine)


class _CountLines:
    """``key<TAB>count`` lines of one partition, built a batch at a time while they are written."""

    def __init__(self, keys: list[bytes], counts: Counter[bytes], combined: bool) -> None:
        keys.sort()
        self.keys, self.counts, self.combined = keys, counts, combined

    def __iter__(self) -> Iterator[bytes]:
        for key in self.keys:
            if self.combined:
                yield b"%s\t%d" % (key, self.counts[key])
            else:
                yield from [key + b"\t1"] * self.counts[key]


def _sum_batches(batches: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
    out: list[bytes] = []
    for key, total in grouped_counts(batches):
        out.append(b"%s\t%d" % (key, total))
        if len(out) >= 8192:
            yield out
            out = []
    if out:
        yield out
