"""Work a task attempt causes beside its own process, run on the NodeModels as tasks of their own:

* with ``cluster.physics.shuffleWhileMapsRun``, a reduce placed before its job's maps are done starts up at
  once (its start-up Ω a side flow on its node) and then copies the maps' output as it learns of them (a
  fetch flow on its NIC, which each newly learnt map's share extends while it runs), as Hadoop's ReduceTask
  copy phase does from slow-start on. It learns of finished maps when its node polls (:meth:`SideFlows.poll`:
  each heartbeat in hadoop mode, as Hadoop 1's TaskTracker ``MapEventsFetcherThread`` asks the JobTracker
  for map completion events every heartbeat interval; each round in kubernetes mode), and of those already
  done when its start-up ends. When the last map ends, :meth:`SideFlows.remaining` says what is left for the
  reduce's own process: its start-up only if it had not ended, and the NIC work no fetch did;
* with ``remoteReadsLoadReplica``, a map reading its split over the network has the replica's disk read it and
  the replica's NIC send it (two side flows on the replica node, side by side as a DataNode streams a block);
* with ``replicaWritesRemote``, the copies of a task's writes beyond its own are received and written by other
  nodes (two side flows on each, its NIC receiving and its disk writing, side by side as a pipeline does),
  and sent along HDFS's write pipeline: the writer's NIC sends the first replica its copy, each replica but
  the last forwards it to the next (a transmit side flow on each sender); all from the moment the task starts
  (not synchronised with its disk phase).

Shuffle fetches charge the receiving reduce's NIC only: a fetch gathers many maps' outputs at once, and their
senders' NICs are not charged (docs/simulator.md, Known limits).

An attempt whose process ends before the replicas it reads from or writes to are done ends with the last of
them (``Running.ended``): a read cannot end before its bytes left the disk, nor an HDFS write before every
copy is acknowledged.

A side flow is named ``<task key>#<attempt>~<what>``; fetches and reads move exactly their bytes (no noise).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mrsched.core.model import Attempt, Job
from mrsched.core.physics import NodeModel, RunOutcome, TaskDemand
from mrsched.simulator.dataflow import DataFlow


@dataclass
class Running:
    """One task attempt the simulator runs, with its side flows."""

    attempt: Attempt
    demand: TaskDemand
    level: str
    model_id: str = ""  # its name on its NodeModel: "<task key>#<attempt number>"
    speculative: bool = False  # a second attempt the JobTracker's speculation started (speculation.py)
    waiting: bool = False  # a reduce holding its slot until its job's maps are done
    side: dict[str, tuple[str, float]] = field(default_factory=dict)  # flow -> (its node, its NIC work in MB)
    fetched_mb: float = 0.0  # NIC work its fetches have done
    queued_mb: float = 0.0  # map output it has not learnt of yet (until its node polls or its start-up ends)
    started_up: bool = False
    fetching: str = ""  # its fetch flow now running, if any
    #: Its process ended while side flows it waits for (a replica's read or write) still ran: what ended.
    ended: RunOutcome | None = None


class SideFlows:
    """The side flows of every running attempt. ``complete(node, now)``, ``reschedule(node)`` and
    ``finish(node, run, now)`` are the engine's: the first collects what has finished on a node (a flow with
    nothing to do ends the moment it starts), the second moves the node's next physics event after a flow
    starts or stops, the third ends an attempt whose process ended (``Running.ended``) once its last flow has."""

    def __init__(
        self,
        models: dict[str, NodeModel],
        dataflow: DataFlow,
        running: dict[str, dict[str, Running]],
        complete: Callable[[str, float], None],
        reschedule: Callable[[str], None],
        finish: Callable[[str, Running, float], None],
    ) -> None:
        self.models = models
        self.dataflow = dataflow
        self.running = running
        self.complete = complete
        self.reschedule = reschedule
        self.finish = finish
        self.owner: dict[str, tuple[str, str]] = {}  # flow -> (its attempt's node, its task key)
        self.waiting: dict[str, list[tuple[str, Running]]] = defaultdict(list)  # job -> its early reduces
        self.job_output: dict[str, float] = {}
        #: node -> its early reduces that are up and have map output they have not learnt of yet (``poll``)
        self.unpolled: dict[str, dict[str, Running]] = {}
        self.ids = itertools.count()

    def _start(
        self, where: str, owner: str, run: Running, flows: tuple[tuple[str, TaskDemand], ...], now: float
    ) -> None:
        """Start ``flows`` (what each does, its demand) on ``where`` for ``run``, whose process is on ``owner``;
        the node's next event is found once for them all."""
        key = run.attempt.task.key
        model = self.models[where]
        for what, demand in flows:
            flow = f"{run.model_id}~{what}"
            self.owner[flow] = (owner, key)
            run.side[flow] = (where, demand.network_mb)
            # A start-up draws its noise like any process's; transfers move exactly their bytes.
            model.start(flow, demand, now, noisy=what == "start")
        if model.has_finished:  # one had nothing to do: it ended the moment it started
            self.complete(where, now)
        else:
            self.reschedule(where)

    def serve_read(self, source: str, node: str, run: Running, now: float) -> None:
        """remoteReadsLoadReplica: ``source``'s disk reads the split the map on ``node`` fetches, and its NIC
        sends it."""
        split = run.attempt.task.input_mb
        self._start(
            source,
            node,
            run,
            (
                ("serve", TaskDemand(read_mb=split, startup=False)),
                ("serve-nic", TaskDemand(transmit_mb=split, startup=False)),
            ),
            now,
        )

    def write_replicas(self, node: str, run: Running, app: str, now: float) -> None:
        """replicaWritesRemote: each other copy of the attempt's writes is received and written by another node
        (:meth:`DataFlow.replica_targets`), in the same 1/r share the writer keeps."""
        task = run.attempt.task
        copies = self.dataflow.write_copies(app, task)
        if copies <= 1:
            return
        share = run.demand.write_mb  # the writer's own copy, already 1/r of the profile's writes
        targets = self.dataflow.replica_targets(run.model_id, node, copies - 1)

        def send(i: int) -> tuple[str, TaskDemand]:
            return f"replica{i + 1}-send", TaskDemand(transmit_mb=share, startup=False)

        # HDFS's pipeline: the writer sends the first replica its copy, each replica forwards it to the next.
        self._start(node, node, run, (send(0),), now)
        for i, target in enumerate(targets):
            flows = (
                (f"replica{i + 1}-nic", TaskDemand(network_mb=share, startup=False)),
                (f"replica{i + 1}-disk", TaskDemand(write_mb=share, startup=False)),
            )
            self._start(target, node, run, flows + ((send(i + 1),) if i + 1 < len(targets) else ()), now)

    def start_early_reduce(self, node: str, run: Running, job: Job, now: float) -> None:
        """shuffleWhileMapsRun: the reduce's process starts now (its start-up a side flow; its memory is taken
        when its own work starts, as without the switch), and the output of the maps already done is queued for
        it to fetch once it is up."""
        self.waiting[job.id].append((node, run))
        if job.id not in self.job_output:
            self.job_output[job.id] = self.dataflow.job_output_mb(job.app, job)
        for source, mb in job.map_output_mb.items():
            run.queued_mb += self.dataflow.fetch_mb(
                run.attempt.task, node, source, mb, self.job_output[job.id]
            )
        self._start(node, node, run, (("start", TaskDemand()),), now)

    def _fetch(self, node: str, run: Running, mb: float, now: float) -> None:
        """Copy ``mb`` more: added to the fetch still running, if any (one flow per reduce at a time, as its
        copier threads share its NIC), else a new fetch flow."""
        if mb <= 0:
            return
        current = run.fetching
        if current in run.side and self.models[node].add_network(current, mb, now):
            where, issued = run.side[current]
            run.side[current] = (where, issued + mb)
            self.reschedule(node)
            return
        run.fetching = f"{run.model_id}~fetch{next(self.ids)}"
        what = run.fetching.split("~")[-1]
        self._start(node, node, run, ((what, TaskDemand(network_mb=mb, startup=False)),), now)

    def map_output(self, job: Job, source: str, output_mb: float) -> None:
        """A map of ``job`` ended on ``source``: each early reduce's partition of it waits for the reduce to learn
        of it (its node's next :meth:`poll`, or the end of its start-up)."""
        waiting = self.waiting.get(job.id, ())
        shares = self.dataflow.fetch_each(
            [(run.attempt.task, node) for node, run in waiting], source, output_mb, self.job_output[job.id]
        )
        unpolled = self.unpolled
        for (node, run), mb in zip(waiting, shares, strict=True):
            run.queued_mb += mb
            if run.started_up:
                polled = unpolled.get(node)
                if polled is None:
                    polled = unpolled[node] = {}
                polled[run.model_id] = run

    def poll(self, node: str, now: float) -> None:
        """``node``'s early reduces learn of the maps that ended since they last asked, and fetch their share."""
        for run in self.unpolled.pop(node, {}).values():
            if run.waiting and self.running[node].get(run.attempt.task.key) is run:  # still shuffling early
                queued, run.queued_mb = run.queued_mb, 0.0
                self._fetch(node, run, queued, now)

    def finished(self, flow: str, now: float) -> None:
        """``flow`` ended on its node (the engine's ``complete`` saw it)."""
        owner_node, key = self.owner.pop(flow)
        run = self.running[owner_node].get(key)
        if run is None or flow not in run.side:
            return  # its attempt has ended (a replica still serving a finished map's read)
        _, mb = run.side.pop(flow)
        if flow.endswith("~start"):
            run.started_up = True
            queued, run.queued_mb = run.queued_mb, 0.0
            self._fetch(owner_node, run, queued, now)
        elif "~fetch" in flow:
            run.fetched_mb += mb
        elif not run.side and run.ended is not None:  # the last replica it waited for is done
            self.finish(owner_node, run, now)

    def stop(self, run: Running, now: float) -> None:
        """End what is left of ``run``'s side flows; the NIC work its unfinished fetches did counts as done."""
        for flow, (where, _) in run.side.items():
            usage = self.models[where].stop(flow, now)
            self.owner.pop(flow, None)
            if usage is not None:
                run.fetched_mb += usage.network_bytes / 1e6
            self.reschedule(where)
        run.side.clear()

    def remaining(self, run: Running, demand: TaskDemand, now: float) -> TaskDemand:
        """What an early reduce's own process does once its job's maps are done: ``demand`` without the NIC
        work its fetches did, and without start-up if that had ended."""
        if not (run.side or run.started_up):
            return demand
        self.stop(run, now)
        left = max(0.0, demand.network_mb - run.fetched_mb)
        return replace(demand, network_mb=left, startup=not run.started_up)

    def forget(self, job_id: str) -> None:
        self.waiting.pop(job_id, None)
        self.job_output.pop(job_id, None)
