"""DARA_SCHEDULE (Alg 4.3.3, Alg 4.3.4): each heartbeat's placements toward x*, the profiling maps, the
composed Fair policy where DARA has no model (and for reduces); and :class:`Dara`, the registered policy."""

from __future__ import annotations

import math
from dataclasses import replace

from mrsched.core.locality import LEVEL_RANK, Level
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, Task
from mrsched.core.policy import register
from mrsched.policies.dara.base import _NodeClock
from mrsched.policies.dara.config import DaraConfig
from mrsched.policies.dara.model import best_app_to_add
from mrsched.policies.dara.optimiser import DaraOptimiser

_TIERS = ("local", "rack", "off-switch")


@register
class Dara(DaraOptimiser):
    """DARA (seed 002, chapter 4): the last of the chain (see the package docstring), the registered policy."""

    name = "dara"
    Config = DaraConfig
    #: A skipped round leaves each node's ∫ containers dt (:class:`_NodeClock`) to the next round's advance, the
    #: same sum in one step; the counts it re-reads from the snapshot change meanwhile only by finished maps
    #: (``on_task_finished`` counts them down) or lost ones (pending: not a quiet round). Refits and x* wait for
    #: a round only when an outcome arrived, and an outcome's job is read again: not a quiet round either.
    skips_quiet_rounds = True

    # --- scheduling ------------------------------------------------------------------------------------

    def _clock(self, snapshot: ClusterSnapshot, node: str) -> _NodeClock:
        clock = self._clocks.get(node)
        if clock is None:  # not setdefault: a clock built on every heartbeat to be thrown away cost 2 %
            clock = self._clocks[node] = _NodeClock(at=snapshot.now)
        clock.advance(snapshot.now)
        counts: dict[str, int] = {}
        for attempt in snapshot.running.get(node, ()):
            if attempt.task.kind == "map":
                counts[attempt.task.job_id] = counts.get(attempt.task.job_id, 0) + 1
        clock.count = counts  # the snapshot is authoritative
        return clock

    def _place_map(
        self, snapshot: ClusterSnapshot, task: Task, node: str, clock: _NodeClock, explanation: Explanation
    ) -> Placement:
        placement = Placement(task, node, explanation)
        snapshot.commit(placement)
        clock.count[task.job_id] = clock.count.get(task.job_id, 0) + 1
        self._starts[task.key] = (snapshot.now, dict(clock.integral))
        return placement

    def _task_memory(self, job: Job) -> float:
        """Memory per map of ``job`` for the cap: its profile's, else ``taskMemoryMB``, else its request."""
        profile = self.profiles.get(job.id)
        if profile is not None:
            return profile.memory_mb
        return self.cfg.task_memory_mb or job.map_request.memory_mb

    def _free_memory(self, snapshot: ClusterSnapshot, node: str) -> float:
        used = 0.0
        for attempt in snapshot.running.get(node, ()):
            job = snapshot.job(attempt.task.job_id)
            if attempt.task.kind == "map":
                used += self._task_memory(job)
            else:
                used += job.reduce_request.memory_mb
        return snapshot.nodes[node].memory_mb - used

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        self._sync(snapshot)
        clock = self._clock(snapshot, node)
        if self.fair.idle(snapshot):
            # Nothing to start: the steps below would place nothing, and their only effect, the composed Fair's
            # heartbeat time (Fair.heartbeat_unobserved), is not read: 69 % of the heartbeats of the SWIM
            # day (seed 1). The refit and x* above, and the clocks' ∫ dt steps, stay per heartbeat.
            return []
        if node not in self._optimal:  # no fitted model for this node's class yet: the FairScheduler decides
            return self._delegate(snapshot, node, clock, "load model not fitted for this node class")
        by_requests = snapshot.nodes[node].by_requests
        placements: list[Placement] = []
        profiling = self._profile_one(snapshot, node, clock)
        if profiling is not None:
            placements.append(profiling)
        while (got := self._dara_one(snapshot, node, clock)) is not None:
            placements.append(got)
            if not self.cfg.assign_multiple:
                break  # Alg 4.3.3: one task per request (on Kubernetes the rest is _work_conserving's)
        if not placements and self._idle(snapshot, node):
            delegated = self._delegate(snapshot, node, clock, "x* = 0 for every application on an idle node")
            return delegated + (self._work_conserving(snapshot, node, clock) if by_requests else [])
        if not placements and self.cfg.fair_while_profiling:
            placements += self._fair_unmeasured(snapshot, node, clock)
        placements += self._fair_reduce(snapshot, node)
        if by_requests:
            # x*'s size is DARA's concurrency for the node's maps: beyond it the fitted load model predicts a
            # lower throughput (Eq 4.16), and which jobs fill it is all x* loses. Filling past an x* of 0 too
            # (before any application is measured, Alg 4.3.1, or when none fits) cost diagnosis and DARA 11-32 %
            # of mean job time on dara-wl10, seeds 1-3, and 8-17 % on dara-wl13.
            placements += self._work_conserving(snapshot, node, clock, sum(self._x_star(node).values()))
        return placements

    def _work_conserving(
        self, snapshot: ClusterSnapshot, node: str, clock: _NodeClock, cap: float = math.inf
    ) -> list[Placement]:
        """On a by-requests node, the room x* leaves (containers it holds for jobs with no map left to start, or
        a mix smaller than the node) goes to the composed Fair's next jobs (``SlotPolicy.work_conserving``):
        x* chooses which applications a node runs first, the requests how many. The maps are recorded like
        DARA's own, so that their outcomes train the load model (Alg 4.3.2)."""

        def place_map(task: Task, reason: str) -> Placement:
            why = Explanation(self.name, 0.0, reason)
            return self._place_map(snapshot, task, node, clock, why)

        return self.work_conserving(
            snapshot,
            node,
            lambda kind: self.fair.fair_order(snapshot, kind),
            "work-conserving: x* leaves this room unused, Fair's next job takes it",
            place_map,
            cap,
        )

    def holding(self, snapshot: ClusterSnapshot, node: str) -> str | None:
        """Which step of :meth:`assign` left the node's room empty (the trace's reason; reads x*, which a
        deferred diagnosis evaluates as it would when due)."""
        if node not in self._optimal:
            # Not filled on Kubernetes either: a node filled at once shows the fit no spread of loads to fit α
            # by (minLoadSpread), and the class stays unfitted (gupta-ch3-comb1 seed 2: 1716 of 1740 maps Fair's).
            ramp = snapshot.nodes[node].by_requests and not self.cfg.assign_multiple
            held = self.fair.holding(snapshot, node) or (
                "one map a heartbeat while the loads spread for α's online fit"
                if ramp
                else "Fair placed nothing"
            )
            return f"Fair fallback: no fitted load model for the node's class ({held})"

        pending_maps = [j for j in snapshot.jobs if j.unstarted("map") > 0]
        if not pending_maps:
            return "reduces: the FairScheduler's one reduce per heartbeat (DARA optimises maps only)"
        members = [a for a in self._members if a in self.profiles]
        free = self._free_memory(snapshot, node)  # as _dara_one's cap
        if members and all(free <= self.profiles[a].memory_mb for a in members):
            return "DARA's memory cap: no member's map fits the node's free memory"
        optimal = self._x_star(node)
        running = dict.fromkeys(optimal, 0)
        for attempt in snapshot.running.get(node, ()):
            if attempt.task.kind == "map" and attempt.task.job_id in running:
                running[attempt.task.job_id] += 1
        if not optimal:
            return "the mix x* (Eq 4.16) holds no container before an application's first map is measured (Alg 4.3.1)"
        if not sum(optimal.values()):
            return "the mix x* (Eq 4.16) holds no container on the node for any job it optimises"
        if sum(running.values()) >= sum(optimal.values()):
            return f"the mix x* (Eq 4.16) asks for no more than the node runs ({sum(optimal.values())} containers)"
        short = [a for a in optimal if optimal[a] > running[a]]
        if all(snapshot.job(a).unstarted("map") == 0 for a in short):
            return "x* reserves its containers for jobs with no map left to start"
        if not self.cfg.assign_multiple:
            return "one container per heartbeat (Alg 4.3.3)"
        return None

    def _fair_unmeasured(self, snapshot: ClusterSnapshot, node: str, clock: _NodeClock) -> list[Placement]:
        """Applications not yet in DARA's optimisation (θ unmeasured, Alg 4.3.1) are the FairScheduler's: it
        may start their maps in the node's ordinary map slots left free by DARA's containers (I4-8's 12),
        while the profiling map runs. Once measured they join x* and DARA takes over (no preemption)."""
        outsiders = [
            j
            for j in snapshot.jobs
            if j.id not in self._members and j.finished_maps + j.running_maps < len(j.maps)
        ]
        if not outsiders or snapshot.free_slots(node, "map") <= 0:
            return []
        view = ClusterSnapshot(
            snapshot.now,
            snapshot.nodes,
            snapshot.running,
            outsiders,
            snapshot.metrics,
            heartbeat_s=snapshot.heartbeat_s,
            reserved=snapshot.reserved,  # other pods' requests hold the node there too (NodeResourcesFit)
        )
        placed = self.fair.assign_one_map(view, node)
        if placed is None:
            return []
        snapshot.touch()
        task = placed.task
        clock.count[task.job_id] = clock.count.get(task.job_id, 0) + 1
        self._starts[task.key] = (snapshot.now, dict(clock.integral))
        reason = f"fair: {task.job_id} not measured yet (Alg 4.3.1), ordinary map slot: {placed.explanation.reason}"
        return [replace(placed, explanation=Explanation(self.name, 0.0, reason))]

    def _delegate(self, snapshot: ClusterSnapshot, node: str, clock: _NodeClock, why: str) -> list[Placement]:
        """Hand the node's heartbeat to the composed Fair policy (maps and reduces), recording its maps'
        starts so that their outcomes still train the model."""
        out = []
        for placement in self.fair.assign(snapshot, node):
            task = placement.task
            if task.kind == "map":
                clock.count[task.job_id] = clock.count.get(task.job_id, 0) + 1
                self._starts[task.key] = (snapshot.now, dict(clock.integral))
                reason = f"fair fallback ({why}): {placement.explanation.reason}"
            else:
                reason = f"reduce: FairScheduler (DARA optimises maps only): {placement.explanation.reason}"
            out.append(replace(placement, explanation=Explanation(self.name, 0.0, reason)))
        return out

    def _idle(self, snapshot: ClusterSnapshot, node: str) -> bool:
        """x* asks for no container at all on ``node`` and it runs no map: the composed Fair policy takes the
        heartbeat, otherwise pending maps could wait for ever (e.g. while the only application is profiled)."""
        return sum(self._x_star(node).values()) == 0 and snapshot.running_on(node, "map") == 0

    def _unprofiled(self, job: Job) -> bool:
        return job.id not in self.profiles and job.finished_maps == 0

    def _profile_one(self, snapshot: ClusterSnapshot, node: str, clock: _NodeClock) -> Placement | None:
        """I4-6: an application not yet measured gets one profiling map as soon as a node has spare memory
        (only while DARA's model drives the node; where Fair schedules, every job runs maps anyway)."""
        if node not in self._optimal:
            return None
        for job in snapshot.jobs:
            if not self._unprofiled(job) or job.running_maps > 0:
                continue
            memory = self._task_memory(job)
            if self._free_memory(snapshot, node) <= memory:
                return None
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                task, level = found
                why = Explanation(
                    self.name, 0.0, f"profiling map of {job.id} (Alg 4.3.1, first task); {level}-local"
                )
                return self._place_map(snapshot, task, node, clock, why)
        return None

    def _dara_one(self, snapshot: ClusterSnapshot, node: str, clock: _NodeClock) -> Placement | None:
        """DARA_SCHEDULE (Alg 4.3.3) for one container on ``node``: the first locality tier holding an
        application with a positive deficit, and BEST_APP_TO_ADD (Alg 4.3.4) within it."""
        current = {a: clock.count.get(a, 0) for a in self._members}
        if self.cfg.literal and snapshot.free_slots(node, "map") <= 0:
            return None
        free = self._free_memory(snapshot, node)
        if all(free <= self.profiles[a].memory_mb for a in self._members):
            return None  # no member's map fits, whatever x* asks (x* is not even read: it may be deferred)
        optimal = self._x_star(node)
        if not self.cfg.literal and sum(current.values()) >= sum(optimal.values()):
            return None
        tiers: list[list[tuple[Job, Task, Level]]] = [[], [], []]
        for job in snapshot.jobs:
            if job.id not in optimal:
                continue
            deficit = optimal[job.id] - current[job.id]
            if deficit <= 0 and not self.cfg.literal:
                continue
            if free <= self.profiles[job.id].memory_mb:
                continue
            found = self.pick_map(job, snapshot, node)
            if found is not None:
                task, level = found
                tiers[LEVEL_RANK[level]].append((job, task, level))
        for rank, tier in enumerate(tiers):
            if not tier:
                continue
            apps = [job.id for job, _, _ in tier]
            best = best_app_to_add(optimal, current, apps)
            job, task, level = next(entry for entry in tier if entry[0].id == best)
            others = sorted(
                (a for a in apps if a != best), key=lambda a: optimal[a] - current[a], reverse=True
            )
            deficit = optimal[job.id] - current[job.id]
            reason = (
                f"{_TIERS[rank]} tier: {job.id} furthest below its optimal count on this node "
                f"(x*={optimal[job.id]}, running {current[job.id]}; Eq 4.16, Alg 4.3.4); {level}-local"
            )
            if node in self.searched_locally:
                reason += (
                    f"; x* by local search (Eq 4.16 has over {self.cfg.exhaustive_limit} mixes to enumerate)"
                )
            runner_up = f"{others[0]} (deficit {optimal[others[0]] - current[others[0]]})" if others else None
            return self._place_map(
                snapshot, task, node, clock, Explanation(self.name, float(deficit), reason, runner_up)
            )
        return None

    def _fair_reduce(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        """Reduces stay with the FairScheduler that DARA extends: the composed Fair policy's pool and job
        order, one reduce per heartbeat (its reduce half of ``Fair.assign``)."""
        fair = self.fair
        if snapshot.free_slots(node, "reduce") <= 0:
            return []
        ordered = fair.fair_order(snapshot, "reduce")
        got = fair.one_reduce(snapshot, node, ordered, "pool furthest below its fair share")
        if got:
            fair.record_placed(snapshot, snapshot.job(got[0].task.job_id), "reduce")
        return [
            replace(
                p,
                explanation=Explanation(
                    self.name,
                    0.0,
                    f"reduce: FairScheduler (DARA optimises maps only): {p.explanation.reason}",
                ),
            )
            for p in got
        ]
