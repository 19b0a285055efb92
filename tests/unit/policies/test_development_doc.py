"""docs/development.md's "Adding a policy" builds a working policy exactly as written: its module, imported
from the page, registers the policy, whose options are validated, which orders jobs shortest first and places
a job only on the nodes Kubernetes' filters admit (Job.nodes), preferring its Score plugin's nodes."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mrsched.core import policy as core_policy
from mrsched.core.model import ClusterSnapshot
from mrsched.core.policy import PolicyConfigError
from mrsched.policies import make_policy
from tests.unit.core.test_filter_before_score import ALLOWED, NODE_NAMES, jobs, nodes

DOC = Path(__file__).parents[3] / "docs/development.md"


def policy_module_of_the_doc() -> str:
    section = DOC.read_text().split("## Adding a policy", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


@pytest.fixture
def documented(tmp_path: Path) -> Iterator[ModuleType]:
    path = tmp_path / "shortest_first.py"
    path.write_text(policy_module_of_the_doc())
    spec = importlib.util.spec_from_file_location("shortest_first_from_the_doc", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # registers it, as the registration import would
    yield module
    core_policy._REGISTRY.pop("shortest-first", None)  # the other tests see the built-in policies only
    sys.modules.pop(spec.name, None)


def test_the_documented_policy_registers_and_validates_its_options(documented: ModuleType) -> None:
    assert make_policy("shortest-first").cfg.locality == 1.0  # type: ignore[attr-defined]
    assert make_policy("shortest-first", {"locality": 0}).cfg.locality == 0.0  # type: ignore[attr-defined]
    with pytest.raises(PolicyConfigError, match="localty"):
        make_policy("shortest-first", {"localty": 0})


def test_the_documented_policy_runs_the_shortest_job_first_on_admitted_nodes_only(
    documented: ModuleType,
) -> None:
    policy = make_policy("shortest-first")
    picky, free = jobs()
    free.maps = free.maps[:2]  # the shorter job: its maps go first, wherever it is admitted
    snapshot = ClusterSnapshot(0.0, nodes(True), {n: [] for n in NODE_NAMES}, [picky, free])
    placed = policy.schedule_round(snapshot, NODE_NAMES)
    assert [p.task.job_id for p in placed if p.task.kind == "map"][:2] == ["free", "free"]
    assert {p.node for p in placed if p.task.job_id == "picky"} <= ALLOWED
    assert any(p.task.job_id == "picky" for p in placed)
    assert all(p.explanation.policy == "shortest-first" for p in placed)
    first = placed[0]  # a free cluster: the first map goes where its input is
    assert first.node in first.task.replicas and first.explanation.score == 1.0
    assert "FewestMapsLeft" in first.explanation.reason and "InputOnNode" in first.explanation.reason
