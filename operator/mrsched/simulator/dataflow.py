"""Where a task's bytes come from and what moving them costs: the simulator's data paths.

A map reads its split from the local disk when a replica is on its node, otherwise over the network: at the
NIC's bandwidth from a node of its rack, at the rack uplink's share (``crossRackMBps`` of the node class,
default half the NIC) from another rack, so a byte from another rack costs ``cross`` bytes of NIC time. A
finished map's output stays on its node (``Job.map_output_mb``, seed 003's w_i(u)); a reduce fetches its
partition of every node's output, from its own disk, its rack, or across racks, each charged the same way.

With ``PhysicsOptions.remoteReadsLoadReplica`` the replica a remote map reads from does the disk read
(:meth:`DataFlow.replica_for`); with ``shuffleWhileMapsRun`` a reduce placed early fetches each map's output as
the map ends (:meth:`DataFlow.fetch_mb`), in the same units as :meth:`DataFlow.demand` charges at the end, so
the bytes fetched early are subtracted from what is left; with ``replayMeasuredTime`` a trace container's
demand is its measured time and nothing else (``base_demand``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import replace

from mrsched.core.catalog import application, expand_layout
from mrsched.core.locality import locality
from mrsched.core.model import Job, Node, Task
from mrsched.core.physics import NodeCapability, TaskDemand
from mrsched.simulator.scenario import ClusterSpec, PhysicsOptions, PhysicsVariant


def build_nodes(cluster: ClusterSpec) -> tuple[dict[str, Node], dict[str, NodeCapability], dict[str, float]]:
    """The cluster's nodes as policies see them (their class's slots), their hidden capabilities, and how many
    times longer a byte from another rack takes to reach each (``PhysicsSpec.cross_rack_cost``)."""
    layout = expand_layout(cluster.nodes)
    nodes = {
        n.name: Node(
            n.name,
            n.node_class.cores,
            n.node_class.memory_mib * 1.048576,
            n.rack,
            n.zone,
            node_class=n.node_class.name,
            map_slots=cluster.slots(n.node_class.name)[0],
            reduce_slots=cluster.slots(n.node_class.name)[1],
            by_requests=cluster.concurrency == "requests",
        )
        for n in layout
    }
    stragglers = cluster.stragglers
    capabilities = {
        n.name: replace(
            cap := cluster.node_class(n.node_class).capability(),
            # overheadUsesCpu off: every start-up a free delay, whatever its class's CPU share.
            overhead_cpu_share=cap.overhead_cpu_share if cluster.physics.overhead_uses_cpu else 0.0,
            contention_onset=cluster.variant.contention_onset,
            straggler_probability=stragglers.probability,
            straggler_shape=stragglers.pareto_shape,
            straggler_max=stragglers.max_slowdown,
        )
        for n in layout
    }
    return nodes, capabilities, {n.name: n.node_class.physics.cross_rack_cost() for n in layout}


def base_demand(app: str, task: Task, *, measured_time: bool = False) -> TaskDemand:
    """A task's demand with its input local: its application profile's, or a trace's measured time
    (``Task.work_s``: SLS gives durations, not bytes). With ``measured_time`` (``replayMeasuredTime``) the
    measured time is the container's whole duration on the reference node (κc = 1), so it is CPU work with no
    start-up, disk or network beside it; without, it is CPU work the profile's start-up and I/O are added to.
    The engine adds remote reads; the lower bound starts here."""
    base = application(app).profile(task.kind).demand(task.input_mb)
    if task.work_s is None:
        return base
    if measured_time:
        return TaskDemand(cpu_s=task.work_s, memory_mb=base.memory_mb, startup=False)
    return replace(base, cpu_s=task.work_s)


class DataFlow:
    """The data paths of one simulated cluster (module docstring)."""

    def __init__(
        self,
        nodes: dict[str, Node],
        cross_rack_cost: dict[str, float],
        options: PhysicsOptions,
        variant: PhysicsVariant | None = None,
    ) -> None:
        self.nodes = nodes
        self.cross_rack_cost = cross_rack_cost
        self.options = options
        self.variant = variant or PhysicsVariant()

    def base(self, app: str, task: Task) -> TaskDemand:
        """:func:`base_demand` as this run's physics has it: a replayed trace's measured time (``replayMeasuredTime``),
        a CPU-heavy task's threads (``cluster.variant.cpuHeavyThreads``)."""
        demand = base_demand(app, task, measured_time=self.options.replay_measured_time)
        threads = self.variant.cpu_heavy_threads
        if threads > 1 and demand.cpu_s >= demand.disk_s and demand.threads < threads:
            return replace(demand, threads=threads)
        return demand

    def replayed(self, task: Task) -> bool:
        """A trace container replayed by its measured time: no data path of its own."""
        return task.work_s is not None and self.options.replay_measured_time

    def demand(self, app: str, task: Task, node: str, held: dict[str, float]) -> TaskDemand:
        """The true demand of ``task`` on ``node``, given where its job's map output is (``held``)."""
        base = self.base(app, task)
        if self.replayed(task):
            return base
        copies = self.write_copies(app, task)
        if copies > 1:  # replicaWritesRemote: the other copies are other nodes' writes
            base = base.with_data(
                read_mb=base.read_mb, write_mb=base.write_mb / copies, network_mb=base.network_mb
            )
        here = self.nodes[node]
        cross = self.cross_rack_cost[node]
        if task.kind == "map":
            level = locality(task, here, self.nodes)
            if level in ("rack", "off"):
                factor = cross if level == "off" else 1.0
                return base.with_data(
                    read_mb=max(0.0, base.read_mb - task.input_mb),
                    write_mb=base.write_mb,
                    network_mb=task.input_mb * factor,
                )
            return base
        total = sum(held.values())
        if total <= 0:
            return base
        same_rack = sum(mb for u, mb in held.items() if u != node and self.nodes[u].rack == here.rack)
        other_rack = total - same_rack - held.get(node, 0.0)
        remote = task.input_mb * (same_rack + other_rack) / total
        network = task.input_mb * (same_rack + cross * other_rack) / total
        return base.with_data(
            read_mb=max(0.0, base.read_mb - remote), write_mb=base.write_mb, network_mb=network
        )

    def fetch_mb(self, reduce: Task, node: str, source: str, output_mb: float, job_output_mb: float) -> float:
        """NIC work (MB, cross-rack bytes weighted as in :meth:`demand`) for the reduce on ``node`` to copy its
        partition of ``output_mb`` of map output on ``source``, of ``job_output_mb`` the job's maps write in all.
        Zero from its own node: that part is read from the local disk when the reduce runs."""
        return self.fetch_each([(reduce, node)], source, output_mb, job_output_mb)[0]

    def fetch_each(
        self, reduces: Iterable[tuple[Task, str]], source: str, output_mb: float, job_output_mb: float
    ) -> list[float]:
        """:meth:`fetch_mb` of each (reduce, its node), in one pass: every early reduce of a job when one of its
        maps ends."""
        if job_output_mb <= 0:
            return [0.0 for _ in reduces]
        nodes, cross = self.nodes, self.cross_rack_cost
        rack = nodes[source].rack
        out = []
        for reduce, node in reduces:
            if node == source:
                out.append(0.0)
                continue
            share = reduce.input_mb * output_mb / job_output_mb
            out.append(share if nodes[node].rack == rack else share * cross[node])
        return out

    def replica_for(self, task: Task, node: str) -> str | None:
        """The replica a remote map on ``node`` reads from: one in its rack when there is one, else the first
        listed (HDFS's reader picks the closest replica). None for a local read or an unknown replica."""
        known = [r for r in task.replicas if r in self.nodes and r != node]
        if not known or node in task.replicas:
            return None
        rack = self.nodes[node].rack
        return next((r for r in known if self.nodes[r].rack == rack), known[0])

    def write_copies(self, app: str, task: Task) -> int:
        """How many HDFS copies ``task``'s writes hold that ``replicaWritesRemote`` spreads over nodes (1: none)."""
        if not self.options.replica_writes_remote:
            return 1
        return application(app).profile(task.kind).write_replicas

    def replica_targets(self, attempt: str, node: str, count: int) -> list[str]:
        """Where HDFS's default placement puts ``count`` more copies of a block ``node`` writes: the first on
        another rack, the next beside it on that rack (a node of ``node``'s rack when there is no other rack).
        Chosen from the attempt's name, so the same run places them the same way."""
        others = sorted(n for n in self.nodes if n != node)
        if not others or count <= 0:
            return []
        pick = zlib.crc32(attempt.encode())
        rack = self.nodes[node].rack
        remote = [n for n in others if self.nodes[n].rack != rack] or others
        first = remote[pick % len(remote)]
        beside = [n for n in others if self.nodes[n].rack == self.nodes[first].rack and n != first]
        rest = beside or [n for n in others if n != first]
        targets = [first]
        for i in range(count - 1):
            if not rest:
                break
            targets.append(rest[(pick // (i + 2)) % len(rest)])
            rest = [n for n in rest if n != targets[-1]]
        return targets

    @staticmethod
    def job_output_mb(app: str, job: Job) -> float:
        """What all of a job's maps will write for the shuffle (``TaskProfile.output``)."""
        profile = application(app).map
        return sum(profile.output(task.input_mb) for task in job.maps)
