"""DARA's base class: the policy's state (``__init__``, every attribute the chain of classes reads, see the
package docstring) and x*'s accessor, and the per-node container clock the observations are taken by."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mrsched.core.model import Node
from mrsched.core.policy import Configured
from mrsched.policies.dara.config import DaraConfig
from mrsched.policies.dara.model import Fit, Observation, Profile
from mrsched.policies.dara.window import FitWindow
from mrsched.policies.hadoop.fair import ComposesFair, Fair, FairConfig
from mrsched.policies.hadoop.slots import SlotPolicy


@dataclass
class _NodeClock:
    """Per node: map containers per application now, and ∫ containers dt per application so far."""

    at: float = 0.0
    count: dict[str, int] = field(default_factory=dict)
    integral: dict[str, float] = field(default_factory=dict)

    def advance(self, now: float) -> None:
        if now > self.at:
            for app, n in self.count.items():
                self.integral[app] = self.integral.get(app, 0.0) + n * (now - self.at)
            self.at = now


class DaraBase(ComposesFair, Configured[DaraConfig], SlotPolicy):
    """What every part of DARA reads and writes, set up once; each responsibility subclasses this in turn
    (:class:`~mrsched.policies.dara.learner.DaraLearner` first, :class:`~mrsched.policies.dara.Dara` last)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.profiles: dict[str, Profile] = {}
        self.fit = Fit()
        self.fitted_classes: set[str] = set()
        self.observations: deque[Observation] = deque(maxlen=self.cfg.window)
        self._fit_window = FitWindow(self.cfg.window)  # the observations as the refit reads them
        self._optimal: dict[str, dict[str, int]] = {}  # node -> app -> x* (read through _x_star / optimal)
        self.searched_locally: set[str] = set()  # nodes whose x* came from the local search, not Eq 4.16's
        self._members: tuple[str, ...] = ()  # applications in the optimisation, submission order
        self._since_fit = 0
        self._clocks: dict[str, _NodeClock] = {}
        self._starts: dict[str, tuple[float, dict[str, float]]] = {}  # task key -> (start, integrals)
        self._synced: tuple[object, ...] | None = None  # what _sync last saw, after it
        self._layout: tuple[list[str], list[Node], list[tuple[str, tuple[str, float, float]]]] | None = None
        #: (nodes, x*, their sizes and the fitted classes) when every fitted node last had an x* (_uncovered)
        self._covered: tuple[dict[str, Node], dict[str, dict[str, int]], tuple[Any, ...]] | None = None
        self._request_memory: dict[str, float] = {}  # job -> its map container request
        #: app -> the smallest map CPU request of its jobs (a by-requests node's mix keeps to its cores by these)
        self._app_cpu: dict[str, float] = {}
        self._apps: dict[str, str] = {}  # job -> its application (for the catalog's RAM, see _peak_memory)
        self._node_classes: dict[str, str] = {}
        self._stale = False
        self._obs_count: dict[str, int] = {}  # application -> observations taken
        self._first: dict[str, Observation] = {}  # job -> its profiling map's observation
        #: Jobs whose λ was measured (from the profiling map on a fitted class, or adopted from saved state):
        #: kept by later refits. Any other λ is the least-squares one of the last refit and is replaced.
        self._measured: set[str] = set()
        # Saved state per application name (load_state): echoed back by state(), and the θ, λ a job of that
        # application starts from instead of a profiling map (a restarted operator does not relearn).
        self._saved: dict[str, dict[str, Any]] = {}
        self._class_count: dict[str, int] = {}  # node class -> observations taken
        #: application name -> θ and λ of its latest job measured in this run (for ``reuseProfiles``)
        self._learned: dict[str, tuple[Profile, float]] = {}
        self._reuse: bool | None = self.cfg.reuse_profiles  # unset: settled by the first snapshot's nodes
        self.offline: dict[str, tuple[float, float]] = {
            k: (float(a), float(b)) for k, (a, b) in self.cfg.alphas.items()
        }
        # DARA extends YARN's FairScheduler (§4.3): whatever DARA does not decide (reduces, and maps on nodes
        # whose class has no fitted model yet) is the real Fair policy's, handing out as many tasks per heartbeat
        # as DARA's own assignMultiple says (false: YARN's yarn.scheduler.fair.assignmultiple default).
        self.fair = Fair(FairConfig(assign_multiple=self.cfg.assign_multiple), seed=self.seed)
        self.fit.alpha.update(self.offline)
        self.fitted_classes = set(self.offline)

    # x*'s accessor is the base's, not the optimiser's: persistence (state) reads it, and the optimiser reads
    # persistence (_adopt_saved).

    @property
    def optimal(self) -> dict[str, dict[str, int]]:
        """x* per node and application, every node's (a subclass may defer a node's until it is read)."""
        return self._optimal

    @optimal.setter
    def optimal(self, value: dict[str, dict[str, int]]) -> None:
        self._optimal = value
