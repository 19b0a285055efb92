"""Who owns an output directory, and the job commit (Hadoop's FileOutputCommitter, algorithm 1).

Why a claim: part files are deterministic, so "the first attempt to publish wins" is right between attempts
of one job, and wrong between jobs. Without an owner, a job re-run into the same path, or another job that
wrote there first, would succeed with old or foreign parts. So every attempt first claims ``<output>`` for its
job: the file ``<output>/_JOB`` holds the job's UID. Hadoop refuses an existing output directory outright;
here an existing output is refused unless the job says ``overwrite`` (exit code 3, permanent), and is
otherwise replaced.

The claim protocol needs only what a shared POSIX filesystem (NFS included) makes atomic: ``rename`` and
``link``, no locks. A claim is staged as a sibling directory holding ``_JOB`` and renamed onto ``<output>``,
which succeeds onto a missing path or an empty directory and fails when anyone else got there first; so of
two jobs claiming at once exactly one wins, and attempts of one job all find the claim theirs. Replacing an
output renames it aside first (``.<name>.replaced-<attempt>``), claims, then deletes what was set aside.

The job commit moves each committed part from the job's own area (``_temporary/<job-uid>/``) into
``<output>``, checks that the output is still this job's, removes temporary data and writes ``_SUCCESS``
(holding the job's UID) last. Every step can be repeated, so an interrupted or duplicated commit completes.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mrworker.errors import OutputConflict, TaskError
from mrworker.layout import committed_tasks, durable_dir

JOB_FILE = "_JOB"
SUCCESS_FILE = "_SUCCESS"
#: How often a claim re-reads the output after losing a race before it gives up (exit 1: retried).
CLAIM_TRIES = 10
_TAKEN = {errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR}


def _read_id(path: Path) -> str | None:
    """The id a ``_JOB`` or ``_SUCCESS`` file holds; None when there is no such file."""
    try:
        return path.read_text(errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return "?"


def _write_id(path: Path, value: str) -> None:
    with open(path, "w") as out:
        out.write(value + "\n")
        out.flush()
        os.fsync(out.fileno())


def _remove(path: Path) -> None:
    """Remove a file or a directory tree, if there is one."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()


@dataclass(frozen=True)
class OutputDir:
    """A job's output directory as one attempt of the job sees it."""

    path: Path
    job_uid: str
    attempt_id: str
    shown: str = ""  # how messages name it (the path on the data volume)

    @property
    def _name(self) -> str:
        return self.shown or str(self.path)

    def holder(self, path: Path | None = None) -> str | None:
        """The UID of the job that claimed ``path`` (default: the output); None when nobody did."""
        return _read_id((path or self.path) / JOB_FILE)

    def committed(self) -> bool:
        """The job commit of this very job has finished: ``_SUCCESS`` holds our UID (another's never counts)."""
        return _read_id(self.path / SUCCESS_FILE) == self.job_uid

    def check(self) -> None:
        """Raise OutputConflict unless the output is still claimed by this job (checked before publishing)."""
        holder = self.holder()
        if holder != self.job_uid:
            raise self._taken_over(holder)

    def _taken_over(self, holder: str | None) -> OutputConflict:
        taken = f"taken over by job {holder}" if holder else "removed or replaced"
        return OutputConflict(f"output {self._name} was {taken} while this job ran")

    def claim(self, *, overwrite: bool, started: Callable[[], bool] = lambda: False) -> None:
        """Make sure the output is this job's; idempotent, and safe against concurrent attempts and jobs.

        ``started`` says whether earlier attempts of this job have run (its job directory exists: they
        create it only once they hold the claim). Such a job has lost its output to another one, which it
        must not replace in turn, even with ``overwrite``: replacing happens only before a job's first task.
        """
        for _ in range(CLAIM_TRIES):
            state, holder = self._look()
            if state == "ours":
                return
            if state == "free":
                self._install()
                continue  # won or lost, look again: the winner may be another attempt of this job
            if state == "changing":
                continue
            if started():
                # Look again: the first look may predate the claim that let the job start.
                state, holder = self._look()
                if state == "foreign":
                    raise self._taken_over(holder)
                continue
            if not overwrite:
                who = f"written by job {holder}" if holder else "not written by a mrsched job"
                raise OutputConflict(
                    f"output {self._name} already exists ({who}); set spec.output.overwrite: true "
                    "(--overwrite) to replace it, or choose another output.path"
                )
            self._replace()
        raise TaskError(
            f"cannot claim output {self._name}: it kept changing over {CLAIM_TRIES} tries "
            "(other jobs claiming or replacing it at the same time)"
        )

    def _look(self) -> tuple[str, str | None]:
        """("ours" | "free" | "foreign" | "changing", the holder's UID if any) of the output as it is now."""
        try:
            with os.scandir(self.path) as entries:
                names = {e.name for e in entries}
        except FileNotFoundError:
            return "free", None
        except NotADirectoryError:
            return "foreign", None  # a file where the output should be
        if not names:
            return "free", None
        if JOB_FILE not in names:
            return "foreign", None  # data written by hand, or by a job before claims existed
        holder = self.holder()
        if holder is None:
            return "changing", None  # set aside between the listing and the read
        return ("ours" if holder == self.job_uid else "foreign"), holder

    def _sibling(self, kind: str) -> Path:
        return self.path.parent / f".{self.path.name}.{kind}-{self.attempt_id}"

    def _install(self) -> bool:
        """Rename a staged claim onto the output; False when someone else was there first."""
        staging = self._sibling("claim")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _remove(staging)  # left by an earlier run of this very attempt id
        staging.mkdir()
        _write_id(staging / JOB_FILE, self.job_uid)
        try:
            os.rename(staging, self.path)
        except OSError as err:
            _remove(staging)
            if err.errno in _TAKEN:
                return False
            raise TaskError(f"cannot claim output {self._name}: {err.strerror}") from None
        durable_dir(self.path.parent)
        return True

    def _replace(self) -> None:
        """Set the output aside, claim the empty place, delete what was set aside (``overwrite``)."""
        aside = self._sibling("replaced")
        _remove(aside)
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # another attempt set it aside first: look again
        except OSError as err:
            raise TaskError(f"cannot replace output {self._name}: {err.strerror}") from None
        if self.holder(aside) == self.job_uid:
            # The output was looked at before another attempt of this job replaced it and claimed the place:
            # what was just set aside is this job's own claim. Give it back.
            self._put_back(aside)
            return
        self._install()
        _remove(aside)

    def _put_back(self, aside: Path) -> None:
        try:
            os.rename(aside, self.path)
            return
        except OSError as err:
            if err.errno not in _TAKEN:
                raise TaskError(f"cannot restore output {self._name}: {err.strerror}") from None
        # Yet another attempt of this job claimed the place meanwhile: keep the parts committed so far.
        if self.holder() == self.job_uid:
            for sub in (Path(), Path("_temporary", self.job_uid)):
                for part in (aside / sub).glob("part-*"):
                    (self.path / sub).mkdir(parents=True, exist_ok=True)
                    with contextlib.suppress(FileExistsError):
                        os.link(part, self.path / sub / part.name)
        _remove(aside)

    def mark_success(self) -> None:
        """Write ``_SUCCESS`` (our UID) atomically, then make it and the parts' names durable."""
        staged = self.path / f".{SUCCESS_FILE}.{self.attempt_id}"
        _write_id(staged, self.job_uid)
        try:
            os.rename(staged, self.path / SUCCESS_FILE)
        except FileNotFoundError:
            if not self.committed():  # a concurrent commit attempt removed our staged file after its own
                raise
        durable_dir(self.path)
        for stale in self.path.glob(f".{SUCCESS_FILE}.*"):  # left by killed commit attempts
            stale.unlink(missing_ok=True)

    def remove_set_aside(self) -> None:
        """Delete outputs that attempts set aside to replace them but were killed before deleting them."""
        for stale in self.path.parent.glob(f".{glob.escape(self.path.name)}.replaced-*"):
            _remove(stale)


def commit_job(out: OutputDir, job_dir: Path, names: Sequence[str], *, overwrite: bool) -> None:
    """Hadoop's commitJob: every part of this job into ``<output>``, temporary data removed, ``_SUCCESS`` last.

    Only this job's commit ever moves parts into an output this job claimed, so a part already in ``<output>``
    was moved there by an earlier, interrupted commit attempt of this job. A part neither there nor in the job's
    committed-task area is missing, and the commit fails whatever else the directory holds.
    """
    out.claim(overwrite=overwrite, started=job_dir.exists)
    if out.committed():
        missing = [n for n in names if not (out.path / n).is_file()]
        if missing:
            raise TaskError(
                f"the job was committed but {len(missing)} part(s) are gone from the output, "
                f"e.g. {', '.join(missing[:5])}"
            )
    else:
        area = committed_tasks(out.path, out.job_uid)
        missing = []
        for name in names:
            final = out.path / name
            if final.exists():
                continue
            try:
                os.rename(area / name, final)
            except FileNotFoundError:
                if not final.exists():  # not moved by a concurrent commit attempt either
                    missing.append(name)
        if missing:
            raise TaskError(
                f"cannot commit the job: {len(missing)} part(s) missing, e.g. {', '.join(missing[:5])}"
            )
        out.check()
    shutil.rmtree(out.path / "_temporary", ignore_errors=True)
    shutil.rmtree(job_dir, ignore_errors=True)
    if not out.committed():
        out.mark_success()
        out.check()  # a job that replaced the output at the last moment owns it: this commit did not happen
    out.remove_set_aside()
