"""A policy as a set of plugins, run as kube-scheduler runs a profile's scheduling cycle, one task at a time:

1. **QueueSort** orders the jobs; within a job its pending maps come first (index order), then its reduces once
   slow-start allows them (or once the profile's ``reduces_released`` says so).
2. **Filter**: a node must pass Kubernetes' own filters and have room for the task's pod
   (:meth:`ClusterSnapshot.fits`, which enforces :attr:`Job.nodes`), then every filter plugin of the profile.
3. **Score**: Σ weight × score over the profile's score plugins; the highest total wins, the earliest offered
   node among equals (kube-scheduler picks among equals at random; a profile that wants that says so in a
   score). No node passing: the job's other tasks of that kind are alike, so they wait too.
4. **Reserve**: the placement is committed on the snapshot at once (what the node has left changes for the
   next task) and every plugin with a ``reserve`` hook hears of it.
5. **Permit**: a permit plugin may refuse it: it is given back (:func:`unreserve`) and the task waits.

Plugins that learn (``on_task_finished`` and the other :class:`~mrsched.core.policy.Policy` hooks) and keep
state (``state``/``load_state``) get the policy's hooks forwarded. :class:`PluginPolicy` is the base of such
a policy; docs/development.md shows one written this way.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from mrsched.core.framework.framework import unreserve
from mrsched.core.model import ClusterSnapshot, Explanation, Job, Placement, Task, TaskType
from mrsched.core.pending import PendingTasks
from mrsched.core.policy import Policy


class QueueSortPlugin(Protocol):
    name: str
    #: True when :meth:`order` reads nothing but the jobs' membership and fixed fields (submission time,
    #: priority): the runner then keeps the order until the owner changes the jobs (``memo_jobs``).
    depends_on_jobs_only: bool

    def order(self, snapshot: ClusterSnapshot, jobs: Sequence[Job]) -> list[Job]:
        """The jobs in the order they get their tasks placed (the first goes first)."""


class TaskFilterPlugin(Protocol):
    name: str

    def filter(self, snapshot: ClusterSnapshot, task: Task, node: str) -> str | None:
        """Why ``node`` may not take ``task`` in this policy's judgement (None: it may)."""


class ScorePlugin(Protocol):
    name: str

    def score(self, snapshot: ClusterSnapshot, task: Task, node: str) -> float:
        """Higher is better; called only for nodes every filter passed."""


class ProfilePermitPlugin(Protocol):
    name: str

    def permit(self, snapshot: ClusterSnapshot, placement: Placement) -> bool:
        """True: bind it now; False: give it back, the task waits."""


@dataclass(frozen=True)
class Profile:
    """The plugins of one policy, at each extension point (the module docstring says in what order)."""

    queue_sort: QueueSortPlugin
    scores: tuple[tuple[ScorePlugin, float], ...]  # (plugin, weight)
    filters: tuple[TaskFilterPlugin, ...] = ()
    permits: tuple[ProfilePermitPlugin, ...] = ()
    #: The explanation's words for a placement, given the chosen node's total score; by default the queue
    #: order's and the scores' names.
    explain: Callable[[float], str] | None = None
    #: When a job's reduces may be placed (default: Hadoop's slow-start, :meth:`Job.reduces_allowed`).
    reduces_released: Callable[[Job], bool] | None = None
    #: A job's released reduces are placed before its maps (default: after): a reduce that shuffles while
    #: the maps run then holds its place from the release on, as a pod created at slow-start does in
    #: kube-scheduler's queue, where the job's maps would otherwise take every place first.
    reduces_first: bool = False
    #: Other objects that want the plugins' hooks (``begin_round``, the learning hooks) though they sit at no
    #: extension point (a ``reduces_released`` rule that reads the round's snapshot).
    hooks_only: tuple[object, ...] = ()
    plugins: tuple[object, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        unique: dict[int, object] = {}
        for plugin in (
            self.queue_sort,
            *self.filters,
            *(p for p, _ in self.scores),
            *self.permits,
            *self.hooks_only,
        ):
            unique.setdefault(id(plugin), plugin)
        object.__setattr__(self, "plugins", tuple(unique.values()))

    def hooks(self, name: str) -> Iterator[Any]:
        """Each plugin's method ``name``, for the plugins that have one (each plugin once)."""
        for plugin in self.plugins:
            method = getattr(plugin, name, None)
            if method is not None:
                yield method


class PluginPolicy(Policy):
    """A policy that is its :meth:`profile`: the round is the framework's (module docstring); the policy
    only says which plugins, built from its validated options."""

    #: The profile's plugins change no state in a round that places nothing: then the simulator may skip a
    #: heartbeat at which no task is pending (:attr:`Policy.idle_when_nothing_pending`).
    idle_when_nothing_pending: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins = self.profile()
        self._pending = PendingTasks()

    @abstractmethod
    def profile(self) -> Profile:
        """The plugin set, built once from ``self.config`` (and ``self.truth``, ``self.rng`` if it needs them)."""

    def assign(self, snapshot: ClusterSnapshot, node: str) -> list[Placement]:
        return self.schedule_round(snapshot, [node])

    def schedule_round(self, snapshot: ClusterSnapshot, nodes: list[str]) -> list[Placement]:
        profile = self.plugins
        offered = [name for name in nodes if name in snapshot.nodes]
        placements: list[Placement] = []
        if not offered or snapshot.nothing_pending():
            return placements
        for begin in profile.hooks("begin_round"):
            begin(snapshot, offered)
        queue = profile.queue_sort
        if queue.depends_on_jobs_only:
            ordered = snapshot.memo_jobs(
                ("profile.order", queue.name), lambda: queue.order(snapshot, snapshot.jobs)
            )
        else:
            ordered = queue.order(snapshot, snapshot.jobs)
        # The kinds some offered node has a slot for (the first test of ``fits``): a task of another kind fits
        # nowhere, so its jobs need no pass over the nodes (most heartbeats of a busy day find the node full).
        open_kinds = _open_kinds(snapshot, offered)
        released = profile.reduces_released or Job.reduces_allowed
        for job in ordered:
            if not open_kinds:
                break
            kinds: tuple[TaskType, ...] = (
                ("reduce", "map") if profile.reduces_first and released(job) else ("map", "reduce")
            )
            for kind in kinds:
                # Asked after the job's maps of this round are placed: a release rule that counts placed maps
                # (mrsched's) lets the reduces start in the same round.
                if kind not in open_kinds or (kind == "reduce" and not released(job)):
                    continue
                for task in self._pending.of(job, kind):
                    placement = self._place_one(snapshot, job, task, offered)
                    if placement is None:
                        break  # a job's tasks of a kind are alike: if this one fits nowhere, neither do the rest
                    if isinstance(placement, Placement):
                        placements.append(placement)
                        open_kinds = _open_kinds(snapshot, offered)
                        if kind not in open_kinds:
                            break
        return placements

    def _place_one(
        self, snapshot: ClusterSnapshot, job: Job, task: Task, offered: list[str]
    ) -> Placement | _Waiting | None:
        """Filter, Score, Reserve and Permit for one task: its placement, None when no node passes the filters,
        :data:`_WAITS` when a permit plugin gave it back."""
        profile = self.plugins
        best, runner_up = None, None
        best_score = second = float("-inf")
        for name in offered:
            if not snapshot.fits(name, job, task.kind):  # Kubernetes' filters and the pod's requests
                continue
            if any(f.filter(snapshot, task, name) is not None for f in profile.filters):
                continue
            total = sum(weight * plugin.score(snapshot, task, name) for plugin, weight in profile.scores)
            if total > best_score:
                if best is not None:
                    runner_up, second = best, best_score
                best, best_score = name, total
            elif total > second:
                runner_up, second = name, total
        if best is None:
            return None
        reason = profile.explain(best_score) if profile.explain else self._default_reason()
        placement = Placement(task, best, Explanation(self.name, best_score, reason, runner_up))
        snapshot.commit(placement)
        for reserve in profile.hooks("reserve"):
            reserve(snapshot, placement)
        if all(permit.permit(snapshot, placement) for permit in profile.permits):
            return placement
        unreserve(snapshot, placement)
        for give_back in profile.hooks("unreserve"):
            give_back(snapshot, placement)
        return _WAITS

    def _default_reason(self) -> str:
        profile = self.plugins
        scores = " + ".join(f"{w:g}×{p.name}" if w != 1 else p.name for p, w in profile.scores)
        return f"first in {profile.queue_sort.name} order; highest {scores}"

    # --- the policy's hooks, forwarded to the plugins that have them -------------------------------------

    def on_job_submitted(self, job: Job, now: float) -> None:
        for hook in self.plugins.hooks("on_job_submitted"):
            hook(job, now)

    def on_job_finished(self, job: Job, now: float) -> None:
        self._pending.forget(job.id)
        for hook in self.plugins.hooks("on_job_finished"):
            hook(job, now)

    def on_task_finished(self, outcome: Any) -> None:
        for hook in self.plugins.hooks("on_task_finished"):
            hook(outcome)

    def on_task_requeued(self, task: Task) -> None:
        for hook in self.plugins.hooks("on_task_requeued"):
            hook(task)

    def state(self) -> dict[str, Any]:
        """The plugins' states merged (each plugin its own fields under ``apps``, ``nodes``, ...)."""
        merged: dict[str, Any] = {}
        for state in self.plugins.hooks("state"):
            for section, entries in state().items():
                target = merged.setdefault(section, {})
                for key, fields in entries.items():
                    if isinstance(fields, dict):
                        target.setdefault(key, {}).update(fields)
                    else:
                        target[key] = fields
        return merged

    def load_state(self, state: dict[str, Any]) -> None:
        for load in self.plugins.hooks("load_state"):
            load(state)


def _open_kinds(snapshot: ClusterSnapshot, offered: list[str]) -> set[TaskType]:
    kinds: tuple[TaskType, ...] = ("map", "reduce")
    return {
        kind
        for kind in kinds
        if any(snapshot.nodes[name].slots(kind) - snapshot.running_on(name, kind) > 0 for name in offered)
    }


class _Waiting:
    """The placement a permit plugin refused (its task waits): not bound, not "fits nowhere"."""


_WAITS = _Waiting()
