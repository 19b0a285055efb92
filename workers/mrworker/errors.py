"""The ways a task fails on purpose: a bad invocation, input/data that cannot be processed, or an output
directory that belongs to someone else."""

from __future__ import annotations


class TaskError(Exception):
    """The task cannot complete (malformed input, missing map output, unreadable file); exit code 1."""


class UsageError(TaskError):
    """The arguments or environment are wrong; exit code 2, like a command-line usage error."""


class OutputConflict(TaskError):
    """The job cannot run with this output: it exists and is not this job's, or another job took it over
    while this one ran. Exit code 3, which the operator treats as permanent (retrying cannot help)."""


class Terminated(BaseException):
    """SIGTERM arrived (the pod is being deleted or evicted); exit code 143 after cleaning up."""
