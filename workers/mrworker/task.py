"""One task attempt as the operator describes it, and the steps every application shares: reading the split,
committing map output, fetching a reduce's segments, committing a part file into the job's own area."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from mrworker.collect import CountCollector
from mrworker.committer import OutputDir
from mrworker.errors import UsageError
from mrworker.layout import Attempt, commit_directory, commit_file, durable
from mrworker.report import Counters
from mrworker.segments import Segment, merge_in_passes, read_index, write_index
from mrworker.splits import BLOCK_BYTES, Split, input_files, nth_split, read_blocks


def default_attempt_id(kind: str, index: int, attempt: int) -> str:
    """An attempt id for runs by hand (``m00003-a0``, ``c00000-a1`` for commit-job): unique per task and attempt
    within a job, as the staging names of concurrent attempts must be (the operator passes the pod's UID)."""
    return f"{kind[0]}{index:05d}-a{attempt}"


class Sink(Protocol):
    """Where a task writes a part file."""

    def write(self, data: bytes, /) -> int: ...


@dataclass
class Task:
    """Everything one attempt needs; built by ``mrworker.cli`` from arguments and environment."""

    app: str
    kind: str  # "map" or "reduce"
    index: int
    attempt: int
    maps: int
    reduces: int
    data_dir: Path
    job_dir: Path
    output: Path
    inputs: list[Path] = field(default_factory=list)
    splits: list[Split] | None = None
    sort_buffer_bytes: int = 100 << 20
    merge_factor: int = 64
    combiner: bool = True
    pattern: str = ""
    samples: int = 0
    bytes_per_map: int = 0
    output_factor: int = 10
    rows: int = 0
    seed: int = 0
    wait_for_maps_s: float = 0.0
    job_uid: str = "manual"
    attempt_id: str = ""  # default: default_attempt_id()
    overwrite: bool = False
    shown_output: str = ""  # the output as messages name it
    counters: Counters = field(default_factory=Counters)

    def __post_init__(self) -> None:
        self.attempt_id = self.attempt_id or default_attempt_id(self.kind, self.index, self.attempt)

    @property
    def paths(self) -> Attempt:
        return Attempt(self.job_dir, self.output, self.kind, self.index, self.job_uid, self.attempt_id)

    @property
    def output_dir(self) -> OutputDir:
        return OutputDir(self.output, self.job_uid, self.attempt_id, self.shown_output)

    # -- map side ------------------------------------------------------------------------------------------

    def my_splits(self) -> list[Split]:
        if self.splits is not None:
            return self.splits
        if not self.inputs:
            raise UsageError(f"{self.app} reads input: give --input (or explicit --split ranges)")
        return nth_split(input_files(self.inputs), self.index, self.maps)

    def input_blocks(self) -> Iterator[bytes]:
        # Blocks stay well under the sort buffer, so that one block never overflows it on its own.
        block = min(BLOCK_BYTES, max(64 << 10, self.sort_buffer_bytes // 8))
        for split in self.my_splits():
            yield from read_blocks(split, self.counters, block)

    def count_collector(self, *, reduces: int | None = None, combiner: bool | None = None) -> CountCollector:
        """A map output buffer for ``key<TAB>count`` records, sized and partitioned for this task."""
        return CountCollector(
            self.paths.work_dir,
            self.reduces if reduces is None else reduces,
            self.counters,
            combiner=self.combiner if combiner is None else combiner,
            buffer_bytes=self.sort_buffer_bytes,
            merge_factor=self.merge_factor,
        )

    def commit_map_output(self, finish: Callable[[Path], list[Segment]]) -> None:
        """Write the final run with ``finish`` into a staging directory and publish it as ``map-NNNNN``."""
        staged = self.paths.work_dir / "final"
        staged.mkdir()
        segments = finish(staged / "out")
        write_index(segments, staged / "index.json")
        durable(staged / "out")
        self.counters.records_out = sum(s.records for s in segments)
        commit_directory(staged, self.paths.map_output_dir())

    # -- reduce side ---------------------------------------------------------------------------------------

    def shuffle_segments(self, key: Callable[[bytes], bytes] | None = None) -> list[Segment]:
        """This reduce's segment of every map's output, merged down to at most the merge factor."""
        self.wait_for_maps()
        segments = []
        for m in range(self.maps):
            done = self.paths.map_output_dir(m)
            segs = read_index(done / "out", done / "index.json")
            if len(segs) != self.reduces:
                raise UsageError(
                    f"{done.name} has {len(segs)} partitions but this job has {self.reduces} reduces"
                )
            seg = segs[self.index]
            segments.append(Segment(seg.path, seg.offset, seg.length, seg.records, remote=True))
        self.counters.records_in = sum(s.records for s in segments)
        return merge_in_passes(
            segments,
            self.paths.work_dir,
            self.counters,
            factor=self.merge_factor,
            memory_bytes=self.sort_buffer_bytes,
            key=key,
        )

    def wait_for_maps(self) -> None:
        """A reduce started before the last maps finished (slow-start) waits for their output, as Hadoop's
        shuffle does; a missing output after ``wait_for_maps_s`` is an error."""
        deadline = time.monotonic() + self.wait_for_maps_s
        missing = list(range(self.maps))
        while True:
            missing = [m for m in missing if not (self.paths.map_output_dir(m) / "index.json").exists()]
            if not missing or time.monotonic() >= deadline:
                return
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    # -- output --------------------------------------------------------------------------------------------

    def commit_part(self, write: Callable[[Sink], None], *, map_only: bool = False) -> None:
        """Write this task's part file under its attempt's own name, then publish it into the job's
        committed-task area (first attempt wins); ``commit-job`` moves it into the output.

        The output must still be this job's when the part is published: a job that replaced it meanwhile
        owns it now (OutputConflict, exit 3).
        """
        paths, output = self.paths, self.output_dir
        output.check()
        staged = paths.temporary_part(map_only)
        staged.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(staged, "wb") as out:
                write(_Counted(out, self.counters))
                out.flush()
                os.fsync(out.fileno())
            output.check()
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        commit_file(staged, paths.committed_part(map_only))


class _Counted:
    """A binary file that adds what is written to the task's counters."""

    def __init__(self, out: BinaryIO, counters: Counters) -> None:
        self._out, self._counters = out, counters

    def write(self, data: bytes) -> int:
        self._counters.written_bytes += len(data)
        return self._out.write(data)
