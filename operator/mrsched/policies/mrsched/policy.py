"""``mrsched``: the product's policy for heterogeneous Kubernetes clusters, composed from the papers' parts as a
plugin set (:mod:`mrsched.core.framework.profile`), each part switchable for an ablation:

* **job order** (``jobOrder``): shortest predicted remaining work first, aged (:class:`ShortestWorkFirst`);
  ``submission`` is Hadoop's FIFO;
* **placement** (``speedAware``): each task to the node where it finishes soonest by seed 002 ch.3's model,
  κ and Ω probed (P3-A) and θ learned per application from the tasks' usage (:mod:`.demand`), reused by its
  later jobs; off, every node is the reference machine and only the load counts;
* **waiting** (``waitGain``): at a phase's end, a task waits for a busy node that finishes it ``waitGain`` times
  sooner, never while startable work exceeds the free places (:class:`WaitForFaster`); 1 turns it off;
* **reduces** (``reduceRelease``): ``maps-placed`` releases a job's reduces once its last map has started
  (they then hold no place while its maps still wait for one); ``slowstart`` is Hadoop's 5 % rule;
* **health**: a node the soft-fault monitor judges slowed (``Node.slowdown``, seed 002 ch.5) has its κ
  discounted by that factor in every prediction.

Concurrency is Kubernetes': a node takes pods while their requests fit (the framework's filters). Every
placement's explanation names the parts that decided it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from mrsched.core.framework.profile import PluginPolicy, Profile
from mrsched.core.model import Job
from mrsched.core.policy import Configured, PolicyConfig, register
from mrsched.policies.mrsched.demand import DemandModel
from mrsched.policies.mrsched.plugins import (
    PhaseEnd,
    ReleaseByShuffle,
    ShortestWorkFirst,
    SoonestFinish,
    SubmissionOrder,
    WaitForFaster,
)


class MrschedConfig(PolicyConfig):
    job_order: Literal["shortest-work", "shortest-time", "submission"] = Field(
        "shortest-work", alias="jobOrder"
    )
    #: Reference seconds of remaining work a job's key loses per second it has waited (assumption: 1, so a
    #: job's age counts as much as its work; not tuned to a result).
    ageing: float = Field(1.0, ge=0)
    speed_aware: bool = Field(True, alias="speedAware")
    #: How much sooner a busy node must finish a task for the task to wait for it (assumption: 2x, a clear
    #: gain against the error of a prediction from few observations).
    wait_gain: float = Field(2.0, alias="waitGain", ge=1)
    #: How much longer than the job's other tasks left take elsewhere a task must take on a node to be kept off
    #: it (:class:`PhaseEnd`; 1.2x, chosen on the contest scenarios among 1.2, 1.5 and 2, docs/mrsched.md; 1
    #: turns it off).
    phase_end_gain: float = Field(1.2, alias="phaseEndGain", ge=1)
    reduce_release: Literal["maps-placed", "shuffle", "slowstart"] = Field(
        "maps-placed", alias="reduceRelease"
    )
    #: A job's released reduces are placed before its maps (:attr:`Profile.reduces_first`).
    reduces_first: bool = Field(False, alias="reducesFirst")
    #: A task's reference seconds before any application has been learned (assumption; it only orders jobs
    #: of unknown applications by their tasks left).
    default_task_s: float = Field(10.0, alias="defaultTaskS", gt=0)


def maps_placed(job: Job) -> bool:
    """A job's reduces may start once none of its maps waits for a place."""
    return job.unstarted("map") == 0


@register
class Mrsched(Configured[MrschedConfig], PluginPolicy):
    name = "mrsched"
    Config = MrschedConfig
    needs_probes = True

    def profile(self) -> Profile:
        cfg = self.cfg
        model = DemandModel(cfg.default_task_s)
        queue = (
            ShortestWorkFirst(model, cfg.ageing, by_time=cfg.job_order == "shortest-time")
            if cfg.job_order != "submission"
            else SubmissionOrder(model)
        )
        shuffle = ReleaseByShuffle(model)
        rules: dict[str, Callable[[Job], bool]] = {
            "maps-placed": maps_placed,
            "shuffle": shuffle,
            "slowstart": Job.reduces_allowed,
        }
        released = rules[cfg.reduce_release]
        finish = SoonestFinish(model, cfg.speed_aware)
        wait = WaitForFaster(finish, cfg.wait_gain, released)
        phase_end = PhaseEnd(finish, cfg.phase_end_gain)
        order_words = {
            "shortest-work": "shortest work first",
            "shortest-time": "shortest time alone first",
            "submission": "first submitted",
        }[cfg.job_order]
        return Profile(
            queue_sort=queue,
            scores=((finish, 1.0),),
            filters=(phase_end,),
            permits=(wait,),
            hooks_only=(shuffle,),
            reduces_released=released,
            reduces_first=cfg.reduces_first,
            explain=lambda score: f"{order_words}; soonest finish here ({-score:.1f} s predicted)",
        )
