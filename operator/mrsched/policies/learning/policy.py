"""The learning scheduler itself: supervision, assignment, persistence (seed 000; the package docstring has the
algorithm)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace
from typing import Any, Literal

from mrsched.core.model import (
    ClusterSnapshot,
    Explanation,
    Hints,
    Job,
    NodeMetrics,
    Placement,
    Task,
)
from mrsched.core.policy import Configured, register
from mrsched.policies.hadoop.fair import ComposesFair, Fair, FairConfig
from mrsched.policies.hadoop.slots import SlotPolicy, request_fits
from mrsched.policies.learning.classifiers import NaiveBayes, Perceptron
from mrsched.policies.learning.config import (
    LOG_KEPT,
    MAX_WAIT_S,
    MISSING,
    WINDOW,
    Candidate,
    Decision,
    LearningConfig,
    NodeStats,
)
from mrsched.policies.learning.features import (
    Features,
    NodeClasses,
    NodeFeatures,
    candidate_features,
    node_features,
)
from mrsched.policies.learning.utilities import UtilityContext, combined


@register
class Learning(ComposesFair, Configured[LearningConfig], SlotPolicy):
    name = "learning"
    Config = LearningConfig
    needs_metrics = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.theta = self.cfg.overload_threshold
        self.classifier: NaiveBayes | Perceptron = (
            NaiveBayes() if self.cfg.classifier == "naive-bayes" else Perceptron(self.cfg.perceptron_bias)
        )
        self.classes = NodeClasses()
        self.pending: dict[str, list[Decision]] = {}
        self.log: deque[dict[str, Any]] = deque(maxlen=LOG_KEPT)
        self.judged = 0
        self.overloads = 0
        self.windows: list[float] = []  # accuracy of each full window of 250 decisions (last 100 kept)
        self._window = [0, 0]  # judged, confirmed in the current window
        self.nodes: dict[str, NodeStats] = {}
        self.balances: dict[str, float] = dict(self.cfg.budgets)
        self._utility_context: UtilityContext | None = None
        # The fallback while a node's metrics are unknown: one task per heartbeat, as the learner itself assigns
        # (seed 000 §3), not Hadoop 1 Fair's default of every free slot.
        self.fair = Fair(FairConfig(assign_multiple=False), seed=self.seed)

    # --- supervision -------------------------------------------------------------------------------------

    def overloaded(self, load_ratio: float, free_memory: float | None = None) -> bool:
        """The overload rule (Sec. V-B): load1/cores > θ, strictly ("crossed the limit"); with
        ``minFreeMemory``, also a free-memory share below it (unknown free memory never overloads)."""
        low_memory = (
            self.cfg.min_free_memory is not None
            and free_memory is not None
            and free_memory < self.cfg.min_free_memory
        )
        return load_ratio > self.theta or low_memory

    def _supervise(
        self, node: str, ratio: float, now: float, sampled_at: float, free_memory: float | None = None
    ) -> None:
        """Label the decisions of ``node``'s previous heartbeat(s) with this heartbeat's load and learn.

        "This heartbeat" is a metrics sample taken after the decision: the node's state once the task runs
        (§1.5). An operator round, or a heartbeat, that still sees the sample the decision was made on judges
        nothing; a decision whose task never started (the owner dropped the placement) is no example."""
        keep: list[Decision] = []
        stats = self.nodes[node]
        for d in self.pending.get(node, []):
            if d.task is not None and d.task.pending:
                continue  # never ran: no example
            if sampled_at <= d.at:
                if now - d.at <= MAX_WAIT_S:
                    keep.append(d)  # the next newer sample judges it
                continue
            y = 0 if self.overloaded(ratio, free_memory) else 1
            self.classifier.update(d.features, y)
            self.judged += 1
            self.overloads += 1 - y
            stats.decisions += 1
            stats.overloads += 1 - y
            self._window[0] += 1
            self._window[1] += int(y == d.predicted)  # a prediction "good" is confirmed by y = 1
            if self._window[0] == WINDOW:
                self.windows = [*self.windows, self._window[1] / WINDOW][-100:]
                self._window = [0, 0]
            self.log.append(
                {
                    "node": node,
                    "t": d.at,
                    "judgedAt": now,
                    "job": d.job_id,
                    "type": d.kind,
                    "pGood": round(d.p_good, 4),
                    "loadRatio": round(ratio, 4),  # raw, so the log can be relabelled under another θ
                    "y": y,
                    "f": list(d.features.categories),
                }
            )
        self.pending[node] = keep

    def accuracy(self) -> float | None:
        """The last full window's accuracy, else the running one (None before any judged decision)."""
        if self.windows:
            return self.windows[-1]
        return self._window[1] / self._window[0] if self._window[0] else None

    # --- assignment --------------------------------------------------------------------------------------

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        metrics = snapshot.metrics.get(node, MISSING)
        stats = self.nodes.setdefault(node, NodeStats())
        stats.status = metrics.status
        if metrics.status != "fresh" or metrics.load1 is None:
            return self._fallback(snapshot, node, metrics)
        ratio = metrics.load1 / max(1, snapshot.nodes[node].cores)
        sampled_at = snapshot.now - (metrics.age_s or 0.0)
        self._supervise(node, ratio, snapshot.now, sampled_at, _free_memory(snapshot, node, metrics))
        stats.last_ratio = round(ratio, 3)
        if self.pending.get(node):
            # At most k undecided decisions per node (§1.5): the next task waits for a sample that judges the
            # last one. (The operator runs rounds on every pod event, far more often than metrics change.)
            return []
        placements: list[Placement] = []
        for _ in range(self.cfg.tasks_per_heartbeat):
            placed = self._assign_one(snapshot, node, metrics, ratio)
            if placed is None:
                break
            placements.append(placed)
        return placements

    def _fallback(self, snapshot: ClusterSnapshot, node: str, metrics: NodeMetrics) -> list[Placement]:
        """Metrics unknown: no judgement, no decision; the composed Fair places within the node's slots."""
        waiting = self.pending.get(node, [])
        self.pending[node] = [d for d in waiting if snapshot.now - d.at <= MAX_WAIT_S]
        status = metrics.status if metrics.status != "fresh" else "fresh without load1"
        out = []
        for p in self.fair.assign(snapshot, node):
            self._charge(snapshot.job(p.task.job_id))
            why = f"metrics {status}: Fair fallback; {p.explanation.reason}"
            out.append(replace(p, explanation=Explanation(self.name, 0.0, why)))
        return out

    def _charge(self, job: Job) -> None:
        if job.user in self.balances:
            self.balances[job.user] -= 1.0

    def _context(self, snapshot: ClusterSnapshot) -> UtilityContext:
        """The utilities' view; kept while the snapshot is the same object (it reads the snapshot and the
        balances, which change in place, when a utility is evaluated)."""
        if self._utility_context is None or self._utility_context.snapshot is not snapshot:
            self._utility_context = UtilityContext(
                snapshot,
                self.cfg.map_before_reduce,
                self.balances,
                self.cfg.capacities,
                self.cfg.capacity_rule,
                self.cfg.revenue,
            )
        return self._utility_context

    def candidates(
        self, snapshot: ClusterSnapshot, node: str, metrics: NodeMetrics, *, include_bad: bool = False
    ) -> list[Candidate]:
        """The candidates (A5) the classifier labels good (all of them with ``include_bad``) and whose U > 0,
        best first."""
        ctx = self._context(snapshot)
        out: list[Candidate] = []
        # The node's part of F is the same for every candidate, and jobs share hints: both are computed once.
        # (Lazily: reading the node's class enters it in the vocabulary, which only a candidate may do.)
        node_part: NodeFeatures | None = None
        known: dict[tuple[Hints, str], Features] = {}
        for job in snapshot.jobs:
            kinds: list[Literal["map", "reduce"]] = []
            if job.finished_maps + job.running_maps < len(job.maps):  # pick_map finds the task later
                kinds.append("map")
            if self.pick_reduce(job) is not None:
                kinds.append("reduce")
            for kind in kinds:
                if not request_fits(snapshot, node, job, kind):
                    continue  # the node does not admit its pods, or they would not fit what it has left
                if node_part is None:
                    node_part = node_features(
                        snapshot,
                        node,
                        metrics,
                        theta=self.theta,
                        classes=self.classes,
                        disk_rate=self.cfg.disk_bytes_per_s,
                        network_rate=self.cfg.network_bytes_per_s,
                    )
                hints = job.map_hints if kind == "map" else job.reduce_hints
                f = known.get((hints, kind))
                if f is None:
                    f = known[hints, kind] = candidate_features(hints, kind, node_part)
                if not include_bad and not self.classifier.is_good(f):
                    continue
                u = combined(self.cfg.utilities, job, kind, ctx)
                if u <= 0:
                    continue  # zero utility: not considered
                p = self.classifier.p_good(f)
                if isinstance(self.classifier, Perceptron):
                    key, margin = u, self.classifier.margin(f)
                elif self.cfg.score == "unnormalised":  # D4, in logs: U·P(good)·ΠP(F_i|good) underflows
                    key, margin = math.log(u) + self.classifier.log_joint(f)[1], 0.0
                else:
                    key, margin = u * p, 0.0  # Eq (1)
                out.append(Candidate(job, kind, f, p, u, key, margin))
        # Largest key first; ties: the perceptron's margin, then submission order (the stable sort keeps it).
        out.sort(key=lambda c: (-c.key, -c.margin))
        return out

    def _assign_one(
        self, snapshot: ClusterSnapshot, node: str, metrics: NodeMetrics, ratio: float
    ) -> Placement | None:
        good = self.candidates(snapshot, node, metrics)
        exploring = (
            not good
            and self.cfg.idle_exploration
            and snapshot.running_on(node) == 0
            and not self.overloaded(ratio, _free_memory(snapshot, node, metrics))
        )
        if exploring:  # liveness [ours]: see the module docstring
            good = self.candidates(snapshot, node, metrics, include_bad=True)
        for rank, best in enumerate(good):
            task: Task | None
            if best.kind == "map":
                found = self.pick_map(best.job, snapshot, node)
                task, level = (found[0], f"{found[1]}-local") if found is not None else (None, "")
            else:
                task, level = self.pick_reduce(best.job), "reduce"
            if task is None:
                continue  # defensive: the candidate's task vanished; try the next best
            runner = next((c for c in good[rank + 1 :]), None)
            runner_up = None
            if runner is not None:
                runner_up = (
                    f"{runner.job.id}/{runner.kind} (U={runner.utility:.3g}, P(good)={runner.p_good:.3f})"
                )
            state = (
                "overloaded"
                if self.overloaded(ratio, _free_memory(snapshot, node, metrics))
                else "not overloaded"
            )
            score = best.utility * best.p_good
            reason = (
                ("idle-node exploration, no candidate is good; " if exploring else "")
                + f"{self.classifier.name}: P(good)={best.p_good:.3f}, U={best.utility:.3g}, "
                f"E.U.={score:.3g} (Eq 1); node load1/cores={ratio:.2f} vs θ={self.theta:g} ({state}); {level}"
            )
            placement = Placement(task, node, Explanation(self.name, score, reason, runner_up))
            snapshot.commit(placement)
            self._charge(best.job)
            self.pending.setdefault(node, []).append(
                Decision(
                    node,
                    snapshot.now,
                    best.job.id,
                    best.kind,
                    best.features,
                    best.p_good,
                    int(not exploring),
                    task,
                )
            )
            return placement
        return None

    # --- persistence -------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        model_key = "counts" if isinstance(self.classifier, NaiveBayes) else "weights"
        policy: dict[str, Any] = {
            "classifier": self.classifier.name,
            "theta": self.theta,
            "decisions": self.judged,
            "overloads": self.overloads,
            "accuracy": self.accuracy(),
            "accuracyWindows": list(self.windows),
            "window": list(self._window),
            model_key: self.classifier.state(),
            "nodeClassVocabulary": list(self.classes.names),
            "balances": dict(self.balances),
            "log": list(self.log),
        }
        nodes = {
            name: {
                "decisions": s.decisions,
                "overloads": s.overloads,
                "lastLoadRatio": s.last_ratio,
                "metrics": s.status,
            }
            for name, s in self.nodes.items()
        }
        return {"policy": policy, "nodes": nodes}

    def load_state(self, state: dict[str, Any]) -> None:
        """The inverse of :meth:`state`. The model is restored only if it was saved by the same classifier;
        it is kept as learned even if θ changed (relabelling needs the full log, of which the last 50 are kept)."""
        policy = state.get("policy") or {}
        if policy.get("classifier") == self.classifier.name:
            saved = policy.get("counts" if isinstance(self.classifier, NaiveBayes) else "weights")
            if isinstance(saved, dict):
                self.classifier.load(saved)
        self.judged = int(policy.get("decisions", 0))
        self.overloads = int(policy.get("overloads", 0))
        self.windows = [float(a) for a in policy.get("accuracyWindows", [])]
        window = policy.get("window", [0, 0])
        self._window = [int(window[0]), int(window[1])] if len(window) == 2 else [0, 0]
        self.classes = NodeClasses([str(n) for n in policy.get("nodeClassVocabulary", [])])
        self.balances.update({str(u): float(b) for u, b in (policy.get("balances") or {}).items()})
        self.log = deque(policy.get("log", []), maxlen=LOG_KEPT)
        for name, entry in (state.get("nodes") or {}).items():
            if isinstance(entry, dict):
                ratio = entry.get("lastLoadRatio")
                self.nodes[name] = NodeStats(
                    int(entry.get("decisions", 0)),
                    int(entry.get("overloads", 0)),
                    None if ratio is None else float(ratio),
                    str(entry.get("metrics", "missing")),
                )


def _free_memory(snapshot: ClusterSnapshot, node: str, metrics: NodeMetrics) -> float | None:
    """The node's free memory as a share of its memory, when known."""
    total = snapshot.nodes[node].memory_mb
    free = metrics.memory_available_mb
    return None if free is None or total <= 0 else free / total
