"""The Coupling Scheduler of Tan, Meng & Zhang (seed 003): reduces launched as map progress pays for them,
placed near the job's intermediate data; maps by Random Peeking instead of delay scheduling.

Per heartbeat of node v (digest §1.6): (a) maps — Algorithm 3 over the candidates that Fair's slot allocation
(without its delay timers) names for v's free map slots; (b) reduces — Algorithm 2, which selects jobs by
Algorithm 1's mismatch. No reduce starts any other way (never greedily, no slow-start).

* **Algorithm 1** (:func:`mismatch`): δ = 1 − exp(−R/threshold), unit = δ·M/R maps pay for one reduce;
  mismatch = (finishedMaps/unit − (finished + running reduces + 1))/R, or 4 + 1/pendingReduces once no map is
  pending, 0 when no reduce is pending.
* **Eq 1** (:func:`transfer_costs`): C(v) = Σ_u w(u)·h(v, u) over the nodes u holding the job's map output;
  the centrality is the cheapest node with a free reduce slot (V_r), random tie-break.
* **Algorithm 2** (:class:`WaitScheduling`): one global candidate job; the heartbeat that selects it launches
  nothing; for N heartbeats (N = nodes) only the centrality node may take the reduce, then the 2nd-3rd, then
  the 4th-7th of the D = 7 cheapest nodes, then any node for N more heartbeats, then the candidate is dropped.
  At most one reduce per heartbeat, cluster-wide; no second reduce of the job on a node in rounds 1-3.
* **Eq 3 / Algorithm 3** (:func:`launch_probability`): a candidate with input on v launches at once (p = 1);
  otherwise with p_j = 1 − α_j·p̂^β_j·(1 − e^(−N̂_m)), β_j = 0.1 + 0.9·(1 − exp(−M_p/max(N̂_m, 1))); a
  skipped candidate leaves its slot empty for this heartbeat (A9).

Readings where the paper is silent (digest §1.9): hops 0 / 2 / 4 (A1); w_i(u) = MB of finished maps' output
on u (A2, :attr:`mrsched.core.model.Job.map_output_mb`); the candidate list is recomputed on every heartbeat
(A3, option ``recomputeCandidates``); a candidate that has no pending reduce left is dropped (A5); K_1 and K_2
are counted over the other nodes (A7); "rack data" = a pending map with a replica in v's rack (A8).

In the operator a scheduling round offers every node once; the nodes are shuffled first, as heartbeats arrive
in random order (§1.4, "heartbeats arrive once per node per round in random order").

**On Kubernetes** [ours]: coupling decides when a job's reduces start and where (near its intermediate data), over
Fair's map allocation. By requests maps and reduces draw on one allocatable: a reduce is launched only where its
pod fits (``free_slots``), and concurrency is otherwise the requests'. Its reduce candidate (Algorithm 2) is
offered the heartbeat's node before the maps once the candidate's maps are all placed
(``hadoop.slots.reduces_first``): maps placed first would take every place and leave it waiting until no map of
any job is left to start. What a heartbeat leaves free after that (the one map a heartbeat of Fair's allocation,
a slot Random Peeking skipped) goes to Fair's next job's maps (``SlotPolicy.work_conserving``): on Kubernetes an
empty place is a pod that could run. Reduces stay Algorithm 2's alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from mrsched.core.locality import hops_across_racks, hops_within_rack
from mrsched.core.model import ClusterSnapshot, Job, Placement, Task, TaskType
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.policies.hadoop.fair import ComposesFair, Fair, FairConfig
from mrsched.policies.hadoop.slots import SlotPolicy, maps_placed, reduces_first, request_fits

#: Algorithm 1 line 9: a job whose maps are all launched outranks every job still mapping (line 7 < 4).
MAP_PHASE_OVER_BONUS = 4.0
#: Algorithm 2's groups: positions 1, 2-3 and 4-7 of the candidate list L(J).
GROUPS = ((0, 1), (1, 3), (3, 7))


class CouplingConfig(PolicyConfig):
    threshold: float = Field(3.0, gt=0)  # Algorithm 1's δ = 1 − exp(−R/threshold); the paper's example
    candidate_nodes: int = Field(7, alias="candidateNodes", ge=1)  # D, the length of L(J)
    #: β of Eq 3 fixed (Fig 11/15's ablation with 0.1 and 0.5); None = adaptive (Eq 3).
    beta: float | None = Field(None, gt=0)
    alpha_rack_with_reduce: float = Field(0.7, alias="alphaRackWithReduce", ge=0, le=1)
    alpha_rack: float = Field(0.8, alias="alphaRack", ge=0, le=1)
    alpha_other: float = Field(1.0, alias="alphaOther", ge=0, le=1)
    #: K of Algorithm 3: other nodes sampled per heartbeat; None = all of them (the paper's 62-node setting).
    sampled_nodes: int | None = Field(None, alias="sampledNodes", ge=1)
    #: A3: recompute L(J) on every heartbeat while waiting (True) or freeze it when J is selected.
    recompute_candidates: bool = Field(True, alias="recomputeCandidates")
    #: Rank for L(J) only the nodes that run no reduce of J yet (our variant): the literal Algorithm 2 ranks every
    #: node of V_r and then skips the ones running J's reduces (its line 12), which on a job whose output is
    #: spread evenly costs a whole round of N heartbeats per reduce once the best nodes have one.
    spread_reduces: bool = Field(False, alias="spreadReduces")
    #: Fill every free map slot per heartbeat; Hadoop's Fair Scheduler (the allocator) fills one by default.
    assign_multiple: bool = Field(False, alias="assignMultiple")


def delta(reduces: int, threshold: float = 3.0) -> float:
    """Algorithm 1 line 3: the fraction of maps by whose completion all reduces should have launched."""
    return 1.0 - math.exp(-reduces / threshold)


def mismatch(job: Job, threshold: float = 3.0) -> float:
    """Algorithm 1: how far the job's map progress is ahead of its reduce progress (> 0: launch a reduce)."""
    pending = job.unstarted("reduce")
    if pending <= 0:
        return 0.0  # lines 11-12
    if job.unstarted("map") <= 0:
        return MAP_PHASE_OVER_BONUS + 1.0 / pending  # lines 8-9
    r = len(job.reduces)
    unit = delta(r, threshold) * len(job.maps) / r  # line 4
    map_progress = job.finished_maps / unit  # line 5
    reduce_progress = job.finished_reduces + job.running_reduces + 1  # line 6: launched so far, plus the next
    return (map_progress - reduce_progress) / r  # line 7


def transfer_costs(job: Job, snapshot: ClusterSnapshot, nodes: list[str]) -> dict[str, float]:
    """Eq 1: C(v) = Σ_u w(u)·h(v, u), MB·hops of pulling the job's intermediate data to each of ``nodes``.

    With h of :func:`~mrsched.core.locality.hops` (0 / 2 / 4) the sum is 2·(W_rack(v) − w(v)) + 4·(W − W_rack(v))
    for the job's total W and its total W_rack(v) in v's rack: O(1) per node instead of O(nodes holding data),
    which matters on the 62-node run where every heartbeat of a waiting candidate re-ranks every node (A3)."""
    total = 0.0
    by_rack: dict[str, float] = {}
    for u, mb in job.map_output_mb.items():
        if u in snapshot.nodes and mb > 0:
            total += mb
            rack = snapshot.nodes[u].rack
            by_rack[rack] = by_rack.get(rack, 0.0) + mb
    same, cross = hops_within_rack(), hops_across_racks()
    costs = {}
    for v in nodes:
        own = job.map_output_mb.get(v, 0.0)
        in_rack = by_rack.get(snapshot.nodes[v].rack, 0.0)
        costs[v] = same * (in_rack - own) + cross * (total - in_rack)
    return costs


def _with_free_slot(snapshot: ClusterSnapshot, kind: TaskType) -> list[str]:
    """The nodes with a free slot of ``kind`` (V_m, V_r), in the snapshot's order, once per snapshot version."""
    return snapshot.memo(
        ("coupling.free", kind), lambda: [n for n in snapshot.nodes if snapshot.free_slots(n, kind) > 0]
    )


def beta(pending: int, free_nodes_estimate: float) -> float:
    """Eq 3: β_j = 0.1 + 0.9·(1 − exp(−M_p / max(N̂_m, 1)))."""
    return 0.1 + 0.9 * (1.0 - math.exp(-pending / max(free_nodes_estimate, 1.0)))


def launch_probability(
    alpha: float, local_fraction: float, beta_j: float, free_nodes_estimate: float
) -> float:
    """Eq 3 for a node without the job's input: p_j = 1 − α_j·(p̂_m)^β_j·(1 − e^(−N̂_m))."""
    return 1.0 - alpha * math.pow(local_fraction, beta_j) * (1.0 - math.exp(-free_nodes_estimate))


@dataclass
class WaitScheduling:
    """Algorithm 2's persistent state: one global candidate job, heartbeats waited, its mismatch m°."""

    candidate: str | None = None
    wait: int = 0
    selected_mismatch: float = 0.0
    frozen: list[str] | None = None  # L(J) when ``recomputeCandidates`` is off
    ties: dict[str, float] = field(
        default_factory=dict
    )  # each node's random tie-break key for this selection

    def reset(self) -> None:
        self.candidate, self.wait, self.selected_mismatch, self.frozen = None, 0, 0.0, None
        self.ties = {}


@register
class Coupling(ComposesFair, Configured[CouplingConfig], SlotPolicy):
    name = "coupling"
    Config = CouplingConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # §2.2: the map fairness is Fair Scheduler's slot allocation; its delay timers are never consulted.
        self.fair = Fair(FairConfig(assign_multiple=self.cfg.assign_multiple), seed=self.seed)
        self.waiting = WaitScheduling()

    # --- a round: every node heartbeats once, in random order ----------------------------------------------

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        order = list(nodes)
        self.rng.shuffle(order)
        return super().schedule_round(snapshot, order)

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        # The reduce candidate of Algorithm 2 before the maps where its maps are all placed (reduces_first).
        candidate = next((j for j in snapshot.jobs if j.id == self.waiting.candidate), None)
        first = reduces_first(snapshot, node) and candidate is not None and maps_placed(candidate)
        reduce = self._reduce(snapshot, node) if first else None
        placements = [reduce] if reduce is not None else []
        placements += self._maps(snapshot, node)
        if not first:
            reduce = self._reduce(snapshot, node)
            if reduce is not None:
                placements.append(reduce)
        if snapshot.nodes[node].by_requests:  # what Random Peeking and the one map a heartbeat left empty
            placements += self.work_conserving(
                snapshot,
                node,
                lambda kind: self.fair.fair_order(snapshot, kind),
                "work-conserving: no candidate took this room, Fair's next job does",
                reduces=False,  # Algorithm 2's, which waits for a node near the map output
            )
        return placements

    # --- Algorithm 3: Random Peeking Scheduling of maps -----------------------------------------------------

    def _maps(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        placements: list[Placement] = []
        skipped: set[str] = set()
        free = snapshot.free_slots(node, "map")
        while free > 0:
            job = next(
                (
                    j
                    for j in self.fair.fair_order(snapshot, "map")
                    if j.id not in skipped and j.unstarted("map") > 0
                ),
                None,
            )
            if job is None:
                break
            if not request_fits(
                snapshot, node, job, "map"
            ):  # filtered out here: not a candidate, no slot spent
                skipped.add(job.id)
                continue
            free -= 1  # launched or skipped, this slot is spent for this heartbeat (A9)
            placed = self._peek(snapshot, node, job)
            if placed is None:
                skipped.add(job.id)
            else:
                placements.append(placed)
                self.fair.record_placed(snapshot, job, "map")
            if not self.cfg.assign_multiple:
                break
        return placements

    def _peek(self, snapshot: ClusterSnapshot, node: str, job: Job) -> Placement | None:
        """Algorithm 3 lines 3-8 for one candidate job: launch it here, or skip with probability 1 − p_j."""
        index = self.map_index(job, snapshot)
        if index.has_local(node) or index.has_anywhere():
            found = index.best(snapshot.nodes[node], "node")
            if found is not None:
                task, level = found
                return self.place(snapshot, task, node, f"fair-share candidate; {level}-local (p_j = 1)", 1.0)
        p, why = self.peek_probability(snapshot, node, job)
        draw = self.rng.random()
        if draw >= p:
            return None
        found = index.best(snapshot.nodes[node], "off")  # rack-local first
        if found is None:
            return None
        task, level = found
        return self.place(
            snapshot, task, node, f"fair-share candidate; {level}-local, {why}, drew {draw:.2f}", p
        )

    def peek_probability(self, snapshot: ClusterSnapshot, node: str, job: Job) -> tuple[float, str]:
        """Eq 3's p_j for a node without the job's input, counting K_1 and K_2 over the other nodes (A7)."""
        index = self.map_index(job, snapshot)
        others = [n for n in snapshot.nodes if n != node]
        if self.cfg.sampled_nodes is not None and self.cfg.sampled_nodes < len(others):
            others = self.rng.sample(others, self.cfg.sampled_nodes)
        k = max(len(others), 1)
        k1 = sum(1 for n in others if index.has_local(n))
        # Every other node asked: count those with a free map slot from the version's list.
        if len(others) == len(snapshot.nodes) - 1:
            free_map = _with_free_slot(snapshot, "map")
            k2 = len(free_map) - (1 if snapshot.free_slots(node, "map") > 0 else 0)
        else:
            k2 = sum(1 for n in others if snapshot.free_slots(n, "map") > 0)
        local_fraction = k1 / k
        free_estimate = (len(snapshot.nodes) - 1) * k2 / k
        b = self.cfg.beta if self.cfg.beta is not None else beta(job.unstarted("map"), free_estimate)
        here = snapshot.nodes[node]
        if index.has_rack_local(here.rack):  # A8
            runs_reduce = any(
                a.task.job_id == job.id and a.task.kind == "reduce" for a in snapshot.running.get(node, ())
            )
            alpha = self.cfg.alpha_rack_with_reduce if runs_reduce else self.cfg.alpha_rack
        else:
            alpha = self.cfg.alpha_other
        p = launch_probability(alpha, local_fraction, b, free_estimate)
        return (
            p,
            f"p_j = {p:.2f} (p̂ = {local_fraction:.2f}, N̂_m = {free_estimate:.1f}, β = {b:.2f}, α = {alpha})",
        )

    # --- Algorithms 1 and 2: coupled, wait-scheduled reduces ------------------------------------------------

    def candidate_list(self, snapshot: ClusterSnapshot, job: Job) -> list[str]:
        """L(J): the ≤ D nodes with a free reduce slot (V_r) in increasing Eq 1 cost, random tie-break."""
        free = _with_free_slot(snapshot, "reduce")
        if job.nodes is not None:  # Kubernetes' filters first: only the nodes that admit the job's pods
            free = [n for n in free if snapshot.admits(n, job)]
        if self.cfg.spread_reduces:
            free = [n for n in free if not self._runs_reduce_of(snapshot, n, job)]
        # A node's cost does not depend on which others are asked: every node's, once per snapshot version (a
        # waiting candidate re-ranks the nodes at every heartbeat, and most heartbeats change nothing).
        costs = snapshot.memo(
            ("coupling.costs", job.id), lambda: transfer_costs(job, snapshot, list(snapshot.nodes))
        )
        # Ties are broken at random once per selection, not per heartbeat: the centrality of a job whose nodes
        # tie (no map output yet, or output spread evenly) stays one node for the whole wait, as in the paper.
        ties = self.waiting.ties
        for n in free:
            if n not in ties:
                ties[n] = self.rng.random()
        return sorted(free, key=lambda n: (costs[n], ties[n]))[: self.cfg.candidate_nodes]

    def select(self, snapshot: ClusterSnapshot) -> tuple[Job, float] | None:
        """Algorithm 2 line 2: the job with the largest mismatch (random tie-break), if it is positive."""
        best: tuple[float, float, Job] | None = None
        for job in snapshot.jobs:
            m = mismatch(job, self.cfg.threshold)
            key = (m, self.rng.random())
            if best is None or key > best[:2]:
                best = (m, key[1], job)
        if best is None or best[0] <= 0:
            return None
        return best[2], best[0]

    def _reduce(self, snapshot: ClusterSnapshot, node: str) -> Placement | None:
        """Algorithm 2 for the heartbeat of ``node``: at most one reduce, cluster-wide."""
        w = self.waiting
        if w.candidate is None:
            chosen = self.select(snapshot)
            if chosen is not None:
                chosen_job, m = chosen
                w.candidate, w.wait, w.selected_mismatch = chosen_job.id, 0, m
                if not self.cfg.recompute_candidates:
                    w.frozen = self.candidate_list(snapshot, chosen_job)
            return None  # the selecting heartbeat launches nothing
        job = next((j for j in snapshot.jobs if j.id == w.candidate), None)
        if job is None or job.unstarted("reduce") <= 0:
            w.reset()  # A5: finished, failed or fully launched meanwhile
            return None
        w.wait += 1
        n = len(snapshot.nodes)
        ranked = w.frozen if w.frozen is not None else self.candidate_list(snapshot, job)
        for g, (lo, hi) in enumerate(GROUPS, start=1):
            # Lines 7-9: in round g, a node of group g that runs no reduce of the candidate takes it; if the
            # launch fails (no free slot: only with a frozen list), go on to the next group's round at once.
            current = g == (w.wait - 1) // n + 1
            if current and node in ranked[lo:hi] and not self._runs_reduce_of(snapshot, node, job):
                if snapshot.free_slots(node, "reduce") > 0:
                    rank = ranked.index(node) + 1
                    why = f"rank {rank} of {len(ranked)} by Eq 1 cost"
                    return self._launch_reduce(snapshot, node, job, f"wait round {g}, {why}")
                w.wait = g * n + 1
        if 3 * n < w.wait <= 4 * n and snapshot.free_slots(node, "reduce") > 0 and snapshot.admits(node, job):
            return self._launch_reduce(snapshot, node, job, "wait round 4: any node")
        if w.wait > 4 * n:
            w.reset()  # line 12: give up; re-select on the next heartbeat
        return None

    @staticmethod
    def _runs_reduce_of(snapshot: ClusterSnapshot, node: str, job: Job) -> bool:
        return any(
            a.task.job_id == job.id and a.task.kind == "reduce" for a in snapshot.running.get(node, ())
        )

    def _launch_reduce(self, snapshot: ClusterSnapshot, node: str, job: Job, why: str) -> Placement | None:
        if not request_fits(snapshot, node, job, "reduce"):
            return None
        task: Task | None = next((t for t in job.reduces if t.pending), None)
        if task is None:
            return None
        m = self.waiting.selected_mismatch
        self.waiting.reset()
        reason = f"mismatch {m:.3f} (largest); centrality of its map output: {why}"
        return self.place(snapshot, task, node, reason, m)

    # --- hooks: the composed Fair keeps its own bookkeeping current ------------------------------------------

    def on_job_finished(self, job: Job, now: float) -> None:
        super().on_job_finished(job, now)
        if self.waiting.candidate == job.id:
            self.waiting.reset()
