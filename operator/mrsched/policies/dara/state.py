"""DARA's persistence: the state the operator keeps in custom resources, loading it back, and the jobs that
start from a saved (or, with ``reuseProfiles``, an earlier job's) θ and λ."""

from __future__ import annotations

from typing import Any

from mrsched.core.model import Job
from mrsched.policies.dara.learner import DaraLearner
from mrsched.policies.dara.model import Profile


class DaraState(DaraLearner):
    """Persistence: :meth:`state`, :meth:`load_state` and the jobs that adopt what was saved."""

    # --- persistence -----------------------------------------------------------------------------------

    def _adopt_saved(self, job: Job) -> None:
        """A job of an application whose θ and λ were saved (load_state), or measured earlier in this run
        (``reuseProfiles``), starts from them: no profiling map (its maps join x* at once)."""
        learned = self._learned.get(job.app) if self._reuse else None
        if learned is not None:
            self._apps[job.id] = job.app
            self.profiles[job.id], self.fit.lam[job.id] = learned
            self._measured.add(job.id)
            return
        saved = self._saved.get(job.app)
        if not saved or not all(k in saved for k in ("cpuS", "ioMB", "memoryMB", "lambdaS")):
            return
        try:
            profile = Profile(float(saved["cpuS"]), float(saved["ioMB"]), float(saved["memoryMB"]))
            lam = float(saved["lambdaS"])
        except (TypeError, ValueError):
            return
        self._apps[job.id] = job.app
        self.profiles[job.id] = profile
        self.fit.lam[job.id] = lam
        self._measured.add(job.id)

    def state(self) -> dict[str, Any]:
        """What the operator keeps in custom resources (JSON values only), per application name (``job.app``,
        the AppProfile's name) and per node class:

        ``{"apps": {app: {lambdaS, cpuS, ioMB, memoryMB, observations, member, jobs, optimalContainers}},
        "nodeClasses": {class: {alphaC, alphaD, observations, fitted}}}``. Several jobs of one application
        share its entry: θ and λ of the latest measured, observations summed, x* summed per node. The raw
        observation rows are not kept (too large for a resource). Loaded back, an application's θ and λ serve
        its jobs without a profiling map, and a class saved as fitted keeps its α's fixed (as offline ones)."""
        apps: dict[str, dict[str, Any]] = {name: dict(fields) for name, fields in self._saved.items()}
        current: dict[str, dict[str, Any]] = {}
        for job in dict.fromkeys([*self._members, *self.profiles, *self.fit.lam]):
            name = self._apps.get(job, job)
            entry = current.setdefault(
                name,
                {
                    "observations": int(apps.get(name, {}).get("observations", 0)),
                    "member": False,
                    "jobs": [],
                    "optimalContainers": {},
                },
            )
            entry["observations"] += self._obs_count.get(job, 0)
            entry["jobs"].append(job)
            if job in self._members:
                entry["member"] = True
                for node, x in self.optimal.items():
                    if job in x:
                        entry["optimalContainers"][node] = entry["optimalContainers"].get(node, 0) + x[job]
            if job in self.fit.lam:
                entry["lambdaS"] = self.fit.lam[job]
            profile = self.profiles.get(job)
            if profile is not None:
                entry.update(cpuS=profile.cpu_s, ioMB=profile.io_mb, memoryMB=profile.memory_mb)
        for name, entry in current.items():
            apps[name] = {**apps.get(name, {}), **entry}
        classes: dict[str, dict[str, Any]] = {}
        for cls in sorted(set(self.fit.alpha) | set(self.offline)):
            alpha_c, alpha_d = self.fit.alpha.get(cls, self.offline.get(cls, (0.0, 0.0)))
            classes[cls] = {
                "alphaC": float(alpha_c),
                "alphaD": float(alpha_d),
                "observations": self._class_count.get(cls, 0),
                "fitted": cls in self.fitted_classes or cls in self.offline,
            }
        return {"apps": apps, "nodeClasses": classes}

    def load_state(self, state: dict[str, Any]) -> None:
        """The inverse of :meth:`state` (unknown fields are ignored, and kept to be written back)."""
        self._saved = {
            str(name): dict(fields)
            for name, fields in (state.get("apps") or {}).items()
            if isinstance(fields, dict)
        }
        self._class_count = {}
        for cls, entry in (state.get("nodeClasses") or {}).items():
            if not isinstance(entry, dict) or "alphaC" not in entry or "alphaD" not in entry:
                continue
            try:
                alpha = (float(entry["alphaC"]), float(entry["alphaD"]))
            except (TypeError, ValueError):
                continue
            self._class_count[cls] = int(entry.get("observations", 0))
            self.fit.alpha[cls] = alpha
            if entry.get("fitted"):
                self.offline[cls] = alpha  # saved fitted α's are fixed from now on (see state())
                self.fitted_classes.add(cls)
