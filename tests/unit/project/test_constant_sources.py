"""Every constant has a source (issue 19): each number in the node and application catalogs and in every
bench scenario is covered by its entry's ``sources`` (mrsched.core.provenance), each source says what kind it
is, and no key names a number that is not there. The numeric defaults of the catalog and scenario models are
constants too: each has an entry in its module's ``DEFAULT_SOURCES``."""

from __future__ import annotations

import inspect
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mrsched.core import catalog, provenance
from mrsched.simulator import physics_options, scenario

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = sorted((REPO / "bench" / "scenarios").glob("*.yaml"))


def packaged(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(resources.files("mrsched").joinpath("data", name).read_text())
    return data


def entries() -> list[tuple[str, dict[str, Any]]]:
    found = [(f"node class {n}", e) for n, e in packaged("node_classes.yaml")["classes"].items()]
    found += [(f"application {n}", e) for n, e in packaged("applications.yaml")["applications"].items()]
    found += [(f"scenario {p.name}", yaml.safe_load(p.read_text())) for p in SCENARIOS]
    return found


@pytest.mark.parametrize(("what", "entry"), entries(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_number_has_a_source(what: str, entry: dict[str, Any]) -> None:
    assert provenance.problems(entry, entry.get("sources") or {}) == [], what


def test_the_scenarios_are_all_checked() -> None:
    assert len(SCENARIOS) >= 40


def test_a_number_without_a_source_is_found() -> None:
    sources = {"cores": "paper: Table 3.1"}
    entry: dict[str, Any] = {"cores": 8, "physics": {"cpuRate": 7.5, "overheadS": 5.3}, "sources": sources}
    assert provenance.uncovered(entry, sources) == ["physics.cpuRate", "physics.overheadS"]
    sources["physics"] = "paper: Table 3.1, machine3-4"
    assert provenance.problems(entry, sources) == []


def test_list_items_share_their_lists_path_and_seeds_are_not_constants() -> None:
    entry = {"cluster": {"nodes": [{"count": 2}, {"count": 3}]}, "seeds": [1, 2]}
    assert provenance.uncovered(entry, {}) == ["cluster.nodes.count"]
    assert provenance.uncovered(entry, {"cluster.nodes": "paper: Table 3.1"}) == []


def test_a_stale_key_and_a_source_of_no_kind_are_problems() -> None:
    entry = {"cores": 2}
    assert provenance.problems(entry, {"cores": "Table 3.1"}) != []
    assert provenance.problems(entry, {"cores": "paper: Table 3.1", "memoryMiB": "paper: Table 3.1"}) == [
        "source for memoryMiB, which is not a number here"
    ]


def test_the_root_cannot_be_covered_as_a_whole() -> None:
    with pytest.raises(provenance.ProvenanceError):
        provenance.uncovered({"cores": 2}, {"": "assumption: everything"})


def test_target_fitted_constants_are_flagged() -> None:
    sources = {"physics.cpuRate": "target-fitted: Table IV's 671 s", "cores": "paper: Table II"}
    assert provenance.target_fitted(sources) == {"physics.cpuRate": "target-fitted: Table IV's 671 s"}


def _models(module: types.ModuleType) -> list[type[BaseModel]]:
    return [
        cls
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and issubclass(cls, BaseModel)
        and (cls.__module__ == module.__name__ or cls.__module__.startswith(f"{module.__name__}."))
    ]  # the module's own models, or its subpackages' (mrsched.simulator.scenario's cluster and workload)


def _numeric_default(info: FieldInfo) -> bool:
    return isinstance(info.default, int | float) and not isinstance(info.default, bool)


def _number_or_none(info: FieldInfo) -> bool:
    """A None default of a number field: it may stand for a number (crossRackMBps: half the NIC)."""
    return info.default is None and any(a in (int, float) for a in typing.get_args(info.annotation))


def default_fields(module: types.ModuleType) -> tuple[set[str], set[str]]:
    """``Model.alias`` of every field with a numeric default (each needs a source), and of those that may have
    one (the same plus number fields defaulting to None)."""
    needed: set[str] = set()
    allowed: set[str] = set()
    for model in _models(module):
        for name, info in model.model_fields.items():
            key = f"{model.__name__}.{info.alias or name}"
            if _numeric_default(info):
                needed.add(key)
            if _numeric_default(info) or _number_or_none(info):
                allowed.add(key)
    return needed, allowed


@pytest.mark.parametrize("module", [catalog, scenario, physics_options], ids=lambda m: m.__name__)
def test_every_code_default_has_a_source(module: types.ModuleType) -> None:
    sources: dict[str, str] = module.DEFAULT_SOURCES
    needed, allowed = default_fields(module)
    assert sorted(needed - set(sources)) == [], "numeric defaults without a DEFAULT_SOURCES entry"
    assert sorted(set(sources) - allowed) == [], (
        "stale DEFAULT_SOURCES keys: no such field with a number default"
    )
    for key, source in sources.items():
        try:
            provenance.source_kind(source)
        except provenance.ProvenanceError as error:
            pytest.fail(f"{module.__name__}.DEFAULT_SOURCES[{key!r}]: {error}")


def test_the_default_walk_finds_numbers_and_skips_the_rest() -> None:
    needed, allowed = default_fields(catalog)
    assert {"PhysicsSpec.cpuContention", "TaskProfile.memoryMB", "NodeClass.pods"} <= needed
    assert "PhysicsSpec.crossRackMBps" in allowed - needed  # None: half the NIC
    assert not any(key.startswith("NodeGroup.storesData") for key in allowed)  # a bool is no number
    assert "NodeGroup.namePrefix" not in allowed  # None of a str field
    needed, _ = default_fields(scenario)
    assert {"ClusterSpec.heartbeatS", "JobSpec.reduceSlowstart", "MonitorSpec.windowS"} <= needed
    assert not any(key.startswith("MonitorSpec.enabled") for key in needed)
