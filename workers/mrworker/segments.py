"""Sorted runs on disk and their merge: the map side's spills and the reduce side's shuffle.

A run file holds one sorted segment per reducer, one after another, with an index of
``[offset, length, records]`` per segment (Hadoop's ``file.out`` and ``file.out.index``). Lines end with a
newline on disk and are handled without it in memory.

Merging k sorted segments uses Timsort instead of a Python-level heap: it reads a block from every segment,
takes from each the prefix up to the smallest of the blocks' last lines (nothing unread can sort before it),
and sorts that batch, which Timsort does as a C-speed merge of already sorted runs. Memory stays bounded by
the blocks in flight; more segments than the merge factor are merged in passes, as Hadoop's
``io.sort.factor`` does.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from mrworker.errors import TaskError
from mrworker.report import Counters

SortKey = Callable[[bytes], Any] | None
_WRITE_BATCH_BYTES = 1 << 20


@dataclass(frozen=True)
class Segment:
    path: Path
    offset: int
    length: int
    records: int
    remote: bool = False  # fetched in the shuffle: over the network on a real cluster


def write_lines(out: Any, lines: Iterable[bytes]) -> tuple[int, int]:
    """Write lines with newlines in batches of about 1 MiB (never one copy of them all); (bytes, lines)."""
    iterator = iter(lines)
    written = records = 0
    first = list(islice(iterator, 64))
    typical = max(1, sum(map(len, first)) // max(1, len(first)))
    size = max(16, min(8192, _WRITE_BATCH_BYTES // typical))
    batch = first
    while batch:
        batch += islice(iterator, max(0, size - len(batch)))
        chunk = b"\n".join(batch) + b"\n"
        out.write(chunk)
        written += len(chunk)
        records += len(batch)
        batch = list(islice(iterator, size))
    return written, records


class RunWriter:
    """Writes one run file segment by segment (segment r for reducer r) and its index."""

    def __init__(self, path: Path, counters: Counters) -> None:
        self.path = path
        self._counters = counters
        self._out = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._index: list[list[int]] = []
        self._offset = 0
        self._records = 0
        self._start = 0

    def write(self, lines: Iterable[bytes]) -> None:
        written, records = write_lines(self._out, lines)
        self._offset += written
        self._records += records

    def end_segment(self) -> None:
        self._index.append([self._start, self._offset - self._start, self._records])
        self._start, self._records = self._offset, 0

    def close(self) -> list[Segment]:
        self._out.close()
        self._counters.written_bytes += self._offset
        return [Segment(self.path, o, n, r) for o, n, r in self._index]


def write_index(segments: list[Segment], path: Path) -> None:
    path.write_text(json.dumps({"partitions": [[s.offset, s.length, s.records] for s in segments]}))


def read_index(run: Path, index: Path) -> list[Segment]:
    try:
        partitions = json.loads(index.read_text())["partitions"]
    except FileNotFoundError:
        raise TaskError(f"map output {index.parent.name} is missing: was every map committed?") from None
    except (ValueError, KeyError, TypeError) as err:
        raise TaskError(f"map output index {index} is unreadable: {err}") from None
    return [Segment(run, int(o), int(n), int(r)) for o, n, r in partitions]


def _blocks(segment: Segment, block_bytes: int, counters: Counters) -> Iterator[list[bytes]]:
    """A segment's lines, a block at a time; each yielded list is non-empty and sorted."""
    with open(segment.path, "rb") as f:
        f.seek(segment.offset)
        left = segment.length
        carry = b""
        while left > 0:
            data = f.read(min(block_bytes, left))
            if not data:
                raise TaskError(f"{segment.path} ends before its index says: truncated run")
            left -= len(data)
            counters.read_bytes += len(data)
            if segment.remote:
                counters.network_bytes += len(data)
            data = carry + data
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            if cut:
                yield data[: cut - 1].split(b"\n")
        if carry:
            raise TaskError(f"{segment.path}: segment at {segment.offset} does not end with a newline")


def merge(
    segments: Sequence[Segment],
    counters: Counters,
    *,
    memory_bytes: int,
    key: SortKey = None,
) -> Iterator[list[bytes]]:
    """Sorted batches of all the segments' lines, in order (see the module docstring for how)."""
    if not segments:
        return
    block = max(32 << 10, min(4 << 20, memory_bytes // (2 * len(segments))))
    readers = [_blocks(s, block, counters) for s in segments if s.length > 0]
    heads: list[list[bytes]] = []
    live: list[Iterator[list[bytes]]] = []
    for reader in readers:
        first = next(reader, None)
        if first is not None:
            heads.append(first)
            live.append(reader)
    while heads:
        lasts = [h[-1] for h in heads]
        bound = min(lasts, key=key) if key else min(lasts)
        batch: list[bytes] = []
        for i, head in enumerate(heads):
            cut = bisect_right(head, key(bound), key=key) if key else bisect_right(head, bound)
            batch.extend(head[:cut])
            heads[i] = head[cut:]
        batch.sort(key=key)
        yield batch
        refilled_heads: list[list[bytes]] = []
        refilled_live: list[Iterator[list[bytes]]] = []
        for head, reader in zip(heads, live, strict=True):
            if not head:
                head = next(reader, [])
            if head:
                refilled_heads.append(head)
                refilled_live.append(reader)
        heads, live = refilled_heads, refilled_live


def merge_in_passes(
    segments: list[Segment],
    work_dir: Path,
    counters: Counters,
    *,
    factor: int,
    memory_bytes: int,
    key: SortKey = None,
) -> list[Segment]:
    """Cut the number of segments to at most ``factor`` by merging the smallest into intermediate files."""
    pending = sorted(segments, key=lambda s: s.length)
    round_no = 0
    while len(pending) > factor:
        group, pending = pending[:factor], pending[factor:]
        writer = RunWriter(work_dir / f"merge-{round_no:04d}", counters)
        for batch in merge(group, counters, memory_bytes=memory_bytes, key=key):
            writer.write(batch)
        writer.end_segment()
        pending = sorted([*pending, *writer.close()], key=lambda s: s.length)
        round_no += 1
    return pending


def grouped_counts(batches: Iterable[list[bytes]]) -> Iterator[tuple[bytes, int]]:
    """Sum the counts of ``key<TAB>count`` lines arriving sorted by key (a key may straddle batches)."""
    current: bytes | None = None
    total = 0
    for batch in batches:
        for line in batch:
            k, _, v = line.rpartition(b"\t")
            if k == current:
                total += int(v)
            else:
                if current is not None:
                    yield current, total
                current, total = k, int(v)
    if current is not None:
        yield current, total


def count_key(line: bytes) -> bytes:
    """The sort key of a ``key<TAB>count`` line (keys may contain tabs; counts never do)."""
    return line[: line.rindex(b"\t")]
