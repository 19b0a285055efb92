"""DARA's online learning (§4.2.3, Alg 4.3.1, I4-7): the hooks that take θ_j and the observations from task
outcomes, the refit of Eq 4.12, and λ_j from the profiling map."""

from __future__ import annotations

import numpy as np

from mrsched.core.catalog import CatalogError, application
from mrsched.core.model import Job, TaskOutcome
from mrsched.policies.dara.base import DaraBase, _NodeClock
from mrsched.policies.dara.config import MB
from mrsched.policies.dara.model import Observation, Profile, fit_columns, load_ratios, node_loads


class DaraLearner(DaraBase):
    """Online learning: what each submitted job and finished map tells DARA's model."""

    # --- learning --------------------------------------------------------------------------------------

    def on_job_submitted(self, job: Job, now: float) -> None:
        super().on_job_submitted(job, now)  # the composed Fair's too (ComposesFair)
        self._request_memory[job.id] = job.map_request.memory_mb
        self._app_cpu[job.app] = min(job.map_request.cpu, self._app_cpu.get(job.app, job.map_request.cpu))
        self._apps[job.id] = job.app

    def _peak_memory(self, outcome: TaskOutcome) -> float:
        """Memory per map for the cap: the profiling task's peak RSS (digest §4.1.6 [R]). TaskOutcome carries
        none yet, so: ``taskMemoryMB`` if set, else the application's catalog RAM (Table 4.1/2.1's column, what
        the OS would report), else the job's container request."""
        if self.cfg.task_memory_mb:
            return self.cfg.task_memory_mb
        job_id = outcome.task.job_id
        app = self._apps.get(job_id)
        if app:
            try:
                return application(app).profile("map").memory_mb
            except (CatalogError, ValueError, KeyError):
                pass
        return self._request_memory.get(job_id, 1024.0)

    def on_task_finished(self, outcome: TaskOutcome) -> None:
        super().on_task_finished(outcome)
        task = outcome.task
        if task.kind != "map":
            return
        clock = self._clocks.get(outcome.node)
        if clock is None:
            clock = self._clocks[outcome.node] = _NodeClock()
        clock.advance(outcome.finish_s)
        start = self._starts.pop(task.key, None)
        if start is not None:
            clock.count[task.job_id] = max(0, clock.count.get(task.job_id, 0) - 1)
        if not outcome.succeeded:
            return
        if task.job_id not in self.profiles:  # Alg 4.3.1 GETRESOURCEREQ: the first map's OS counters
            memory = self._peak_memory(outcome)
            io = (outcome.read_bytes + outcome.written_bytes) / MB
            self.profiles[task.job_id] = Profile(outcome.cpu_s, io, memory)
        if start is not None and outcome.duration_s > 0:
            began, integrals = start
            span = outcome.finish_s - began
            mix = {
                a: (v - integrals.get(a, 0.0)) / span
                for a, v in clock.integral.items()
                if v - integrals.get(a, 0.0) > 1e-12
            }
            mix[task.job_id] = max(mix.get(task.job_id, 0.0), 1.0)
            cls = self._node_classes.get(outcome.node, "")
            observation = Observation(task.job_id, cls, outcome.duration_s, mix)
            self.observations.append(observation)
            self._fit_window.append(observation, self.profiles)
            self._first.setdefault(task.job_id, observation)
            self._obs_count[task.job_id] = self._obs_count.get(task.job_id, 0) + 1
            self._class_count[cls] = self._class_count.get(cls, 0) + 1
            self._since_fit += 1

    def refit(self) -> None:
        """Fit Eq 4.12 to the observations and decide which node classes count as fitted."""
        self._since_fit = 0
        # Only a measured λ is kept: a least-squares λ from a refit made before the profiling map's class was
        # fitted would otherwise be frozen for good, and the profile never read (seen on gupta-ch3-comb1: Pi's
        # λ stuck at 1.46 s against its 3.7 CPU-s).
        previous = {job: lam for job, lam in self.fit.lam.items() if job in self._measured}
        self._fit_window.sync(self.observations, self.profiles)
        self.fit = fit_columns(self._fit_window.columns(), self.offline)
        fitted = set(self.offline)
        for cls in set(self.fit.alpha) - fitted:
            seen = self._fit_window.class_loads(cls)
            if len(seen) >= self.cfg.min_observations and seen.max() - seen.min() >= self.cfg.min_load_spread:
                fitted.add(cls)
        self.fitted_classes = fitted
        if self.cfg.lambda_from == "profile":
            for app in self.fit.lam:
                if app in previous:
                    self.fit.lam[app] = previous[app]  # measured once, at the profiling map
                elif app in self._first and self._first[app].node_class in fitted:
                    self.fit.lam[app] = self._profile_lambda(self._first[app])
                    self._measured.add(app)
                    if app in self.profiles:
                        self._learned[self._apps.get(app, app)] = (self.profiles[app], self.fit.lam[app])
        # A measured λ with no observation in the window (adopted before its job ran a map, or its maps aged out
        # of the window) stays: without it the job gets x* = 0 and, having a profile, no profiling map either,
        # so its maps would wait beside the other jobs' for ever.
        for app, lam in previous.items():
            self.fit.lam.setdefault(app, lam)

    def _profile_lambda(self, first: Observation) -> float:
        """I4-7: λ_j from the profiling map: its duration minus Eq 4.12's load term at the mix it ran in,
        with its node class's α's (the duration itself if the model explains all of it)."""
        profiles = self.profiles
        if any(a not in profiles for a in first.mix):
            return first.duration_s
        apps = list(first.mix)
        c = np.array([profiles[a].cpu_s for a in apps])
        d = np.array([profiles[a].io_mb for a in apps])
        rc, rd = load_ratios(c, d)
        lc, ld = node_loads(np.array([first.mix[a] for a in apps]), rc, rd)
        alpha_c, alpha_d = self.fit.alpha[first.node_class]
        p = profiles[first.app]
        lam = first.duration_s - p.cpu_s * alpha_c * lc**2 - p.io_mb * alpha_d * ld**2
        # A map cannot run faster than its own CPU time (the OS counter of Alg 4.3.1): when the model
        # over-explains a loaded profiling run, λ_j falls back to that floor.
        return min(first.duration_s, max(lam, p.cpu_s))
