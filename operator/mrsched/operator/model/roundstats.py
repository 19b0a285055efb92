"""What one round of the scheduling loop did: the loop returns it, and the parts that do the round's work
(``reconcile``, ``podwrites``) count into it, so it lives below all of them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RoundStats:
    created: int = 0  # task pods created
    deleted: int = 0  # task pods deleted (lost or stuck attempts, pods of failed jobs)
    jobs: int = 0  # MapReduceJobs listed
    #: of them, read and reconciled again (the others were as the last round left them: jobcache), and why
    #: (JobCache.misses)
    read: int = 0
    read_why: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # the round's duration (mrsched_loop_seconds)
    placed: dict[str, int] = field(default_factory=dict)  # policy -> placements it returned
    #: policies whose round was skipped: no task to start and nothing changed since their last (quiet.py)
    skipped: list[str] = field(default_factory=list)
