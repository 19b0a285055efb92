"""Waiting for and stopping the processes the harness started, so that none outlives a teardown."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids: Iterable[int], timeout_s: float) -> list[int]:
    """Wait until every pid is gone; returns those still alive at the timeout."""
    pending = [p for p in pids if alive(p)]
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        time.sleep(0.05)
        pending = [p for p in pending if alive(p)]
    return pending


def terminate(pids: Iterable[int], timeout_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL whatever is left after ``timeout_s``; reap our own children on the way."""
    pids = [p for p in pids if p > 0]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    stragglers = _wait_reaping(pids, timeout_s)
    for pid in stragglers:
        _signal(pid, signal.SIGKILL)
    left = _wait_reaping(stragglers, 5.0)
    if left:
        raise RuntimeError(f"processes {left} survived SIGKILL")


def _wait_reaping(pids: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    pending = list(pids)
    while pending:
        for pid in list(pending):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pending.remove(pid)
                    continue
            except ChildProcessError:
                pass  # not our child: its parent reaps it
            if not alive(pid):
                pending.remove(pid)
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return pending


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
