"""Data locality: where a map's input lives relative to a node, and a per-job index to find local maps fast.

Levels follow Hadoop: node-local (a replica on the node), rack-local (a replica in the node's rack), off-rack.
A task without replica information (reduces, generated input) has level "none" and fits anywhere.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Literal

from mrsched.core.model import Job, Node, Task

Level = Literal["node", "rack", "off", "none"]
#: How far a level is from the data: lower is better; "none" counts as local (nothing to fetch).
LEVEL_RANK: dict[str, int] = {"none": 0, "node": 0, "rack": 1, "off": 2}


def locality(task: Task, node: Node, nodes: dict[str, Node]) -> Level:
    if not task.replicas:
        return "none"
    if node.name in task.replicas:
        return "node"
    if any(nodes[r].rack == node.rack for r in task.replicas if r in nodes):
        return "rack"
    return "off"


class MapIndex:
    """Pending maps of one job by node and by rack (Hadoop's nonRunningMapCache), with lazy removal.

    A task that becomes pending again (a failed attempt, a placement its node could not admit) goes back to the
    front of its queues (:meth:`requeue`), as Hadoop 1's ``JobInProgress.failMap`` puts a failed map back at the
    head of the caches: it keeps its locality and is retried first.
    """

    def __init__(self, job: Job, nodes: dict[str, Node]) -> None:
        self.by_node: dict[str, deque[Task]] = defaultdict(deque)
        self.by_rack: dict[str, deque[Task]] = defaultdict(deque)
        self.anywhere: deque[Task] = deque()  # no replica information: local everywhere
        self.all: list[Task] = list(job.maps)
        for task in job.maps:
            if not task.replicas:
                self.anywhere.append(task)
            racks = set()
            for replica in task.replicas:
                self.by_node[replica].append(task)
                if replica in nodes:
                    racks.add(nodes[replica].rack)
            for rack in racks:
                self.by_rack[rack].append(task)
        self._cursor = 0
        self._nodes = nodes

    @staticmethod
    def _first_pending(tasks: deque[Task] | None) -> Task | None:
        # Drop finished and running tasks from the front as we meet them: amortised O(1) per task.
        while tasks and not tasks[0].pending:
            tasks.popleft()
        return tasks[0] if tasks else None

    def best(self, node: Node, max_level: Level = "off") -> tuple[Task, Level] | None:
        """A pending map for ``node`` at the best locality level not worse than ``max_level``."""
        task = self._first_pending(self.by_node.get(node.name))
        if task is not None:
            return task, "node"
        task = self._first_pending(self.anywhere)
        if task is not None:
            return task, "none"
        if LEVEL_RANK[max_level] >= 1:
            task = self._first_pending(self.by_rack.get(node.rack))
            if task is not None:
                return task, "rack"
        if LEVEL_RANK[max_level] >= 2:
            while self._cursor < len(self.all) and not self.all[self._cursor].pending:
                self._cursor += 1
            if self._cursor < len(self.all):
                task = self.all[self._cursor]
                return task, "off" if task.replicas else "none"
        return None

    def has_local(self, node: str) -> bool:
        """Some pending map has a replica on ``node``."""
        return self._first_pending(self.by_node.get(node)) is not None

    def has_rack_local(self, rack: str) -> bool:
        """Some pending map has a replica in ``rack``."""
        return self._first_pending(self.by_rack.get(rack)) is not None

    def has_anywhere(self) -> bool:
        """Some pending map has no replica information (generated input): it is local everywhere."""
        return self._first_pending(self.anywhere) is not None

    def requeue(self, task: Task) -> None:
        """``task`` is pending again: put it back at the front of its node's, rack's or the anywhere queue, and
        let the full scan find it too. A copy still queued behind is dropped lazily once the task runs."""
        if not task.replicas:
            self.anywhere.appendleft(task)
        racks = set()
        for replica in task.replicas:
            self.by_node[replica].appendleft(task)
            if replica in self._nodes:
                racks.add(self._nodes[replica].rack)
        for rack in racks:
            self.by_rack[rack].appendleft(task)
        self._cursor = 0


def hops_within_rack() -> int:
    return 2  # node, rack switch, node


def hops_across_racks() -> int:
    return 4  # node, rack switch, core switch, rack switch, node


def hops(a: Node, b: Node) -> int:
    """Hop distance in Hadoop's tree topology (seed 003's h(u, v), digest A1): 0 on the same node, 2 within a
    rack, 4 across racks; any proportional scale ranks nodes identically."""
    if a.name == b.name:
        return 0
    return hops_within_rack() if a.rack == b.rack else hops_across_racks()
