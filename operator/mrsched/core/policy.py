"""The policy interface and the registry that selects policies by name with validated configuration.

Modelled on Hadoop's ``TaskScheduler.assignTasks(heartbeat)``: each round the cluster's nodes are offered in turn
and the policy answers with the tasks to start on that node. Policies that think pod-first, like kube-scheduler,
override :meth:`Policy.schedule_round` instead. Hooks let policies learn from jobs and task outcomes; their
learned state is a JSON-serialisable dict that the operator persists.

Adding a policy: subclass :class:`Policy`, give it a ``name`` and, if it has options, a ``Config`` (a pydantic
model whose fields are the options), and decorate it with :func:`register`. Nothing in Kubernetes changes.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from mrsched.core.model import ClusterSnapshot, Job, Placement, Task, TaskOutcome
from mrsched.core.physics import NodeCapability, TaskDemand


class PolicyConfig(BaseModel):
    """Base of every policy's options: unknown options are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PolicyConfigError(ValueError):
    """A policy name or option is wrong; the message names it and says what is allowed."""


@dataclass(frozen=True)
class TruePhysics:
    """The true physics, handed only to the greedy-informed policy in the simulator (never to learning policies)."""

    capabilities: dict[str, NodeCapability]
    demand_of: Callable[[Task, str], TaskDemand]  # a task's demand if it ran on the named node


class Policy(ABC):
    name: ClassVar[str]
    Config: ClassVar[type[PolicyConfig]] = PolicyConfig
    #: The policy reads ``Node.probe``: the operator and the simulator run probe tasks on every node first
    #: (seed 002 P3-A, :mod:`mrsched.core.probes`).
    needs_probes: ClassVar[bool] = False
    #: The policy reads ``ClusterSnapshot.metrics`` (live node metrics, :mod:`mrsched.core.node_metrics`): the
    #: simulator models them (with the scrape lag of a Prometheus) only for such policies.
    needs_metrics: ClassVar[bool] = False
    #: A round in which no job has a task to start, and nothing changed since the policy's last round but the
    #: clock, changes nothing this policy decides later beyond time-keeping that the next round catches up
    #: (sums of rate x elapsed time, exact in real arithmetic): the operator, whose rounds come at no fixed
    #: times, skips such rounds for it (``SchedulingLoop._place``). A policy that adapts on every heartbeat
    #: (slot counts, classifiers, metrics) keeps the default, False. The simulator does not use it: its
    #: heartbeats are the trace's clock, and a skipped round would move floating-point sums (see :meth:`idle`).
    skips_quiet_rounds: ClassVar[bool] = False
    #: With no task to start in any job, a round of this policy places nothing and changes nothing in it: no
    #: random draw, no counter, no clock-driven state (its per-heartbeat work is all about pending tasks).
    #: Then :meth:`idle` is true and the simulator skips the round's call, with the same results: most of a
    #: trace day's 2 million heartbeats find every task running or done. Each policy that sets it
    #: says why in a comment.
    idle_when_nothing_pending: ClassVar[bool] = False

    def __init__(
        self, config: PolicyConfig | None = None, *, seed: int = 0, truth: TruePhysics | None = None
    ) -> None:
        self.config = config if config is not None else self.Config()
        self.seed = seed
        self.rng = random.Random(seed)
        self.truth = truth

    @abstractmethod
    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        """The tasks to start on ``node`` now (Hadoop's heartbeat response); may be empty."""

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        """One scheduling round over ``nodes``. The caller applies each node's placements to the snapshot
        (marks tasks running, records attempts) before the next node is offered, through ``apply``."""
        placements: list[Placement] = []
        for node in nodes:
            placements.extend(self.assign(snapshot, node))
        return placements

    def idle(self, snapshot: ClusterSnapshot) -> bool:
        """True only when a round now would place nothing on any node and change nothing in the policy (every
        task runs or is done): the simulator then skips the heartbeat's round, the usual heartbeat of a light
        trace day. By default true exactly when :attr:`idle_when_nothing_pending` and no job has a task to
        start (:meth:`ClusterSnapshot.nothing_pending`)."""
        return self.idle_when_nothing_pending and snapshot.nothing_pending()

    def holding(self, snapshot: ClusterSnapshot, node: str) -> str | None:
        """Why the policy, having just placed what it would, leaves ``node`` room that a startable task fits:
        the rule that holds it back, in a few words, for a run's trace (``mrsched.simulator.trace``). Reads
        the policy's state, changes nothing. None: no rule to name (the policy simply placed nothing)."""
        return None

    # --- learning hooks -------------------------------------------------------------------------------------

    def on_job_submitted(self, job: Job, now: float) -> None:  # noqa: B027 (optional hook)
        pass

    def on_job_finished(self, job: Job, now: float) -> None:  # noqa: B027 (optional hook)
        pass

    def on_task_finished(self, outcome: TaskOutcome) -> None:  # noqa: B027 (optional hook)
        pass

    def on_task_requeued(self, task: Task) -> None:  # noqa: B027 (optional hook)
        """A task that was running is pending again without a finished attempt (its node was lost, the node
        rejected its pod, or its retry delay passed): policies that index pending tasks must see it again."""

    def state(self) -> dict[str, Any]:
        """Learned state, JSON-serialisable, for the operator to persist and the simulator to save.

        Shape (every key optional): ``{"apps": {app: {field: value}}, "nodeClasses": {class: {field: value}},
        "nodes": {node: {field: value}}, "policy": {field: value}}``. The operator writes each app's fields
        into the status of the ``AppProfile`` named after it, each node class's into the ``NodeProfile`` of
        every node of that class, each node's into that node's ``NodeProfile`` (per-node wins over per-class),
        and ``policy`` (state of the whole policy, e.g. a classifier shared by all nodes) into the
        ``PolicyProfile`` named after the policy, always under the policy's name; ``load_state`` gets the same
        shape back after a restart. Fields are camelCase JSON values; keep them small (kilobytes, not
        megabytes): they are written to the API server whenever they change."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:  # noqa: B027 (optional hook)
        pass

    def slot_counts(self) -> dict[str, tuple[int, int]]:
        """Per node, the (map, reduce) slots the policy uses now, when it sets them itself (seed 001's
        adaptive slots); the operator exports them as a gauge. Empty: the nodes' configured slots."""
        return {}


ConfigT = TypeVar("ConfigT", bound=PolicyConfig)


class Configured(Generic[ConfigT]):
    """Mixin of a policy with options: :attr:`cfg` is its :attr:`Policy.config`, typed as its own ``Config``
    (``class Fair(Configured[FairConfig], SlotPolicy)``), which :func:`build_policy` validated."""

    config: PolicyConfig

    @property
    def cfg(self) -> ConfigT:
        return cast(ConfigT, self.config)


_REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"two policies are called {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Policy]]:
    return dict(_REGISTRY)


def build_policy(
    name: str, options: dict[str, Any] | None = None, *, seed: int = 0, truth: TruePhysics | None = None
) -> Policy:
    """Build a registered policy; a bad name or option raises PolicyConfigError naming it. (Use
    ``mrsched.policies.make_policy``, which registers the built-in policies first.)"""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise PolicyConfigError(f"unknown policy {name!r}; known policies: {', '.join(sorted(_REGISTRY))}")
    try:
        config = cls.Config.model_validate(options or {})
    except ValidationError as err:
        problems = "; ".join(
            f"option {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
        )
        raise PolicyConfigError(f"policy {name!r}: {problems}") from None
    return cls(config, seed=seed, truth=truth)
