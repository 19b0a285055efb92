"""Where a job's data lives on the shared volume, and Hadoop-style output commit.

Layout (paths relative to the data volume, mounted at ``/data`` in every task pod)::

    <input>/...                                user input: files, or directories of files; names starting
                                               with "_" or "." are skipped, as Hadoop's input formats do
    <job-dir>/map-00003/out                    map 3's committed output: one segment per reducer, each sorted
    <job-dir>/map-00003/index.json             {"partitions": [[offset, length, records], ...]}
    <job-dir>/_temporary/map-00003.a1/         attempt 1 of map 3 at work (spills, unmerged output)
    <output>/part-r-00002                      reduce 2's committed output (part-m-NNNNN for map-only jobs)
    <output>/_temporary/part-r-00002.a0        attempt 0 of reduce 2 at work
    <output>/_SUCCESS                          written by ``commit-job`` once every part is committed

The operator names the job directory after the job's UID, so a job recreated under the same name never reads
an old job's intermediate data.

Commit: an attempt writes only under its own temporary name, then publishes with one atomic step that can
succeed only once (``rename`` of a directory onto a missing path, ``link`` of a file onto a missing name). A
retried, killed or duplicated attempt therefore never corrupts or duplicates output: the first attempt to
commit wins, later ones find the output there and discard their own copy (their output is identical, as
every task is deterministic).
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from mrworker.errors import TaskError

_LOST_RACE = {errno.EEXIST, errno.ENOTEMPTY}


@dataclass(frozen=True)
class Attempt:
    """One attempt of one task: its names in the layout."""

    job_dir: Path
    output: Path
    kind: str  # "map" or "reduce"
    index: int
    attempt: int

    @property
    def task_name(self) -> str:
        return f"{self.kind}-{self.index:05d}"

    @property
    def work_dir(self) -> Path:
        """Scratch space for spills; removed when the attempt ends, whatever the outcome."""
        return self.job_dir / "_temporary" / f"{self.task_name}.a{self.attempt}"

    def map_output_dir(self, index: int | None = None) -> Path:
        return self.job_dir / f"map-{self.index if index is None else index:05d}"

    def part_name(self, map_only: bool) -> str:
        return f"part-{'m' if map_only else 'r'}-{self.index:05d}"

    def temporary_part(self, map_only: bool) -> Path:
        return self.output / "_temporary" / f"{self.part_name(map_only)}.a{self.attempt}"

    def prepare(self) -> None:
        """Create the work directory, removing what earlier attempts of this same task left behind.

        An earlier attempt is over by the time the operator starts a later one (it failed, was killed, or its
        node was lost); if it is somehow still running, losing its scratch space makes it fail, never commit
        anything wrong.
        """
        parent = self.work_dir.parent
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f"{self.task_name}.a*"):
            if stale != self.work_dir:
                shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir()
        (self.output / "_temporary").mkdir(parents=True, exist_ok=True)

    def cleanup(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)


def commit_directory(staged: Path, final: Path) -> bool:
    """Publish ``staged`` as ``final`` atomically; False when another attempt committed first."""
    try:
        os.rename(staged, final)
    except OSError as err:
        if err.errno in _LOST_RACE:
            shutil.rmtree(staged, ignore_errors=True)
            return False
        raise TaskError(f"cannot commit {final}: {err.strerror}") from None
    return True


def commit_file(staged: Path, final: Path) -> bool:
    """Publish the file ``staged`` as ``final`` atomically and only once; False when it was already there."""
    try:
        os.link(staged, final)
    except FileExistsError:
        return False
    except OSError as err:
        raise TaskError(f"cannot commit {final}: {err.strerror}") from None
    finally:
        staged.unlink(missing_ok=True)
    return True


def durable(path: Path) -> None:
    """fsync a file, so that a commit never publishes data still only in the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
