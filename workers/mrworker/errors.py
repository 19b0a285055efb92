"""The two ways a task fails on purpose: a bad invocation, or input/data that cannot be processed."""

from __future__ import annotations


class TaskError(Exception):
    """The task cannot complete (malformed input, missing map output, unreadable file); exit code 1."""


class UsageError(TaskError):
    """The arguments or environment are wrong; exit code 2, like a command-line usage error."""


class Terminated(BaseException):
    """SIGTERM arrived (the pod is being deleted or evicted); exit code 143 after cleaning up."""
