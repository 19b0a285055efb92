"""Where a job's data lives on the shared volume, and Hadoop-style task commit.

Layout (paths relative to the data volume, mounted at ``/data`` in every task pod)::

    <input>/...                                user input: files, or directories of files; names starting
                                               with "_" or "." are skipped, as Hadoop's input formats do
    <job-dir>/map-00003/out                    map 3's committed output: one segment per reducer, each sorted
    <job-dir>/map-00003/index.json             {"partitions": [[offset, length, records], ...]}
    <job-dir>/_temporary/map-00003.<attempt>/  one attempt of map 3 at work (spills, unmerged output)
    <output>/_JOB                              the claim: the UID of the job that owns this output
    <output>/_temporary/<job-uid>/_attempts/part-r-00002.<attempt>
                                               one attempt of reduce 2 writing its part
    <output>/_temporary/<job-uid>/part-r-00002 reduce 2's committed task output (part-m-NNNNN: map-only)
    <output>/part-r-00002                      the job's output, moved here by ``commit-job``
    <output>/_SUCCESS                          the job's UID, written last by ``commit-job``
    <parent>/.<name>.claim-<attempt>/          a claim being staged, renamed onto <output> (``committer``)
    <parent>/.<name>.replaced-<attempt>/       an old output set aside by ``--overwrite``, being removed

``<attempt>`` is the attempt's unique id (the pod's UID): two attempts of one task may run at the same time (a
NotReady node's container still running beside its replacement), so they never share a scratch directory
or a temporary file. The operator names the job directory after the job's UID, so a job recreated under the
same name never reads an old job's intermediate data; by hand it defaults to
``<output>/_temporary/<job-uid>/intermediate``.

Task commit (Hadoop's FileOutputCommitter, algorithm 1): an attempt writes only under its own temporary
name, then publishes with one atomic step that can succeed only once (``rename`` of a directory onto a
missing path, ``link`` of a file onto a missing name). A retried, killed or duplicated attempt therefore
never corrupts or duplicates output: the first attempt to commit wins, later ones find the output there
and discard their own copy (their output is identical, as every task is deterministic). Part files are
published into the job's own committed-task area, never straight into ``<output>``: only the job commit
(``mrworker.committer``) moves them there, after checking that the output is still this job's.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from mrworker.errors import TaskError, UsageError

_LOST_RACE = {errno.EEXIST, errno.ENOTEMPTY}
#: Room left for the prefixes and suffixes an id gets in file names (NAME_MAX is 255 almost everywhere).
MAX_ID_CHARS = 128


def checked_id(value: str, option: str) -> str:
    """``value`` if it can be one path component of every name built from it; a usage error otherwise.

    Job and attempt ids name directories and files (``_temporary/<job-uid>``, ``map-00003.<attempt-id>``),
    so a ``/`` or ``..`` in one would write outside the layout, and a line break would corrupt ``_JOB``.
    """
    bad = not value or value in {".", ".."} or len(value) > MAX_ID_CHARS
    if bad or any(c in value for c in "/\\\0") or not value.isprintable():
        raise UsageError(
            f"{option} {value!r} must be one path component: 1 to {MAX_ID_CHARS} printable characters, "
            "no '/', not '.' or '..'"
        )
    return value


@dataclass(frozen=True)
class Attempt:
    """One attempt of one task: its names in the layout."""

    job_dir: Path
    output: Path
    kind: str  # "map" or "reduce"
    index: int
    job_uid: str
    attempt_id: str

    @property
    def task_name(self) -> str:
        return f"{self.kind}-{self.index:05d}"

    @property
    def work_dir(self) -> Path:
        """Scratch space for spills, this attempt's alone; removed when the attempt ends, whatever the outcome."""
        return self.job_dir / "_temporary" / f"{self.task_name}.{self.attempt_id}"

    def map_output_dir(self, index: int | None = None) -> Path:
        return self.job_dir / f"map-{self.index if index is None else index:05d}"

    def part_name(self, map_only: bool) -> str:
        return f"part-{'m' if map_only else 'r'}-{self.index:05d}"

    @property
    def committed_tasks(self) -> Path:
        """The job's committed-task area: its published part files wait here for the job commit."""
        return committed_tasks(self.output, self.job_uid)

    def temporary_part(self, map_only: bool) -> Path:
        return self.committed_tasks / "_attempts" / f"{self.part_name(map_only)}.{self.attempt_id}"

    def committed_part(self, map_only: bool) -> Path:
        return self.committed_tasks / self.part_name(map_only)

    def prepare(self) -> None:
        """Create this attempt's work directory.

        Other attempts' scratch is left alone: a predecessor may still be running (its node NotReady, its
        container alive), and taking its files away would disturb it for nothing. Dead attempts' scratch goes
        with the job directory when the job commits. Only a directory of this very attempt id (the same pod's
        container restarted) is replaced.
        """
        self.work_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir()

    def cleanup(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)


def committed_tasks(output: Path, job_uid: str) -> Path:
    return output / "_temporary" / job_uid


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


def durable_dir(path: Path) -> None:
    """fsync a directory, so that the names just created or renamed in it survive a crash.

    Some filesystems refuse to fsync a directory (EINVAL, EBADF); there the rename is as durable as it gets.
    """
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in {errno.EINVAL, errno.EBADF}:
            raise
    finally:
        os.close(fd)
