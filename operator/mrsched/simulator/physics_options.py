"""The physics a scenario runs under (``cluster.physics``, ``cluster.variant``, ``cluster.stragglers``,
``cluster.speculation``): the measured physics of issue 19 and its departures, each stated with its reason."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


#: Where each numeric default of the models below comes from (as scenario.DEFAULT_SOURCES; checked by
#: tests/unit/project/test_constant_sources.py).
DEFAULT_SOURCES: dict[str, str] = {
    "PhysicsVariant.cpuHeavyThreads": "measured: our workers run one runnable thread per task (CPU s / wall s <= 1.00 "
    "at one task, `make calibrate`); more only in a sensitivity run, which states "
    "its reason",
    "PhysicsVariant.contentionOnset": "assumption: the measured physics charges CPU over-subscription only past the "
    "core count (cpuContention, seed 002 Fig 2.5); earlier only in a sensitivity "
    "run, which states its reason",
    "StragglerSpec.probability": "assumption: no stragglers beyond the log-normal noise unless a scenario sets them",
    "StragglerSpec.paretoShape": "assumption: a heavy tail (shape 1.5: finite mean, infinite variance) for a scenario "
    "that sets a probability and no shape",
    "StragglerSpec.maxSlowdown": "assumption: a straggler is at most 10x slower (a bound, so one draw cannot stall a "
    "run)",
    "SpeculationSpec.lagS": "spec: Hadoop 0.20 TaskInProgress.SPECULATIVE_LAG = 60 s",
    "SpeculationSpec.gap": "spec: Hadoop 0.20 TaskInProgress.SPECULATIVE_GAP = 0.2",
}


class PhysicsOptions(_Strict):
    """The measured physics of issue 19, every part on by default: what each changes and its source. A scenario
    may turn one off, saying why in its ``sources`` (``cluster.physics.<alias>``); ``PhysicsOptions.off()`` is the
    physics every result was run under before issue 49 (each switch off), kept for ``make bench-physics``.

    * ``overheadUsesCpu``: start-up Ω competes for the node's cores like CPU work, by the class's
      ``NodeCapability.overhead_cpu_share`` (1 but where a class's measurements say otherwise: 0 for
      ``dara-8core``, seed 002 Fig 2.5). measured: our workers' start-up is CPU work, 0.17 s wall = 0.17 CPU-s
      (`make calibrate`, bench/results/calibration/report.md). Off, Ω is a free delay every task takes in
      parallel.
    * ``shuffleWhileMapsRun``: a reduce placed before its job's maps are done copies each finished map's
      output over the network at once. spec: Hadoop 1's ReduceTask copier fetches each map's output as the
      map completes, from slow-start on (``mapred.reduce.slowstart.completed.maps``). Off, it idles until the
      last map ends and then fetches everything.
    * ``remoteReadsLoadReplica``: a map that reads its split over the network also reads it from the disk of
      the replica it reads from (a node of its rack when there is one). spec: an HDFS DataNode serves a
      remote read from its own disk (``BlockSender``). Off, the bytes come from nowhere.
    * ``replicaWritesRemote``: of a profile whose writes hold several HDFS copies (``writeReplicas``, jio's
      three), the writer's disk writes one and other nodes receive and write the rest. spec: HDFS's default
      block placement, the second copy on another rack, the third beside the second, written along the
      pipeline. Off, its disk writes all.
    * ``replayMeasuredTime``: a trace's container time is the container's duration on the trace's reference
      node (κc = 1), scaled only by the node's speed: no start-up, disk or network work added on top. spec:
      an SLS or Rumen trace records each container's run time, which already holds its start-up and I/O.
      Off, it is CPU work to which the profile's start-up, disk I/O and remote reads are added.
    """

    overhead_uses_cpu: bool = Field(True, alias="overheadUsesCpu")
    shuffle_while_maps_run: bool = Field(True, alias="shuffleWhileMapsRun")
    remote_reads_load_replica: bool = Field(True, alias="remoteReadsLoadReplica")
    replica_writes_remote: bool = Field(True, alias="replicaWritesRemote")
    replay_measured_time: bool = Field(True, alias="replayMeasuredTime")
    #: Why a switch is off: required then (a departure from the measured physics is stated), with its source.
    reason: str | None = None

    @model_validator(mode="after")
    def _off_says_why(self) -> PhysicsOptions:
        if self.disabled() and not self.reason:
            raise ValueError(f"{', '.join(self.disabled())} turned off: say why in cluster.physics.reason")
        return self

    @classmethod
    def switches(cls) -> list[str]:
        return [name for name in cls.model_fields if name != "reason"]

    @classmethod
    def measured(cls) -> PhysicsOptions:
        """Every switch on: the default."""
        return cls()

    @classmethod
    def off(cls, reason: str = "the physics before issue 49, for comparison") -> PhysicsOptions:
        """Every switch off: the physics of the results before issue 49, for comparison only."""
        return cls(**dict.fromkeys(cls.switches(), False), reason=reason)

    def _aliases(self, on: bool) -> list[str]:
        fields = type(self).model_fields
        return [fields[name].alias or name for name in self.switches() if getattr(self, name) is on]

    def enabled(self) -> list[str]:
        """The aliases of the switches that are on (what a results table prints)."""
        return self._aliases(True)

    def disabled(self) -> list[str]:
        """The aliases of the switches that are off (a results table names them: a departure from the default)."""
        return self._aliases(False)


class PhysicsVariant(_Strict):
    """A physics other than the measured one, for a sensitivity run: each departure is an assumption
    the run states (``reason``, required when one is set). Off by default.

    * ``cpuHeavyThreads``: the runnable threads of a task whose CPU work is at least its disk work (its JVM's
      GC, spill and fetch threads beside its main one: seed 000 Fig 2 measures 1.3-2.0 runnable threads per
      task), while its pod requests one CPU: packing by requests then over-subscribes the cores;
    * ``contentionOnset``: the share of a node's cores beyond which CPU consumers pay the over-subscription cost
      (``NodeCapability.contention_onset``; caches and memory bandwidth shared before every core is busy)."""

    cpu_heavy_threads: int = Field(1, alias="cpuHeavyThreads", ge=1)
    contention_onset: float = Field(1.0, alias="contentionOnset", gt=0, le=1)
    reason: str | None = None

    @model_validator(mode="after")
    def _says_why(self) -> PhysicsVariant:
        if self.departs() and not self.reason:
            raise ValueError("a physics variant must say why (cluster.variant.reason)")
        return self

    def departs(self) -> bool:
        return self.cpu_heavy_threads != 1 or self.contention_onset != 1.0


class StragglerSpec(_Strict):
    """Heavy-tailed slow attempts beyond the log-normal noise (``NodeCapability.straggler_*``): each attempt is a
    straggler with ``probability``, slowed by a Pareto(``paretoShape``, scale 1) factor capped at
    ``maxSlowdown``. Off (probability 0) unless a scenario sets it, with its source."""

    probability: float = Field(0.0, ge=0, le=1)
    pareto_shape: float = Field(1.5, alias="paretoShape", gt=0)
    max_slowdown: float = Field(10.0, alias="maxSlowdown", ge=1)


class SpeculationSpec(_Strict):
    """Speculative execution as Hadoop 0.20/1.0's JobTracker does it (``TaskInProgress.hasSpeculativeTask``),
    for the policies listed: a running map gets a second attempt on another node with a free map slot when it
    has run ``lagS`` or more and its progress is ``gap`` or more behind its job's average map progress (finished
    maps count 1, pending 0), and no other attempt of it runs; the first attempt to finish wins and the other
    is killed. On by default, as in Hadoop 1 (``mapred.map.tasks.speculative.execution`` = true,
    mapred-default.xml); a scenario whose paper turned it off says so (seed 003 §V). Maps only: reduces'
    speculation (``mapred.reduce.tasks.speculative.execution``, also true) is not modelled."""

    enabled: bool = True
    policies: list[str] = Field(default_factory=lambda: ["fifo", "fair", "capacity"])
    lag_s: float = Field(60.0, alias="lagS", ge=0)
    gap: float = Field(0.2, ge=0, le=1)
    #: Why it is off: required then, with its source (seed 003 §V turned it off).
    reason: str | None = None

    @model_validator(mode="after")
    def _off_says_why(self) -> SpeculationSpec:
        if not self.enabled and not self.reason:
            raise ValueError("speculation turned off: say why in cluster.speculation.reason")
        return self
