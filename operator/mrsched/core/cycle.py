"""What one scheduling round computes once and reuses: kube-scheduler's CycleState, held by the round's
:class:`~mrsched.core.model.ClusterSnapshot` (``snapshot.cycle``).

Values kept per :attr:`ClusterSnapshot.version` (they change when a job or a running attempt does, or a node is
replaced: what is left of a node's allocatable, DARA's window, the nodes with a free slot) and per
:attr:`ClusterSnapshot.jobs_version` (they change only when the owner changes the jobs: the FIFO order, the
smallest request, the task counts, which a round's own placements keep exact), and the slot totals of the
nodes. Pure bookkeeping: the snapshot's methods say what each value means.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from mrsched.core.model import Job

_T = TypeVar("_T")


@dataclass(slots=True)
class CycleState:
    jobs_by_id: dict[str, Job] | None = None
    slot_totals: tuple[int, int, int] | None = None  # (nodes, map, reduce)
    any_by_requests: bool = False
    #: slot_total of by-requests nodes, per (kind, smallest request); cleared when nodes or reserved change.
    capacity_totals: dict[tuple[str, float, float], int] = field(default_factory=dict)
    memo: dict[Hashable, object] = field(default_factory=dict)
    memo_version: int = -1
    jobs_memo: dict[Hashable, object] = field(default_factory=dict)
    jobs_memo_version: int = -1
    #: [running maps, running reduces, pending maps, pending reduces] over every job, or None until asked for;
    #: computed once per jobs version and kept exact by ClusterSnapshot.commit.
    task_counts: list[int] | None = None
    task_counts_version: int = -1

    def memo_at(self, version: int, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per snapshot ``version``."""
        if self.memo_version != version:
            self.memo.clear()
            self.memo_version = version
        try:
            return self.memo[key]  # type: ignore[return-value]
        except KeyError:
            value = self.memo[key] = compute()
            return value

    def memo_jobs_at(self, jobs_version: int, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per snapshot ``jobs_version``."""
        if self.jobs_memo_version != jobs_version:
            self.jobs_memo.clear()
            self.jobs_memo_version = jobs_version
        try:
            return self.jobs_memo[key]  # type: ignore[return-value]
        except KeyError:
            value = self.jobs_memo[key] = compute()
            return value
