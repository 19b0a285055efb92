"""The learning scheduler's options, the decisions it waits to judge, and its candidates (seed 000; the package
docstring says how they are used)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from mrsched.core.model import Job, NodeMetrics, Task
from mrsched.core.policy import PolicyConfig
from mrsched.policies.learning.features import Features
from mrsched.policies.learning.utilities import UTILITIES

WINDOW = 250  # decisions per accuracy window (Fig. 10)
LOG_KEPT = 50  # decisions kept in the persisted log (counts are kept in full; the log is written often)
MAX_WAIT_S = 60.0  # how long a decision waits for a sample to judge it before it is dropped [ours]
MISSING = NodeMetrics(status="missing")  # a node Prometheus never reported


class LearningConfig(PolicyConfig):
    classifier: Literal["naive-bayes", "perceptron"] = "naive-bayes"
    overload_threshold: float = Field(1.0, alias="overloadThreshold", gt=0)  # θ: overloaded ⇔ load1/cores > θ
    #: [ours] Also overloaded when the node's free memory falls below this share of its memory. The paper's
    #: overload rules are pluggable (§III-D: "network usage can also be included"); its experiments use load
    #: alone, which cannot see tasks that sleep in memory (seed 000's WordCount + 10 ms delay) until swapping.
    min_free_memory: float | None = Field(None, alias="minFreeMemory", gt=0, lt=1)
    tasks_per_heartbeat: int = Field(1, alias="tasksPerHeartbeat", ge=1)  # k
    score: Literal["normalised", "unnormalised"] = "normalised"  # A1: Eq (1) or the paper's D4
    utilities: list[str] = Field(default_factory=lambda: ["constant"], min_length=1)
    map_before_reduce: float = Field(0.05, alias="mapBeforeReduce", ge=0, le=1)  # A8
    budgets: dict[str, float] = Field(default_factory=dict)  # user -> units; one unit per assigned task
    capacities: dict[str, float] = Field(default_factory=dict)  # user -> promised fraction f in (0, 1]
    capacity_rule: Literal["relative", "literal"] = Field("relative", alias="capacityRule")  # A9
    revenue: dict[str, float] = Field(default_factory=dict)  # user -> amount paid (default 1)
    disk_bytes_per_s: float = Field(100e6, alias="diskBytesPerS", gt=0)  # nominal rates for binning [ours]
    network_bytes_per_s: float = Field(125e6, alias="networkBytesPerS", gt=0)
    perceptron_bias: float = Field(0.1, alias="perceptronBias", gt=0)  # §1.7's cold-start fix
    idle_exploration: bool = Field(True, alias="idleExploration")  # liveness on idle nodes [ours]

    @model_validator(mode="after")
    def _check(self) -> LearningConfig:
        unknown = [u for u in self.utilities if u not in UTILITIES]
        if unknown:
            raise ValueError(f"unknown utilities {unknown}; known: {', '.join(UTILITIES)}")
        bad = [user for user, f in self.capacities.items() if not 0 < f <= 1]
        if bad:
            raise ValueError(f"capacities must be fractions in (0, 1]: {bad}")
        return self


@dataclass
class Decision:
    """An assignment waiting for the node's next heartbeat to be judged."""

    node: str
    at: float
    job_id: str
    kind: str
    features: Features
    p_good: float
    predicted: int = 1  # 1: labelled good; 0: an idle-node exploration of a candidate labelled bad
    task: Task | None = None  # the task placed: a placement the owner could not carry out is not an example


@dataclass
class Candidate:
    job: Job
    kind: Literal["map", "reduce"]
    features: Features
    p_good: float
    utility: float
    key: float  # what is maximised: E.U. (Eq 1 / D4, as a log for D4) or, for the perceptron, U
    margin: float


@dataclass
class NodeStats:
    decisions: int = 0
    overloads: int = 0
    last_ratio: float | None = None
    status: str = "missing"
