"""The workload of a scenario (``workload:``): jobs, a trace to replay, re-drawn inter-arrival gaps."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mrsched.simulator.scenario.base import _Strict


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
