"""What every part of a scenario shares: the strict model base, the placement modes and concurrency rules,
the default policies, and the error a wrong file raises."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


#: Without a ``policies`` list: Hadoop's two slot baselines, kube-scheduler and the greedy policy. Capacity is not
#: among them: with one queue it orders jobs as FIFO does, so a scenario lists it where it configures queues.
DEFAULT_POLICIES = ("fifo", "fair", "kube-default", "greedy-informed")

#: Where a policy may place tasks when it is asked (``Simulation``'s ``mode``; results.json's ``mode``):
#: ``hadoop``: every node heartbeats every ``heartbeatS`` and the policy places tasks on that node only
#: (Hadoop 1's ``assignTasks(taskTracker)``), kube-default and the greedy policy included;
#: ``kubernetes``: a cluster-wide round over every node, every ``heartbeatS`` and at once when a task ends or a
#: job arrives, as the operator's loop runs (its watches wake it);
#: ``yarn``: YARN's protocol as Apache Hadoop's SLS runs it (:mod:`mrsched.simulator.yarn`): containers by memory
#: and vcores, an ApplicationMaster container per job, YARN's FairScheduler or CapacityScheduler (``fair`` and
#: ``capacity`` only). Not in a scenario's default modes: a scenario that wants it lists it.
PlacementMode = Literal["hadoop", "kubernetes", "yarn"]
Concurrency = Literal["slots", "requests"]
CONCURRENCIES: tuple[Concurrency, ...] = ("slots", "requests")
MODES: tuple[PlacementMode, ...] = ("hadoop", "kubernetes")


def policy_name(label: str) -> str:
    """The registered policy behind a scenario's policy entry (``throughput:known`` -> ``throughput``)."""
    return label.split(":", 1)[0]


class ScenarioError(ValueError):
    """A scenario file is wrong; the message names the file and the field."""
