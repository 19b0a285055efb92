"""Kubernetes' own placement rules (mrsched.core.kuberules) against the cases Kubernetes' own code decides.

The toleration table is 8 tolerations x 6 taints; each expected value is what ``Toleration.ToleratesTaint``
(k8s.io/api core/v1 toleration.go) returns, read off its four rules: an empty effect matches every effect, an
empty key every key, ``Exists`` every value, ``Equal`` or no operator only the taint's value. The selector
cases are those of apimachinery's ``TestSelectorParse``/``TestSelectorMatches`` (pkg/labels/selector_test.go)
and the set forms the grammar adds. The hand-written checks these replace (``snapshot.tolerates``, whose
key-less ``Exists`` ignored the effect and whose explicit ``effect: ""`` tolerated nothing, and
``snapshot.selector_matches``, which knew only ``k=v`` and ``k``) fail 5 of the table's 48 cases and 8 of the
26 selector matches here (every negated and set-based one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mrsched.core.kuberules import (
    SelectorError,
    node_affinity,
    parse_selector,
    selector_matches,
    tolerates,
    tolerates_taint,
    untolerated_taint,
)

TAINTS = {
    "k=v:NoSchedule": {"key": "k", "value": "v", "effect": "NoSchedule"},
    "k=v:NoExecute": {"key": "k", "value": "v", "effect": "NoExecute"},
    "k=v:PreferNoSchedule": {"key": "k", "value": "v", "effect": "PreferNoSchedule"},
    "k:NoSchedule": {"key": "k", "effect": "NoSchedule"},
    "other=v:NoSchedule": {"key": "other", "value": "v", "effect": "NoSchedule"},
    "k=w:NoExecute": {"key": "k", "value": "w", "effect": "NoExecute"},
}
COLUMNS = list(TAINTS)

# toleration -> ToleratesTaint for each taint in COLUMNS order
TABLE: list[tuple[str, dict[str, str], str]] = [
    ("key-less Exists", {"operator": "Exists"}, "111111"),
    ("key-less Exists, effect NoExecute", {"operator": "Exists", "effect": "NoExecute"}, "010001"),
    ("k Exists", {"key": "k", "operator": "Exists"}, "111101"),
    (
        "k=v Equal NoSchedule",
        {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
        "100000",
    ),
    ("k=v, no operator (Equal)", {"key": "k", "value": "v"}, "111000"),
    ("k=v Equal, effect ''", {"key": "k", "operator": "Equal", "value": "v", "effect": ""}, "111000"),
    ("k Exists NoSchedule", {"key": "k", "operator": "Exists", "effect": "NoSchedule"}, "100100"),
    ("k=w Equal", {"key": "k", "operator": "Equal", "value": "w"}, "000001"),
]
CASES = [
    pytest.param(toleration, TAINTS[column], row[i] == "1", id=f"{name} / {column}")
    for name, toleration, row in TABLE
    for i, column in enumerate(COLUMNS)
]


def test_the_table_has_48_cases() -> None:
    assert len(CASES) == 48


@pytest.mark.parametrize("toleration, taint, expected", CASES)
def test_tolerates_taint_as_kubernetes_does(toleration: dict, taint: dict, expected: bool) -> None:  # type: ignore[type-arg]
    assert tolerates_taint(toleration, taint) is expected


@pytest.mark.parametrize("toleration, taint, expected", CASES)
def test_the_taint_filter_refuses_only_untolerated_no_schedule_and_no_execute(
    toleration: dict,  # type: ignore[type-arg]
    taint: dict,  # type: ignore[type-arg]
    expected: bool,
) -> None:
    passes = expected or taint["effect"] == "PreferNoSchedule"  # PreferNoSchedule only scores
    assert tolerates((taint,), (toleration,)) is passes
    assert (untolerated_taint((taint,), (toleration,)) is None) is passes


def test_no_toleration_admits_only_a_node_without_filtered_taints() -> None:
    assert tolerates((), ())
    assert tolerates((TAINTS["k=v:PreferNoSchedule"],), ())
    assert not tolerates((TAINTS["k=v:NoExecute"],), ())


def test_our_degraded_taint_is_not_tolerated_by_an_exists_of_another_effect() -> None:
    """The live defect: a job tolerating every NoExecute taint was bound to a node we had judged degraded."""
    degraded = {"key": "mrsched.dev/degraded", "value": "disk", "effect": "NoSchedule"}
    assert not tolerates((degraded,), ({"operator": "Exists", "effect": "NoExecute"},))
    assert tolerates((degraded,), ({"key": "mrsched.dev/degraded", "operator": "Exists"},))


def test_every_taint_must_be_tolerated_each_by_some_toleration() -> None:
    taints = (TAINTS["k=v:NoSchedule"], TAINTS["other=v:NoSchedule"])
    one = ({"key": "k", "operator": "Exists"},)
    assert untolerated_taint(taints, one) == TAINTS["other=v:NoSchedule"]
    assert tolerates(taints, (*one, {"key": "other", "value": "v"}))


def test_a_comparison_operator_tolerates_nothing_with_its_feature_gate_off() -> None:
    assert not tolerates_taint({"key": "k", "operator": "Gt", "value": "1"}, {"key": "k", "value": "2"})


# --- label selectors ------------------------------------------------------------------------------------------

VALID = [
    "",
    "x=a,y=b,z=c",
    "x!=a,y=b",
    "x=",
    "x= ",
    "x=,z= ",
    "x= ,z= ",
    "!x",
    "x>1",
    "x>1,z<5",
    "x in (a)",
    "x in (a,b)",
    "x notin (a)",
    "x in (,a)",
    "x==a",
    "notin=in",
    "mrsched.dev/worker=true",
    "topology.kubernetes.io/zone in (zone-a, zone-b), !mrsched.dev/degraded",
]
INVALID = [
    "x=a||y=b",
    "x==a==b",
    "!x=a",
    "x<a",
    "x in a",
    "x in (a",
    ",x=a",
    "x=a,",
    "x in ()",
    "x y",
    "-x=a",
]


@pytest.mark.parametrize("selector", VALID)
def test_kubernetes_selectors_parse(selector: str) -> None:
    parse_selector(selector)


@pytest.mark.parametrize("selector", INVALID)
def test_what_kubernetes_refuses_is_refused_with_the_selector_named(selector: str) -> None:
    with pytest.raises(SelectorError, match=re.escape(repr(selector))):
        parse_selector(selector)


MATCHES = [
    ("", {"x": "y"}, True),
    ("x=y", {"x": "y"}, True),
    ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
    ("notin=in", {"notin": "in"}, True),
    ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True),
    ("x>1", {"x": "2"}, True),
    ("x<1", {"x": "0"}, True),
    ("x=z", {}, False),
    ("x=y", {"x": "z"}, False),
    ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
    ("x", {"y": "z"}, False),
    ("!x", {"x": "z"}, False),
    ("x>1", {"x": "0"}, False),
    ("x<1", {"x": "2"}, False),
    ("x>1", {"x": "two"}, False),
    ("x in (y,z)", {"x": "z"}, True),
    ("x in (y)", {"x": "z"}, False),
    ("x in (y)", {}, False),
    ("x notin (y)", {"x": "z"}, True),
    ("x notin (y)", {}, True),  # an absent label is not in any set
    ("x notin (y,z)", {"x": "z"}, False),
    ("x!=y", {}, True),
    ("x=", {"x": ""}, True),
]


@pytest.mark.parametrize("selector, labels, expected", MATCHES)
def test_selectors_match_as_kubernetes_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(parse_selector(selector), labels) is expected


def _affinity_matches(affinity: dict, labels: dict[str, str]) -> bool:  # type: ignore[type-arg]
    """NodeSelectorRequirement's operators, as component-helpers' nodeaffinity evaluates them."""
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    for e in term["matchExpressions"]:
        key, op, values = e["key"], e["operator"], e.get("values", [])
        have = labels.get(key)
        ok = {
            "In": have is not None and have in values,
            "NotIn": have is None or have not in values,
            "Exists": have is not None,
            "DoesNotExist": have is None,
            "Gt": have is not None and have.lstrip("-").isdigit() and int(have) > int(values[0]),
            "Lt": have is not None and have.lstrip("-").isdigit() and int(have) < int(values[0]),
        }[op]
        if not ok:
            return False
    return True


@pytest.mark.parametrize("selector, labels, expected", [m for m in MATCHES if m[0]])
def test_the_node_affinity_for_kube_scheduler_selects_the_same_nodes(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    affinity = node_affinity(parse_selector(selector))
    assert affinity is not None and _affinity_matches(affinity, labels) is expected


def test_an_empty_selector_needs_no_affinity() -> None:
    assert node_affinity(parse_selector("")) is None


def test_the_charts_schema_takes_the_grammar_and_the_operator_refuses_the_rest() -> None:
    """values.schema.json's pattern admits every selector the grammar has (the chart cannot run labels.Parse,
    so it refuses only what is not even shaped like one); the operator's config refuses the rest at start."""
    from mrsched.operator.model.config import OperatorConfig

    schema = json.loads((Path(__file__).parents[3] / "charts/mrsched/values.schema.json").read_text())
    pattern = re.compile(schema["properties"]["nodeSelectorLabel"]["pattern"])
    for selector in VALID:
        assert pattern.search(selector), selector
    for selector in ("x=a||y=b", ",x=a", "x=a,", "x in a", "x in (a", "x y", "-x=a"):
        assert not pattern.search(selector), selector
    for selector in INVALID:
        with pytest.raises(ValueError, match="label selector"):
            OperatorConfig(node_selector=selector)
