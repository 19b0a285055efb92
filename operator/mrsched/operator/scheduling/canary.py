"""Canary maps on nodes tainted as degraded, so that the taint can be lifted when the node recovers.

With ``--taint-degraded-nodes`` a node the soft-fault monitor (seed 002 ch.5) judges degraded carries
``mrsched.dev/degraded=<resource>:NoSchedule``, and jobs that do not tolerate it place nothing there. But the
monitor judges a node only from the durations of the maps it runs: a node that takes no map gives no evidence
that it recovered, and the taint would stay for good. So a tainted node is offered to the policies for one map
at a time, at most once per ``interval_s`` and only while none of the project's tasks runs there: that map (a
*canary*) tolerates the taint, its duration reaches the monitor like any other map's, and once enough canaries
run at the node's nominal speed the verdict clears and the taint is removed. The cost is one slot of a
possibly slow node, against a taint that never lifts. Canaries stop with ``interval_s`` = 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from mrsched.core.model import Explanation
from mrsched.operator.learning.health import TAINT_EFFECT, TAINT_KEY
from mrsched.operator.model.jobspec import JobSpec

#: What a canary pod tolerates: the degraded taint, whatever resource it names, and nothing else.
CANARY_TOLERATION: dict[str, Any] = {"key": TAINT_KEY, "operator": "Exists", "effect": TAINT_EFFECT}


def busy_nodes(task_pods: Iterable[Mapping[str, Any]]) -> set[str]:
    """Nodes with a task pod of the project bound to them that has not finished (Pending or Running)."""
    out = set()
    for pod in task_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if (
            node
            and phase in ("Pending", "Running")
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
        ):
            out.add(node)
    return out


def canary_spec(spec: JobSpec) -> JobSpec:
    """The job's spec for one canary pod: its own tolerations plus the degraded taint's."""
    return dataclasses.replace(spec, tolerations=(*spec.tolerations, CANARY_TOLERATION))


def canary_explanation(explanation: Explanation) -> Explanation:
    """The policy's explanation, with why a task went to a node tainted as degraded."""
    return dataclasses.replace(
        explanation,
        reason=f"{explanation.reason}; canary on a node tainted {TAINT_KEY}: does it still run slow?",
    )


class CanaryGate:
    """Which tainted nodes may take a canary map this round (at most one running per node, one start per
    ``interval_s``). Not persisted: after an operator restart a tainted node gets its next canary at once."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._started: dict[str, float] = {}

    def due(self, tainted: Iterable[str], busy: set[str], now: float) -> set[str]:
        if self.interval_s <= 0:
            return set()
        out = set()
        for node in tainted:
            last = self._started.get(node)
            if node not in busy and (last is None or now - last >= self.interval_s):
                out.add(node)
        return out

    def started(self, node: str, now: float) -> None:
        self._started[node] = now
