"""Every constant has a source (issue 19): each number in the node and application catalogs and in every
bench scenario is covered by its entry's ``sources`` (mrsched.core.provenance), each source says what kind it
is, and no key names a number that is not there."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from mrsched.core import provenance

REPO = Path(__file__).resolve().parents[2]
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
    entry = {
        "cores": 8,
        "physics": {"cpuRate": 7.5, "overheadS": 5.3},
        "sources": {"cores": "paper: Table 3.1"},
    }
    assert provenance.uncovered(entry, entry["sources"]) == ["physics.cpuRate", "physics.overheadS"]
    entry["sources"]["physics"] = "paper: Table 3.1, machine3-4"
    assert provenance.problems(entry, entry["sources"]) == []


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
