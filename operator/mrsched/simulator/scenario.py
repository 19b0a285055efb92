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

from collections import Counter
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mrsched.core.catalog import (
    CatalogError,
    NodeClass,
    NodeGroup,
    Storage,
    application,
    expand_layout,
    node_classes,
)
from mrsched.core.model import UNCAPPED
from mrsched.simulator.physics_options import (
    PhysicsOptions,
    PhysicsVariant,
    SpeculationSpec,
    StragglerSpec,
)

#: Re-exported: a cluster's physics is part of its spec (they moved to physics_options.py).
__all__ = ["PhysicsOptions", "PhysicsVariant", "SpeculationSpec", "StragglerSpec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


#: Without a ``policies`` list: Hadoop's two slot baselines, kube-scheduler and the greedy policy. Capacity is not
#: among them: with one queue it orders jobs as FIFO does, so a scenario lists it where it configures queues.
DEFAULT_POLICIES = ("fifo", "fair", "kube-default", "greedy-informed")

#: Where each numeric default of the models below comes from (code defaults are constants too), keyed
#: ``Model.alias`` and valued as a scenario's ``sources`` are (mrsched.core.provenance's kinds).
#: tests/unit/project/test_constant_sources.py fails on a numeric default without an entry and on an entry naming none.
DEFAULT_SOURCES: dict[str, str] = {
    "FaultSpec.startS": "assumption: a fault that names no start is there from time 0",
    "FaultSpec.intensity": "assumption: one busy loop per core, one hog stream or one lost core unless the scenario "
    "says (seed 002 §5.2.6 states no intensity)",
    "MetricsSpec.scrapeS": "assumption: a 5 s scrape, fine enough to follow tasks of a minute (Prometheus's own "
    "default is 1 min)",
    "MetricsSpec.rateWindowS": "assumption: two scrapes per rate() window, the fewest rate() can use",
    "MetricsSpec.maxAgeS": "assumption: the operator's --metrics-max-age default (30 s, six missed scrapes)",
    "MonitorSpec.windowS": "paper: seed 002 Fig 6.2 plots per-server throughput per minute; one-minute windows",
    "ClusterSpec.mapSlots": "spec: Hadoop 1.2.1 mapred.tasktracker.map.tasks.maximum = 2 (mapred-default.xml)",
    "ClusterSpec.reduceSlots": "spec: Hadoop 1.2.1 mapred.tasktracker.reduce.tasks.maximum = 2 (mapred-default.xml)",
    "ClusterSpec.heartbeatS": "spec: Hadoop 0.20's minimum TaskTracker heartbeat interval, 3 s (MRConstants "
    "HEARTBEAT_INTERVAL_MIN; Hadoop 1.1+ lowered the minimum to 0.3 s)",
    "HintsSpec.cpu": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.memory": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.disk": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.network": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "JobSpec.submitS": "assumption: a job that names no submission time arrives at the start",
    "JobSpec.maps": "assumption: one map for a job that names no count (every scenario states its own)",
    "JobSpec.reduces": "spec: Hadoop 1.2.1 mapred.reduce.tasks = 1 (mapred-default.xml)",
    "JobSpec.inputMBPerMap": "spec: Hadoop 1.2.1 dfs.block.size = 64 MB (hdfs-default.xml), one split per block",
    "JobSpec.replication": "spec: HDFS dfs.replication = 3 (hdfs-default.xml)",
    "JobSpec.priority": "assumption: every job at the same (Hadoop's NORMAL) priority unless a scenario sets one",
    "JobSpec.weight": "spec: Hadoop Fair Scheduler's default weight, 1.0",
    "JobSpec.repeat": "assumption: a job is submitted once unless the scenario repeats it",
    "JobSpec.everyS": "assumption: no gap between repeats unless the scenario gives one",
    "JobSpec.reduceSlowstart": "spec: Hadoop 1.2.1 mapred.reduce.slowstart.completed.maps = 0.05 (mapred-default.xml)",
    "JobSpec.cpuRequest": "paper: seed 002 §2.5 (Eq 2.1), a YARN container is 1 CPU core and typically 1 GB",
    "JobSpec.memoryRequestMB": "paper: seed 002 §2.5 (Eq 2.1), a YARN container is 1 CPU core and typically 1 GB",
    "TraceSpec.timeScale": "assumption: a trace is replayed at its recorded times unless the scenario scales it",
    "TraceSpec.sizeScale": "assumption: a trace is replayed at its recorded sizes unless the scenario scales it",
    "TraceSpec.blockMB": "spec: Hadoop 2 dfs.blocksize = 128 MB (hdfs-default.xml), one map per block",
    "YarnSpec.amMemoryMB": "spec: SLS 3.3.5 yarn.sls.am.container.memory = 1024 (SLSConfiguration)",
    "YarnSpec.amVcores": "spec: SLS 3.3.5 yarn.sls.am.container.vcores = 1 (SLSConfiguration)",
}


def policy_name(label: str) -> str:
    """The registered policy behind a scenario's policy entry (``throughput:known`` -> ``throughput``)."""
    return label.split(":", 1)[0]


class ScenarioError(ValueError):
    """A scenario file is wrong; the message names the file and the field."""


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


class HintsSpec(_Strict):
    """Seed 000's 1-10 job features."""

    cpu: int = Field(5, ge=1, le=10)
    memory: int = Field(5, ge=1, le=10)
    disk: int = Field(5, ge=1, le=10)
    network: int = Field(5, ge=1, le=10)


class JobSpec(_Strict):
    id: str | None = None  # default: "<app>-<n>"
    app: str
    user: str = "default"
    queue: str = "default"
    submit_s: float = Field(0.0, alias="submitS", ge=0)
    maps: int = Field(1, ge=1)
    reduces: int = Field(1, ge=0)
    input_mb_per_map: float = Field(64.0, alias="inputMBPerMap", ge=0)
    replication: int = Field(3, ge=1)  # replicas of each input split, placed at random
    priority: int = 0
    weight: float = Field(1.0, gt=0)
    repeat: int = Field(1, ge=1)  # submit this job `repeat` times ...
    every_s: float = Field(0.0, alias="everyS", ge=0)  # ... this many seconds apart
    reduce_slowstart: float = Field(0.05, alias="reduceSlowstart", ge=0, le=1)
    map_hints: HintsSpec = Field(default_factory=HintsSpec, alias="mapHints")
    reduce_hints: HintsSpec = Field(default_factory=HintsSpec, alias="reduceHints")
    cpu_request: float = Field(1.0, alias="cpuRequest", gt=0)  # per task pod (kube-default packs by these)
    memory_request_mb: float = Field(1024.0, alias="memoryRequestMB", gt=0)


class TraceUsersSpec(_Strict):
    """Users for the jobs of a trace that records none (SWIM), e.g. ``users: {count: 8, rule: size}``: every
    job becomes ``user-0`` ... ``user-<count-1>`` (``mrsched.simulator.traces.common.assign_users``).

    * ``hash``: ``k = blake2b(trace job id) mod count``: users alike, each a random sample of the job mix;
    * ``size``: ``k`` = the job's band of map input bytes, the bands split at the ``i/count`` quantiles of the
      whole trace's input sizes (``user-0`` the smallest jobs): users that differ in job size, as teams
      running interactive queries and ETL do.
    """

    count: int = Field(ge=1)
    rule: Literal["hash", "size"]


class TraceSpec(_Strict):
    format: Literal["swim", "sls", "rumen"]
    path: str  # relative to the scenario file
    max_jobs: int | None = Field(None, alias="maxJobs", ge=1)
    time_scale: float = Field(1.0, alias="timeScale", gt=0)  # divide submission times by this
    # Divide bytes by this: every job shrinks alike, so the size distribution keeps its shape.
    size_scale: float = Field(1.0, alias="sizeScale", gt=0)
    block_mb: float = Field(128.0, alias="blockMB", gt=0)  # one map per block of input, at least one
    app: str = "wordcount"  # the profile that turns a trace job's bytes into work
    #: The trace's jobs' reduce slow-start (``mapred.reduce.slowstart.completed.maps``); 1 starts reduces after
    #: the last map, as SLS's MRAMSimulator asks for them. None: JobSpec's default, Hadoop 1's 0.05.
    reduce_slowstart: float | None = Field(None, alias="reduceSlowstart", ge=0, le=1)
    # Give the jobs users by a rule (applied to the whole trace, before maxJobs and scaling); None: the
    # trace's own users, "default" for SWIM.
    users: TraceUsersSpec | None = None


class InterArrivalSpec(_Strict):
    """Draw gaps between consecutive submissions from a SWIM trace's gap column (seed 002 §4.2)."""

    swim: str  # path to a SWIM TSV, relative to the scenario file


class WorkloadSpec(_Strict):
    jobs: list[JobSpec] = Field(default_factory=list)
    trace: TraceSpec | None = None
    inter_arrival: InterArrivalSpec | None = Field(None, alias="interArrival")

    @model_validator(mode="after")
    def _something(self) -> WorkloadSpec:
        if not self.jobs and self.trace is None:
            raise ValueError("a workload needs jobs, a trace, or both")
        return self


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
