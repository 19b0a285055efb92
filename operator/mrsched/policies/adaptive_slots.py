"""Self-adaptive slots (seed 001, Elkholy & Sallam, Algorithm 1 "Slot Allocation Algorithm").

Every node keeps its own map-slot count m_i and reduce-slot count r_i, and each heartbeat moves them by at
most one slot, driven by the node's CPU utilisation U_i (averaged over the last interval) against the user's
threshold U*:

* first heartbeat of a node: m_i = its hardware threads, r_i = ``initialReduceSlots`` (2 in the paper);
* later heartbeats, with m_fi = m_i − running maps, r_fi = r_i − running reduces, Tm_p / Tr_p = pending
  maps / reduces over all jobs:

  - U_i < U* (strict): if m_fi = 0 and Tm_p > 0 and m_i < m_Max then m_i + 1,
    else if r_fi = 0 and Tr_p > 0 and r_i < r_Max then r_i + 1;
  - U_i ≥ U*: if m_fi > 0 and m_i > m_Min then m_i − 1, else if r_fi > 0 and r_i > r_Min then r_i − 1.

Readings of the paper (digest ``elkholy-sallam.md`` §1.6):

* A1: CPU utilisation only, as Algorithm 1 prints it (the prose also names memory; no memory guard here).
* A2: "cores" are hardware threads, i.e. ``Node.cores`` (logical CPUs): the 4-thread i3 starts at 4.
* A3: Algorithm 1 runs first on the heartbeat's status (the running counts of the measured interval); then the
  node's free slots, m_i − running maps and r_i − running reduces, are filled.
* A4: Tr_p counts only reduces of jobs past their reduce slow-start (``Job.reduces_allowed``), so that r_i
  does not grow for jobs that cannot use the slot yet. Tm_p counts maps not finished and not running.
* A5: the paper never says which job gets a free slot. The job choice is the real Fair policy's (composed,
  like :mod:`mrsched.policies.dara` does), the paper's baseline, so that only the slot counts differ.
* A6: only idle slots are removed; running tasks are never killed, so a fully busy node keeps its slots
  until a task ends. "Full" is read as m_fi ≤ 0 (running may exceed m_i only with restored or foreign state).

What is ours, not the paper's:

* Bounds m_Min..m_Max = 1..8, r_Min..r_Max = 1..4 and U* = 0.95 are defaults (the paper leaves them to a
  configuration file); the initial m_i and r_i are clamped to the bounds.
* Filling: the composed Fair runs with ``assignMultiple: true`` unless the ``fair`` option says otherwise.
  Hadoop's FairScheduler hands out one map per heartbeat by default, which would leave slots that Algorithm 1
  just added idle for several heartbeats (and idle slots are exactly what it removes at U ≥ U*); the paper's
  scheduler fills the slots it advertises, as Hadoop 1's JobQueueTaskScheduler does.
* Metrics fallback: when the node's metrics are not ``fresh`` (stale, missing, unavailable) or carry no CPU
  utilisation, Algorithm 1 is skipped for that heartbeat (the issue's "keep the last slot counts"): U is
  unknown, never taken as 0 (which would grow) or 1 (which would shrink). Tasks are still assigned within the
  kept counts; such heartbeats are counted per node. The first heartbeat needs no metrics.
* A "heartbeat" is one ``assign`` call for the node: the simulator calls it once per node heartbeat.
* ``state()`` keeps m_i, r_i per node, so that a restarted operator resumes from them instead of
  re-initialising.

**On Kubernetes** [ours]: Algorithm 1 decides m_i and r_i from CPU utilisation. By requests
its counts are a cap inside the node's allocatable (what the running pods leave binds as well), so it runs
fewer tasks than the requests allow while U_i >= U*, never more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from mrsched.core.model import ClusterSnapshot, Explanation, Job, Node, Placement
from mrsched.core.policy import Configured, Policy, PolicyConfig, register
from mrsched.policies.hadoop.fair import ComposesFair, Fair, FairConfig

Decision = Literal["init", "grow-map", "grow-reduce", "shrink-map", "shrink-reduce", "kept", "fallback"]


class AdaptiveSlotsConfig(PolicyConfig):
    # U*: the paper leaves it to the user; 0.95 matches its master held at ~98-100 % CPU (digest §1.4).
    utilisation_target: float = Field(0.95, alias="utilisationTarget", gt=0.0, le=1.0)
    min_map_slots: int = Field(1, alias="minMapSlots", ge=1)
    # Slave1 reached 7 map slots in the paper's Fig. 6, so m_Max ≥ 7.
    max_map_slots: int = Field(8, alias="maxMapSlots", ge=1)
    min_reduce_slots: int = Field(1, alias="minReduceSlots", ge=1)
    max_reduce_slots: int = Field(4, alias="maxReduceSlots", ge=1)
    initial_reduce_slots: int = Field(2, alias="initialReduceSlots", ge=1)
    # Options of the composed Fair policy (job order, A5); ``assignMultiple`` defaults to true here.
    fair: dict[str, Any] = Field(default_factory=dict)

    @field_validator("fair")
    @classmethod
    def _fair_options_valid(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            FairConfig.model_validate(value)
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
            raise ValueError(f"bad Fair options: {problems}") from None
        return value

    @model_validator(mode="after")
    def _bounds_ordered(self) -> AdaptiveSlotsConfig:
        if self.min_map_slots > self.max_map_slots:
            raise ValueError(f"minMapSlots {self.min_map_slots} > maxMapSlots {self.max_map_slots}")
        if self.min_reduce_slots > self.max_reduce_slots:
            raise ValueError(
                f"minReduceSlots {self.min_reduce_slots} > maxReduceSlots {self.max_reduce_slots}"
            )
        return self

    def fair_config(self) -> FairConfig:
        """The composed Fair's options: the ``fair`` option, with assignMultiple true unless it is set there."""
        options = dict(self.fair)
        if "assignMultiple" not in options and "assign_multiple" not in options:
            options["assignMultiple"] = True
        return FairConfig.model_validate(options)


@dataclass
class _NodeSlots:
    """Algorithm 1's state of one node, plus what the explanation and the operator's gauges show."""

    map_slots: int
    reduce_slots: int
    cpu: float | None = None  # U_i of the latest heartbeat that had one
    metrics: str | None = None  # status of the latest heartbeat's metrics
    changes: int = 0  # slot changes so far
    fallbacks: int = 0  # heartbeats whose metrics were not usable (slot counts kept)
    changed_on: float | None = None  # when the utilisation sample of the last slot change was taken


def _pending_maps(jobs: list[Job]) -> int:
    return sum(max(0, j.unstarted("map")) for j in jobs)


def _pending_reduces(jobs: list[Job]) -> int:
    # A4: only reduces Hadoop would hand out now (the job is past its slow-start point).
    return sum(max(0, j.unstarted("reduce")) for j in jobs if j.reduces_allowed())


@register
class AdaptiveSlots(ComposesFair, Configured[AdaptiveSlotsConfig], Policy):
    name = "adaptive-slots"
    Config = AdaptiveSlotsConfig
    needs_metrics = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A5: the job in a free slot is the one Fair (the paper's baseline) would choose.
        self.fair = Fair(self.cfg.fair_config(), seed=self.seed)
        self._nodes: dict[str, _NodeSlots] = {}
        self._shown: dict[str, tuple[Node, int, int, Node]] = {}  # node -> (original, m_i, r_i, shown copy)

    # --- read-only views -------------------------------------------------------------------------------

    def slots(self, node: str) -> tuple[int, int] | None:
        """(m_i, r_i) of ``node``, or None before its first heartbeat."""
        state = self._nodes.get(node)
        return None if state is None else (state.map_slots, state.reduce_slots)

    def slot_counts(self) -> dict[str, tuple[int, int]]:
        return {node: (s.map_slots, s.reduce_slots) for node, s in self._nodes.items()}

    # --- Algorithm 1 -------------------------------------------------------------------------------------

    def _clamp(self, value: int, kind: Literal["map", "reduce"]) -> int:
        low, high = (
            (self.cfg.min_map_slots, self.cfg.max_map_slots)
            if kind == "map"
            else (self.cfg.min_reduce_slots, self.cfg.max_reduce_slots)
        )
        return max(low, min(high, value))

    def update_slots(self, snapshot: ClusterSnapshot, node: str) -> tuple[Decision, str]:
        """Algorithm 1 for one heartbeat of ``node``: update m_i, r_i; return what was decided and why."""
        state = self._nodes.get(node)
        if state is None:
            cores = snapshot.nodes[node].cores
            state = self._nodes[node] = _NodeSlots(
                self._clamp(cores, "map"), self._clamp(self.cfg.initial_reduce_slots, "reduce")
            )
            return "init", f"first heartbeat: map slots from {cores} hardware threads, reduce slots initial"
        metrics = snapshot.metrics.get(node)
        status = "missing" if metrics is None else metrics.status
        state.metrics = status
        u = metrics.cpu_utilisation if metrics is not None and status == "fresh" else None
        if u is None:
            # U unknown: neither grow nor shrink on a guess (issue: keep the last slot counts).
            state.fallbacks += 1
            what = f"metrics {status}" if status != "fresh" else "metrics fresh but no CPU utilisation"
            return "fallback", f"{what}: slot counts kept"
        state.cpu = u
        # At most one step per utilisation report, as one TaskTracker heartbeat carries one: the operator also
        # runs rounds when a pod ends, and those must not move the slots again on a sample already acted on.
        # (They may act on it if nothing changed yet: a slot a finished task frees is idle only until the
        # round fills it, and Algorithm 1 removes idle slots when U ≥ U*.)
        sample_at = snapshot.now - (metrics.age_s or 0.0) if metrics is not None else snapshot.now
        if state.changed_on is not None and sample_at <= state.changed_on + 1e-9:
            return "kept", f"kept: the slots already moved on this utilisation sample (U {u:.2f})"
        decision, why = self._algorithm_1(snapshot, node, state, u)
        if decision != "kept":
            state.changed_on = sample_at
        return decision, why

    def _algorithm_1(
        self, snapshot: ClusterSnapshot, node: str, state: _NodeSlots, u: float
    ) -> tuple[Decision, str]:
        target = self.cfg.utilisation_target
        free_maps = state.map_slots - snapshot.running_on(node, "map")
        free_reduces = state.reduce_slots - snapshot.running_on(node, "reduce")
        if u < target:  # strict: U = U* shrinks
            # Tm_p and Tr_p matter (to the rule and to why it kept) only when that kind has no free slot: the
            # sums over every job are skipped otherwise, as they are on most heartbeats.
            pending_maps = _pending_maps(snapshot.jobs) if free_maps <= 0 else 0
            pending_reduces = _pending_reduces(snapshot.jobs) if free_reduces <= 0 else 0
            if free_maps <= 0 and pending_maps > 0 and state.map_slots < self.cfg.max_map_slots:
                state.map_slots += 1
                state.changes += 1
                return "grow-map", (
                    f"+1 map slot: U {u:.2f} < U* {target:.2f}, all {state.map_slots - 1} map slots busy, "
                    f"{pending_maps} maps pending"
                )
            if free_reduces <= 0 and pending_reduces > 0 and state.reduce_slots < self.cfg.max_reduce_slots:
                state.reduce_slots += 1
                state.changes += 1
                return "grow-reduce", (
                    f"+1 reduce slot: U {u:.2f} < U* {target:.2f}, all {state.reduce_slots - 1} reduce slots "
                    f"busy, {pending_reduces} reduces pending"
                )
            why_map = self._why_not_grow(free_maps, pending_maps, self.cfg.max_map_slots, "map")
            why_reduce = self._why_not_grow(
                free_reduces, pending_reduces, self.cfg.max_reduce_slots, "reduce"
            )
            return "kept", f"kept: U {u:.2f} < U* {target:.2f} but {why_map}, {why_reduce}"
        if free_maps > 0 and state.map_slots > self.cfg.min_map_slots:
            state.map_slots -= 1
            state.changes += 1
            return "shrink-map", (
                f"-1 map slot: U {u:.2f} >= U* {target:.2f}, {free_maps} of {state.map_slots + 1} map slots idle"
            )
        if free_reduces > 0 and state.reduce_slots > self.cfg.min_reduce_slots:
            state.reduce_slots -= 1
            state.changes += 1
            return "shrink-reduce", (
                f"-1 reduce slot: U {u:.2f} >= U* {target:.2f}, {free_reduces} of {state.reduce_slots + 1} "
                "reduce slots idle"
            )
        why_map = self._why_not_shrink(free_maps, self.cfg.min_map_slots, "map")
        why_reduce = self._why_not_shrink(free_reduces, self.cfg.min_reduce_slots, "reduce")
        # A6: a busy slot is never taken away (no task is killed); it goes once idle, if U is still high.
        return "kept", f"kept: U {u:.2f} >= U* {target:.2f} but {why_map}, {why_reduce}"

    @staticmethod
    def _why_not_grow(free: int, pending: int, high: int, kind: str) -> str:
        if free > 0:
            return f"{free} {kind} slot{'s' if free != 1 else ''} free"
        if pending <= 0:
            return f"no {kind}s pending"
        return f"{kind} slots at max {high}"

    @staticmethod
    def _why_not_shrink(free: int, low: int, kind: str) -> str:
        if free <= 0:
            return f"no idle {kind} slot"
        return f"{kind} slots at min {low}"

    # --- the heartbeat -------------------------------------------------------------------------------------

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        _, why = self.update_slots(snapshot, node)  # A3: slots first, then tasks into the free slots
        state = self._nodes[node]
        original = snapshot.nodes[node]
        # Fair reads a node's slots from the snapshot: show it m_i, r_i for this call only, so that the rest of
        # the round (and the owner of the snapshot) keeps the node as it is.
        snapshot.replace_node(node, self._shown_node(original, state))
        try:
            placements = self.fair.assign(snapshot, node)
        finally:
            snapshot.replace_node(node, original)
        head = f"map slots {state.map_slots}, reduce slots {state.reduce_slots} ({why})"
        return [
            replace(
                p,
                explanation=Explanation(
                    self.name,
                    p.explanation.score,
                    f"{head}; Fair order: {p.explanation.reason}",
                    p.explanation.runner_up,
                ),
            )
            for p in placements
        ]

    def _shown_node(self, original: Node, state: _NodeSlots) -> Node:
        """``original`` with m_i and r_i as its slots; the copy is kept while neither changes (nodes are
        immutable, and a copy per heartbeat was a tenth of a whole day's run)."""
        cached = self._shown.get(original.name)
        if cached is not None:
            was, maps, reduces, shown = cached
            if was is original and (maps, reduces) == (state.map_slots, state.reduce_slots):
                return shown
        shown = replace(original, map_slots=state.map_slots, reduce_slots=state.reduce_slots)
        self._shown[original.name] = (original, state.map_slots, state.reduce_slots, shown)
        return shown

    # --- persistence ---------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "nodes": {
                node: {
                    "mapSlots": s.map_slots,
                    "reduceSlots": s.reduce_slots,
                    # Rounded: the state is written to the API server when it changes.
                    "cpuUtilisation": None if s.cpu is None else round(s.cpu, 2),
                    "metrics": s.metrics,
                    "changes": s.changes,
                    "fallbacks": s.fallbacks,
                }
                for node, s in self._nodes.items()
            }
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Resume each saved node from its m_i, r_i (clamped to today's bounds); it is not re-initialised.
        Entries without both counts are skipped (that node initialises on its next first heartbeat)."""
        for node, fields in (state.get("nodes") or {}).items():
            if not isinstance(fields, dict):
                continue
            maps, reduces = fields.get("mapSlots"), fields.get("reduceSlots")
            if not isinstance(maps, int) or not isinstance(reduces, int):
                continue
            cpu = fields.get("cpuUtilisation")
            metrics = fields.get("metrics")
            self._nodes[node] = _NodeSlots(
                self._clamp(maps, "map"),
                self._clamp(reduces, "reduce"),
                cpu=float(cpu) if isinstance(cpu, int | float) else None,
                metrics=metrics if isinstance(metrics, str) else None,
                changes=int(fields.get("changes") or 0),
                fallbacks=int(fields.get("fallbacks") or 0),
            )
