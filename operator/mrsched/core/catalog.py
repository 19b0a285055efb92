"""Node classes, application profiles and cluster layouts, read from the YAML files under ``mrsched/data``.

The simulator and the node emulator build their hidden node physics and task demands from here; a class's
``source`` names the seed table it reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mrsched.core.physics import NodeCapability, TaskDemand

TaskType = Literal["map", "reduce"]

#: Where each numeric default of the models below comes from (code defaults are constants too), keyed
#: ``Model.alias`` and valued as a catalog entry's ``sources`` are (mrsched.core.provenance's kinds).
#: tests/unit/project/test_constant_sources.py fails on a numeric default without an entry and on an entry naming none.
#: ``PhysicsSpec.crossRackMBps`` defaults to None, which stands for a number (half the NIC, ``cross_rack_cost``).
DEFAULT_SOURCES: dict[str, str] = {
    "PhysicsSpec.cpuRate": "paper: seed 002 Eq 3.5 and Table 3.1, κc = 1 is the reference machine (machine1-2)",
    "PhysicsSpec.diskRate": "paper: seed 002 Eq 3.5 and Table 3.1, κd = 1 is the reference machine (machine1-2)",
    "PhysicsSpec.overheadS": "assumption: 1 s task start-up for a class that names no Ω (the seeds give Ω only for "
    "seed 002's machines, 4.8-45 s; a JVM or interpreter starts in about a second)",
    "PhysicsSpec.overheadCpuShare": "measured: our workers' start-up is CPU work, 0.17 s wall = 0.17 CPU-s "
    "(`make calibrate`, bench/results/calibration/report.md); a class whose paper says otherwise sets its own",
    "PhysicsSpec.networkMBps": "spec: 1 Gbit/s Ethernet = 125 MB/s, the NIC of the seeds' clusters (seed 000 §V-A)",
    "PhysicsSpec.noiseSigma": "assumption: 5 % log-normal spread of a task's work (seed 002 §3.2.1 learns a σ per "
    "machine but reports none)",
    "PhysicsSpec.cpuContention": "assumption: near dara-8core's 0.22, set from seed 002 Fig 2.5's Pi peak at 12 tasks "
    "on 8 cores; no other seed measures CPU contention",
    "PhysicsSpec.diskContention": "assumption: seek thrashing of one hard disk per extra stream (0 for an SSD, "
    "PhysicsSpec.storage); no seed gives a disk-only concurrency curve",
    "PhysicsSpec.swapPenalty": "assumption: swapping slows work about tenfold (memory vs disk speed); no seed "
    "over-subscribes memory",
    "PhysicsSpec.oomRatio": "assumption: the kernel's OOM killer acts once demand is 1.5x the node's memory (swap "
    "exhausted); no seed reports a kill",
    "PhysicsSpec.crossRackMBps": "assumption: None = half the NIC, a 2:1 oversubscribed rack uplink, common in "
    "Hadoop racks of the seeds' era (no seed states its topology)",
    "NodeClass.pods": "spec: Kubernetes kubelet's default maxPods, 110",
    "TaskProfile.cpuS": "assumption: a term a profile does not name is absent (zero work)",
    "TaskProfile.cpuSPerMB": "assumption: a term a profile does not name is absent (zero work)",
    "TaskProfile.readMB": "assumption: a term a profile does not name is absent (zero bytes)",
    "TaskProfile.readPerInput": "assumption: a term a profile does not name is absent (zero bytes)",
    "TaskProfile.writeMB": "assumption: a term a profile does not name is absent (zero bytes)",
    "TaskProfile.writePerInput": "assumption: a term a profile does not name is absent (zero bytes)",
    "TaskProfile.memoryMB": "assumption: 256 MB for a profile that names no memory, within seed 002 Table 2.1's "
    "140-300 MB per map",
    "TaskProfile.waitS": "assumption: a task sleeps only where its profile says so (zero wait)",
    "TaskProfile.waitSPerMB": "assumption: a task sleeps only where its profile says so (zero wait)",
    "TaskProfile.writeReplicas": "assumption: a profile's writes are one copy (what the task process moves, as "
    "seed 002 Table 2.1 counts bytes) unless it says its figure includes HDFS replicas",
    "TaskProfile.threads": "measured: our workers run one runnable thread per task, CPU s / wall s <= 1.00 at one "
    "task (bench/results/calibration/report.md, `make calibrate`)",
    "NodeGroup.count": "assumption: a node group that names no count is one node",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


#: What a class's disk is. ``ssd``: a flash disk has no head to move, so concurrent streams share its bandwidth
#: without seek thrashing, and its ``diskContention`` is 0 unless the class sets one. spec: a NAND SSD serves
#: requests from parallel flash channels with no seek (there is no mechanical positioning to thrash).
Storage = Literal["hdd", "ssd"]
#: The seek-thrashing factor of a hard disk when a class names none (``DEFAULT_SOURCES``), and of an SSD.
HDD_DISK_CONTENTION, SSD_DISK_CONTENTION = 0.1, 0.0


class PhysicsSpec(_Strict):
    """A node class's hidden physics (``NodeCapability``'s fields, by their catalog names)."""

    storage: Storage = "hdd"
    cpu_rate: float = Field(1.0, alias="cpuRate", gt=0)
    disk_rate: float = Field(1.0, alias="diskRate", gt=0)
    overhead_s: float = Field(1.0, alias="overheadS", ge=0)
    #: The share of Ω that is CPU work (``NodeCapability.overhead_cpu_share``).
    overhead_cpu_share: float = Field(1.0, alias="overheadCpuShare", ge=0, le=1)
    network_mbps: float = Field(125.0, alias="networkMBps", gt=0)
    noise_sigma: float = Field(0.05, alias="noiseSigma", ge=0)
    cpu_contention: float = Field(0.2, alias="cpuContention", ge=0)
    #: None: the storage's (HDD_DISK_CONTENTION, SSD_DISK_CONTENTION).
    disk_contention: float | None = Field(None, alias="diskContention", ge=0)
    swap_penalty: float = Field(10.0, alias="swapPenalty", ge=0)
    oom_ratio: float = Field(1.5, alias="oomRatio", ge=1)
    #: This node's share of its rack's uplink, MB/s: what a transfer to or from another rack gets. Default:
    #: half the NIC (a 2:1 oversubscribed uplink, common in Hadoop racks of the papers' era). [not in papers]
    cross_rack_mbps: float | None = Field(None, alias="crossRackMBps", gt=0)

    @property
    def seek_contention(self) -> float:
        """b of ``NodeCapability.disk_contention``: the class's own, else its storage's."""
        if self.disk_contention is not None:
            return self.disk_contention
        return SSD_DISK_CONTENTION if self.storage == "ssd" else HDD_DISK_CONTENTION

    def cross_rack_cost(self) -> float:
        """How many times longer a byte takes from another rack than from the same rack."""
        return 2.0 if self.cross_rack_mbps is None else max(1.0, self.network_mbps / self.cross_rack_mbps)


class NodeClass(_Strict):
    name: str = ""
    source: str = ""
    #: Where each of its numbers comes from, by dotted path (mrsched.core.provenance).
    sources: dict[str, str] = Field(default_factory=dict)
    cores: int = Field(ge=1)
    memory_mib: int = Field(alias="memoryMiB", ge=64)
    pods: int = Field(110, ge=1)
    physics: PhysicsSpec = PhysicsSpec()

    def capability(self) -> NodeCapability:
        p = self.physics
        return NodeCapability(
            cores=self.cores,
            memory_mb=self.memory_mib * 1.048576,
            cpu_rate=p.cpu_rate,
            disk_rate=p.disk_rate,
            overhead_s=p.overhead_s,
            overhead_cpu_share=p.overhead_cpu_share,
            network_mbps=p.network_mbps,
            noise_sigma=p.noise_sigma,
            cpu_contention=p.cpu_contention,
            disk_contention=p.seek_contention,
            swap_penalty=p.swap_penalty,
            oom_ratio=p.oom_ratio,
        )


class TaskProfile(_Strict):
    """Demand of one task as an affine function of its input size in MB."""

    cpu_s: float = Field(0.0, alias="cpuS", ge=0)
    cpu_s_per_mb: float = Field(0.0, alias="cpuSPerMB", ge=0)
    read_mb: float = Field(0.0, alias="readMB", ge=0)
    read_per_input: float = Field(0.0, alias="readPerInput", ge=0)
    write_mb: float = Field(0.0, alias="writeMB", ge=0)
    write_per_input: float = Field(0.0, alias="writePerInput", ge=0)
    memory_mb: float = Field(256.0, alias="memoryMB", ge=0)
    #: Seconds the task sleeps using nothing (not runnable): waitS + waitSPerMB·M.
    wait_s: float = Field(0.0, alias="waitS", ge=0)
    wait_s_per_mb: float = Field(0.0, alias="waitSPerMB", ge=0)
    #: Runnable threads in the CPU phase (``TaskDemand.threads``): a JVM task's GC and spill threads.
    threads: int = Field(1, ge=1)
    #: How many HDFS copies its write figures hold (jio's Table 3.2 θd: 3); with
    #: ``cluster.physics.replicaWritesRemote`` all but one are written by other nodes.
    write_replicas: int = Field(1, alias="writeReplicas", ge=1)
    # A map's output that the reduces fetch (the shuffle), when it is not what the map writes to disk
    # (Pi writes spills and logs but emits two numbers).
    output_mb: float | None = Field(None, alias="outputMB", ge=0)
    output_per_input: float | None = Field(None, alias="outputPerInput", ge=0)

    def output(self, input_mb: float) -> float:
        """MB of map output for the shuffle: outputMB + outputPerInput·M, or what the map writes."""
        if self.output_mb is None and self.output_per_input is None:
            return self.write_mb + self.write_per_input * input_mb
        return (self.output_mb or 0.0) + (self.output_per_input or 0.0) * input_mb

    def demand(self, input_mb: float, *, network_mb: float = 0.0) -> TaskDemand:
        return TaskDemand(
            cpu_s=self.cpu_s + self.cpu_s_per_mb * input_mb,
            read_mb=self.read_mb + self.read_per_input * input_mb,
            write_mb=self.write_mb + self.write_per_input * input_mb,
            network_mb=network_mb,
            memory_mb=self.memory_mb,
            wait_s=self.wait_s + self.wait_s_per_mb * input_mb,
            threads=self.threads,
        )


class Application(_Strict):
    map: TaskProfile
    reduce: TaskProfile | None = None
    #: Where each of its numbers comes from, by dotted path (mrsched.core.provenance).
    sources: dict[str, str] = Field(default_factory=dict)

    def profile(self, task_type: TaskType) -> TaskProfile:
        if task_type == "reduce":
            if self.reduce is None:
                raise CatalogError("this application is map-only: it has no reduce tasks")
            return self.reduce
        return self.map


class NodeGroup(_Strict):
    node_class: str = Field(alias="class")
    count: int = Field(1, ge=1)
    zone: str = "zone-a"
    rack: str = "rack-1"
    name_prefix: str | None = Field(None, alias="namePrefix")
    #: The group's nodes' names, one per count, when they must match names elsewhere (a trace's hosts).
    names: list[str] | None = None
    #: The group's nodes hold input data (HDFS DataNodes); false for compute-only nodes (seed 003's Set B:
    #: 8 nodes added without data). The simulator places input replicas only on nodes that store data.
    stores_data: bool = Field(True, alias="storesData")
    #: The class itself when a scenario defines it inline (``cluster.nodeClasses``), else None: the catalog's.
    defined: NodeClass | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _one_name_each(self) -> NodeGroup:
        if self.names is not None and len(self.names) != self.count:
            raise ValueError(f"names lists {len(self.names)} nodes for a group of {self.count}")
        return self

    def resolve(self) -> NodeClass:
        """The group's node class: the scenario's own definition, else the catalog's entry of that name."""
        return self.defined if self.defined is not None else node_class(self.node_class)


class ClusterLayout(_Strict):
    name: str = "cluster"
    nodes: list[NodeGroup] = Field(min_length=1)


@dataclass(frozen=True)
class LayoutNode:
    name: str
    node_class: NodeClass
    zone: str
    rack: str
    stores_data: bool = True


def expand_layout(groups: list[NodeGroup], prefix: str = "") -> list[LayoutNode]:
    """One node per count of each group, named ``<prefix><class>-<n>`` (n counts per class from 0 across
    groups), ``<namePrefix><n>`` when the group sets one, or as its ``names`` list them."""
    nodes: list[LayoutNode] = []
    counters: dict[str, int] = {}
    for group in groups:
        cls = group.resolve()
        stem = group.name_prefix or f"{prefix}{cls.name}-"
        for i in range(group.count):
            if group.names is not None:
                nodes.append(LayoutNode(group.names[i], cls, group.zone, group.rack, group.stores_data))
                continue
            index = counters.get(stem, 0)
            counters[stem] = index + 1
            nodes.append(LayoutNode(f"{stem}{index}", cls, group.zone, group.rack, group.stores_data))
    return nodes


class CatalogError(ValueError):
    """A catalog file or a lookup in it is wrong; the message says what to fix."""


def _read_yaml(path: Path | None, packaged: str) -> Any:
    if path is not None:
        text = Path(path).read_text()
    else:
        text = resources.files("mrsched").joinpath("data", packaged).read_text()
    return yaml.safe_load(text)


def _validated(model: type[BaseModel], data: Any, what: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise CatalogError(f"{what}: {err}") from None


@cache
def node_classes(path: Path | None = None) -> dict[str, NodeClass]:
    raw = _read_yaml(path, "node_classes.yaml")["classes"]
    return {
        name: _validated(NodeClass, {**spec, "name": name}, f"node class {name!r}")
        for name, spec in raw.items()
    }


@cache
def applications(path: Path | None = None) -> dict[str, Application]:
    raw = _read_yaml(path, "applications.yaml")["applications"]
    return {name: _validated(Application, spec, f"application {name!r}") for name, spec in raw.items()}


def node_class(name: str, path: Path | None = None) -> NodeClass:
    classes = node_classes(path)
    if name not in classes:
        raise CatalogError(f"unknown node class {name!r}; known classes: {', '.join(sorted(classes))}")
    return classes[name]


def application(name: str, path: Path | None = None) -> Application:
    apps = applications(path)
    if name not in apps:
        raise CatalogError(f"unknown application {name!r}; known applications: {', '.join(sorted(apps))}")
    return apps[name]


def load_cluster_layout(path: Path | str | None = None) -> ClusterLayout:
    """A cluster file (see ``data/clusters/default.yaml``); the packaged default when ``path`` is None."""
    data = _read_yaml(Path(path) if path else None, "clusters/default.yaml")
    layout: ClusterLayout = _validated(ClusterLayout, data, f"cluster file {path or 'default'}")
    for group in layout.nodes:
        node_class(group.node_class)  # fail early on a typo, naming the known classes
    return layout
