"""Scenario files: a cluster, a workload and the policies to compare, as YAML under ``bench/scenarios/``.

Example (every key is described on its model below)::

    name: gupta-ch3-pi-jio
    source: "seed 002 §3.2, Fig 3.7 and Table 3.3"
    headline: "ThroughputScheduler finishes J_IO + Pi up to 40 % sooner than FIFO and 20 % sooner than Fair"
    cluster:
      nodes:
        - {class: gupta-old, count: 2, zone: zone-a, rack: rack-1}
        - {class: gupta-new, count: 2, zone: zone-a, rack: rack-1}
        - {class: gupta-new-fast, count: 1, zone: zone-a, rack: rack-1}
      mapSlots: 2
      reduceSlots: 2
      heartbeatS: 3
    workload:
      jobs:
        - {id: jio, app: jio, user: alice, submitS: 0, maps: 30, reduces: 1, inputMBPerMap: 64}
        - {id: pi, app: pi, user: alice, submitS: 0, maps: 200, reduces: 1}
    policies: [fifo, fair, kube-default, greedy-informed]
    seeds: [1, 2, 3, 4, 5]

A policy entry is a registered policy name, or ``name:variant`` to run the same policy twice with different
options; ``policyOptions`` maps an entry (the full ``name:variant`` label, else the bare name) to that policy's
options, e.g. ``policyOptions: {"throughput:known": {profiles: {pi: {thetaC: 10, thetaD: 0.05}}}}``.

Instead of (or besides) ``jobs``, ``workload.trace`` replays a trace file (``format``: swim, sls or rumen), and
``workload.interArrival`` re-draws the submission gaps of the listed jobs from a SWIM trace (seed 002 §4.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from mrsched.core.catalog import CatalogError, application
from mrsched.simulator.physics_options import PhysicsOptions, PhysicsVariant, SpeculationSpec, StragglerSpec
from mrsched.simulator.scenario.base import (
    CONCURRENCIES,
    DEFAULT_POLICIES,
    MODES,
    Concurrency,
    PlacementMode,
    ScenarioError,
    _Strict,
    policy_name,
)
from mrsched.simulator.scenario.cluster import (
    ClusterSpec,
    FaultSpec,
    MetricsSpec,
    MonitorSpec,
    OutageSpec,
    SlotsSpec,
    YarnSpec,
)
from mrsched.simulator.scenario.sources import DEFAULT_SOURCES
from mrsched.simulator.scenario.workload import (
    HintsSpec,
    InterArrivalSpec,
    JobSpec,
    TraceSpec,
    TraceUsersSpec,
    WorkloadSpec,
)

__all__ = [
    "CONCURRENCIES",
    "DEFAULT_POLICIES",
    "DEFAULT_SOURCES",
    "MODES",
    "ClusterSpec",
    "Concurrency",
    "FaultSpec",
    "HintsSpec",
    "InterArrivalSpec",
    "JobSpec",
    "MetricsSpec",
    "MonitorSpec",
    "OutageSpec",
    "PhysicsOptions",
    "PhysicsVariant",
    "PlacementMode",
    "Scenario",
    "ScenarioError",
    "SlotsSpec",
    "SpeculationSpec",
    "StragglerSpec",
    "TraceSpec",
    "TraceUsersSpec",
    "WorkloadSpec",
    "YarnSpec",
    "load_scenario",
    "policy_name",
]


class Scenario(_Strict):
    name: str
    source: str  # the seed section and tables it comes from
    headline: str  # the paper's result it is meant to reproduce
    #: Where each of its numbers comes from, by dotted path (mrsched.core.provenance).
    sources: dict[str, str] = Field(default_factory=dict)
    cluster: ClusterSpec
    workload: WorkloadSpec
    policies: list[str] = Field(default_factory=lambda: list(DEFAULT_POLICIES))
    #: Options per policy entry (label ``name:variant`` or bare name), passed to the policy's config.
    policy_options: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="policyOptions")
    #: Cluster keys that differ for one policy entry, e.g. ``{"fair:slots3": {mapSlots: 3}}`` (seed 001
    #: Table V runs Fair with 2-7 fixed map slots against one adaptive run).
    cluster_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="clusterOverrides")
    seeds: list[int] = Field(default_factory=lambda: [1])
    #: Placement modes to run (``PlacementMode``); ``make bench`` runs each scenario in every mode it lists.
    modes: list[PlacementMode] = Field(default_factory=lambda: list(MODES), min_length=1)
    #: A soft-fault health monitor running beside every policy (off unless ``enabled``).
    monitor: MonitorSpec = Field(default_factory=MonitorSpec)
    base_dir: Path = Field(Path("."), exclude=True)

    def options_for(self, label: str) -> dict[str, Any] | None:
        """The options of a policy entry: its own label's, else its bare policy name's."""
        found = self.policy_options.get(label)
        return found if found is not None else self.policy_options.get(policy_name(label))

    def with_concurrency(self, concurrency: Concurrency) -> Scenario:
        """The same scenario with every node's concurrency rule set (``--concurrency``)."""
        cluster = self.cluster.model_copy(update={"concurrency": concurrency})
        return self.model_copy(update={"cluster": cluster})

    def cluster_for(self, label: str) -> ClusterSpec:
        """The cluster a policy entry runs on: the scenario's, with the entry's overrides."""
        overrides = self.cluster_overrides.get(label)
        if not overrides:
            return self.cluster
        return ClusterSpec.model_validate({**self.cluster.model_dump(by_alias=True), **overrides})

    def resolve(self, relative: str) -> Path:
        path = Path(relative)
        return path if path.is_absolute() else (self.base_dir / path).resolve()


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate a scenario file; unknown applications and node classes are named."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
        scenario = Scenario.model_validate({**data, "base_dir": path.parent})
        for group in scenario.cluster.nodes:
            group.resolve()
        for job in scenario.workload.jobs:
            application(job.app)
        for label in scenario.cluster_overrides:
            if label not in scenario.policies:
                raise ScenarioError(f"{path}: clusterOverrides names {label!r}, which is not in policies")
            scenario.cluster_for(label)
        if scenario.monitor is not None:
            for label in scenario.monitor.feedback:
                if label not in scenario.policies:
                    raise ScenarioError(f"{path}: monitor.feedback names {label!r}, which is not in policies")
        if scenario.workload.trace:
            application(scenario.workload.trace.app)
    except (ValidationError, CatalogError, yaml.YAMLError) as err:
        raise ScenarioError(f"{path}: {err}") from None
    return scenario
