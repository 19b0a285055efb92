"""The cluster of a scenario (``cluster:``): node groups, slots, faults, metrics, the health monitor, YARN
mode's settings and the physics options."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field, model_validator

from mrsched.core.catalog import NodeClass, NodeGroup, Storage, expand_layout, node_classes
from mrsched.core.model import UNCAPPED
from mrsched.simulator.physics_options import PhysicsOptions, PhysicsVariant, SpeculationSpec, StragglerSpec
from mrsched.simulator.scenario.base import Concurrency, _Strict


class FaultSpec(_Strict):
    """A soft fault injected into one node's physics (seed 002 §5.2.6, Fig 6.2)."""

    node: str  # a node name as the layout makes them: "<class>-<n>" or "<namePrefix><n>"
    kind: Literal["cpu-hog", "disk-hog", "lost-cores"]
    start_s: float = Field(0.0, alias="startS", ge=0)
    end_s: float | None = Field(None, alias="endS")
    intensity: float = Field(1.0, gt=0)  # busy loops per core, hog streams, or cores lost


class OutageSpec(_Strict):
    """The metrics source (Prometheus) is down from ``startS`` to ``endS``: no scrapes, no answers."""

    start_s: float = Field(alias="startS", ge=0)
    end_s: float = Field(alias="endS", gt=0)


class MetricsSpec(_Strict):
    """Node metrics as a Prometheus scraping the simulated nodes would serve them (``mrsched.simulator.metrics``;
    modelled only for policies that read metrics)."""

    #: Scrape interval: a policy sees each node's counters as of its latest scrape, up to this much late.
    scrape_s: float = Field(5.0, alias="scrapeS", gt=0)
    #: ``rate()`` window of CPU utilisation and disk and network rates.
    rate_window_s: float = Field(10.0, alias="rateWindowS", gt=0)
    #: A node whose latest sample is older than this is ``stale`` (the operator's ``--metrics-max-age``).
    max_age_s: float = Field(30.0, alias="maxAgeS", gt=0)
    outages: list[OutageSpec] = Field(default_factory=list)


class MonitorSpec(_Strict):
    """A soft-fault health monitor beside the policy (``mrsched.simulator.detection``; seed 002 §5.3): every node
    probed before time 0, every successful map's duration fed to ``SlowdownMonitor.observe``, its verdicts
    recorded and measured (detection delay, false alarms, per-node throughput). Off by default."""

    enabled: bool = False
    #: Policy entries (labels in ``policies``) that see the verdict: a node judged degraded carries the
    #: monitor's slowdown factors in their snapshots (``Node.slowdown``), which ``throughput`` divides its probed
    #: κ by ("throughput with detection"), as in the operator. Other entries keep their static beliefs; the
    #: monitor only watches them.
    feedback: list[str] = Field(default_factory=list)
    #: Width of the per-node throughput windows (maps per minute, Eq 4.4 work per second).
    window_s: float = Field(60.0, alias="windowS", gt=0)
    #: ``MonitorConfig`` fields to override (thresholds, priors), by their Python names.
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_options(self) -> MonitorSpec:
        if self.options:  # an unknown or invalid option fails here, naming it
            from mrsched.health import MonitorConfig

            try:
                MonitorConfig(**self.options)
            except TypeError as err:
                raise ValueError(f"monitor.options: {err}") from None
        return self


class SlotsSpec(_Strict):
    """One node class's slots (Hadoop 1's ``mapred.tasktracker.{map,reduce}.tasks.maximum`` on its TaskTrackers)."""

    map: int = Field(ge=1)
    reduce: int = Field(ge=0)


class YarnSpec(_Strict):
    """YARN mode's settings (``mode: yarn``): the ApplicationMaster container every job runs first (SLS's
    ``yarn.sls.am.container.memory`` and ``.vcores``, 1024 MB and 1) and how often AMs heartbeat (SLS's
    ``yarn.sls.am.heartbeat.interval.ms``; None: the NodeManagers' ``heartbeatS``)."""

    am_memory_mb: int = Field(1024, alias="amMemoryMB", ge=1)
    am_vcores: int = Field(1, alias="amVcores", ge=1)
    am_heartbeat_s: float | None = Field(None, alias="amHeartbeatS", gt=0)


class ClusterSpec(_Strict):
    nodes: list[NodeGroup] = Field(min_length=1)
    faults: list[FaultSpec] = Field(default_factory=list)
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    # Slots per node for slot-based policies (Hadoop's default: 2 and 2), for classes slotsByClass leaves out.
    map_slots: int = Field(2, alias="mapSlots", ge=1)
    reduce_slots: int = Field(2, alias="reduceSlots", ge=0)
    #: Slots per node class: a heterogeneous cluster's TaskTrackers are configured per machine (an 8-core
    #: machine is not given a 2-core machine's slots). Each scenario says where its counts come from.
    slots_by_class: dict[str, SlotsSpec] = Field(default_factory=dict, alias="slotsByClass")
    #: The disk of a catalog class's nodes in this scenario, where it differs from the catalog's (``hdd``): a
    #: class marked ``ssd`` gets no seek thrashing unless its physics names a ``diskContention``.
    storage_by_class: dict[str, Storage] = Field(default_factory=dict, alias="storageByClass")
    heartbeat_s: float = Field(3.0, alias="heartbeatS", gt=0)  # Hadoop 1's minimum TaskTracker heartbeat
    #: How many tasks a node runs at once. ``slots``: the fixed map and reduce slots above (Hadoop 1, as the
    #: papers ran; kept for reproducing them). ``requests``: Kubernetes' rule, as the operator runs by default:
    #: a node takes pods while their requests (``cpuRequest``, ``memoryRequestMB``) fit its cores and memory,
    #: maps and reduces from one allocatable, and a policy may run fewer; the slot settings are then unused.
    concurrency: Concurrency = "slots"
    #: The measured physics, every switch on unless the scenario turns one off and says why.
    physics: PhysicsOptions = Field(default_factory=lambda: PhysicsOptions())
    #: A sensitivity variant of the physics (none by default).
    variant: PhysicsVariant = Field(default_factory=lambda: PhysicsVariant())
    stragglers: StragglerSpec = Field(default_factory=lambda: StragglerSpec())
    speculation: SpeculationSpec = Field(default_factory=lambda: SpeculationSpec())
    #: Node classes the scenario defines itself, by name (the catalog's NodeClass fields: ``cores``,
    #: ``memoryMiB``, ``physics``, ``sources``), for nodes no catalog class describes: e.g. a trace's reference
    #: node, on which its container times replay exactly. A name may not shadow a catalog class.
    node_classes: dict[str, NodeClass] = Field(default_factory=dict, alias="nodeClasses")
    yarn: YarnSpec = Field(default_factory=lambda: YarnSpec())

    def node_class(self, cls: NodeClass) -> NodeClass:
        """A node's class as this scenario runs it: the catalog's, with its disk as ``storageByClass`` says."""
        storage = self.storage_by_class.get(cls.name)
        if storage is None or storage == cls.physics.storage:
            return cls
        return cls.model_copy(update={"physics": cls.physics.model_copy(update={"storage": storage})})

    def slots(self, node_class: str) -> tuple[int, int]:
        """(map, reduce) slots of a node of ``node_class``; by requests, uncapped (its allocatable binds)."""
        if self.concurrency == "requests":
            return UNCAPPED, UNCAPPED
        found = self.slots_by_class.get(node_class)
        return (found.map, found.reduce) if found else (self.map_slots, self.reduce_slots)

    @model_validator(mode="before")
    @classmethod
    def _define_inline_classes(cls, data: Any) -> Any:
        """Give each node group of a class the scenario defines its definition (NodeGroup.defined)."""
        if (
            not isinstance(data, dict)
            or not data.get("nodeClasses")
            or not isinstance(data.get("nodes"), list)
        ):
            return data
        defined = data["nodeClasses"]
        if not isinstance(defined, dict):
            return data
        shadowing = sorted(set(defined) & set(node_classes()))
        if shadowing:
            raise ValueError(f"nodeClasses defines {', '.join(shadowing)}, which the catalog already has")
        malformed = sorted(
            str(name) for name, spec in defined.items() if not isinstance(spec, dict | NodeClass)
        )
        if malformed:
            raise ValueError(
                f"nodeClasses: {', '.join(malformed)} must each be a mapping of NodeClass fields"
            )
        classes = {
            name: spec if isinstance(spec, NodeClass) else NodeClass.model_validate({**spec, "name": name})
            for name, spec in defined.items()
        }
        nodes = [
            {**group, "defined": classes[group["class"]]}
            if isinstance(group, dict) and group.get("class") in classes
            else group
            for group in data["nodes"]
        ]
        return {**data, "nodeClasses": classes, "nodes": nodes}

    @model_validator(mode="after")
    def _classes_present(self) -> ClusterSpec:
        present = {group.node_class for group in self.nodes}
        for key, named in (("slotsByClass", self.slots_by_class), ("storageByClass", self.storage_by_class)):
            unknown = sorted(set(named) - present)
            if unknown:
                raise ValueError(f"{key} names {', '.join(unknown)}: no node group has that class")
        counts = Counter(node.name for node in expand_layout(self.nodes))
        repeated = sorted(name for name, n in counts.items() if n > 1)
        if repeated:
            raise ValueError(f"node names must be unique: {', '.join(repeated)} name more than one node")
        return self
