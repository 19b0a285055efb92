"""Kubernetes' own rules for which nodes a pod may run on, as pure functions over API dicts.

Task pods that mrsched places carry ``spec.nodeName``: no kube-scheduler checks them after us, so these
functions are the only taint and selector checks they get, and they follow Kubernetes' code, not a paraphrase:

- :func:`tolerates_taint` is ``Toleration.ToleratesTaint`` (k8s.io/api core/v1 toleration.go): an empty
  effect matches every effect, an empty key every key, ``Exists`` every value, ``Equal`` (or no operator)
  the taint's value only. The comparison operators ``Lt``/``Gt`` (feature gate
  TaintTolerationComparisonOperators, alpha and off in v1.35) tolerate nothing, as with the gate off.
- :func:`untolerated_taint` is the TaintToleration filter plugin's ``FindMatchingUntoleratedTaint`` over the
  taints of effect NoSchedule and NoExecute; PreferNoSchedule only scores.
- :func:`parse_selector` is ``labels.Parse`` (k8s.io/apimachinery pkg/labels/selector.go), the grammar a
  ``--selector`` / ``labelSelector`` query takes: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin
  (a,b)``, ``k``, ``!k``, ``k>1``, ``k<1``, comma-separated and all required. A ``!=``/``notin`` requirement
  also matches a node without the label, as in Kubernetes.
- :func:`node_affinity` turns a parsed selector into the ``requiredDuringSchedulingIgnoredDuringExecution``
  node affinity with the same meaning, for pods that kube-scheduler places (a ``nodeSelector`` map can say
  only ``k=v``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The taint effects the TaintToleration filter refuses a node for (PreferNoSchedule only lowers its score).
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates_taint(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint``: whether this one toleration tolerates this one taint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Iterable[Mapping[str, Any]],
    tolerations: Iterable[Mapping[str, Any]],
    effects: tuple[str, ...] = FILTERED_EFFECTS,
) -> Mapping[str, Any] | None:
    """The first taint of one of ``effects`` that no toleration tolerates; None when every one is tolerated."""
    held = list(tolerations)
    for taint in taints:
        if taint.get("effect") in effects and not any(tolerates_taint(t, taint) for t in held):
            return taint
    return None


def tolerates(taints: Iterable[Mapping[str, Any]], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    """Every NoSchedule and NoExecute taint is tolerated: the TaintToleration filter passes the node."""
    return untolerated_taint(taints, tolerations) is None


def node_selector_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A pod's ``nodeSelector`` map: every key present with exactly that value (NodeAffinity's first half)."""
    return all(labels.get(k) == v for k, v in node_selector.items())


# --- label selectors (labels.Parse) --------------------------------------------------------------------------


class SelectorError(ValueError):
    """A label selector Kubernetes would refuse; the message quotes it and says what is wrong."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a label selector: ``key``, an operator of :data:`OPERATORS` and its values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``labels.Requirement.Matches``."""
        present = self.key in labels
        op = self.operator
        if op in ("=", "==", "in"):
            return present and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if op == "exists":
            return present
        if op == "!":
            return not present
        if not present:  # > and <: the label must be there and be an integer
            return False
        try:
            have, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > bound if op == ">" else have < bound


OPERATORS = ("=", "==", "!=", "in", "notin", "exists", "!", ">", "<")

# Qualified names and label values, as validation.IsQualifiedName / IsValidLabelValue check them.
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")
_TOKEN = re.compile(r"\s*(==|!=|=|!|>|<|\(|\)|,|[^\s=!><(),]+)")


def _check_key(key: str, selector: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not _KEY.match(key) or len(name) > 63 or len(prefix) > 253:
        raise SelectorError(
            f"label selector {selector!r}: {key!r} is not a label key (an optional DNS-subdomain prefix and "
            "'/', then up to 63 characters of letters, digits, '-', '_' and '.', beginning and ending with a "
            "letter or digit)"
        )
    return key


def _check_value(value: str, selector: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(
            f"label selector {selector!r}: {value!r} is not a label value (up to 63 letters, digits, '-', '_' "
            "and '.', beginning and ending with a letter or digit)"
        )
    return value


@functools.lru_cache(maxsize=256)  # a few selectors, read for every pod and node
def parse_selector(selector: str) -> tuple[Requirement, ...]:
    """The requirements of a label selector in ``labels.Parse`` grammar; '' selects everything. Raises
    :class:`SelectorError` for what Kubernetes refuses."""
    tokens = _TOKEN.findall(selector)
    out: list[Requirement] = []
    i = 0

    def fail(why: str) -> SelectorError:
        return SelectorError(f"label selector {selector!r}: {why}")

    def take() -> str | None:
        nonlocal i
        if i >= len(tokens):
            return None
        i += 1
        token: str = tokens[i - 1]
        return token

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    while i < len(tokens):
        token = take()
        if token == "!":
            key = take()
            if key is None or key in OPERATORS or key in "(),":
                raise fail("'!' must be followed by a label key")
            out.append(Requirement(_check_key(key, selector), "!"))
        elif token is None or token in ("(", ")", ",", "=", "==", "!=", ">", "<"):
            raise fail(f"expected a label key, found {token!r}")
        else:
            key = _check_key(token, selector)
            op = peek()
            if op is None or op == ",":
                out.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                take()
                value = "" if peek() in (None, ",") else take()
                if value in ("(", ")", "=", "==", "!=", "!", ">", "<"):
                    raise fail(f"expected a value after {key}{op}, found {value!r}")
                out.append(Requirement(key, op, (_check_value(value or "", selector),)))
            elif op in (">", "<"):
                take()
                value = take()
                if value is None or not re.fullmatch(r"-?[0-9]+", value):
                    raise fail(f"{key}{op} needs one integer value, found {value!r}")
                out.append(Requirement(key, op, (value,)))
            elif op in ("in", "notin"):
                take()
                if take() != "(":
                    raise fail(f"'{op}' must be followed by a parenthesised set of values")
                values: list[str] = []
                expect_value = True
                while True:
                    item = take()
                    if item is None:
                        raise fail("a set of values is not closed with ')'")
                    if item == ")":
                        if expect_value and values:
                            values.append("")  # 'k in (a,)': a trailing empty value, as labels.Parse reads it
                        break
                    if item == ",":
                        if expect_value:
                            values.append("")
                        expect_value = True
                        continue
                    if not expect_value:
                        raise fail(f"values in a set are separated by ',', found {item!r}")
                    values.append(_check_value(item, selector))
                    expect_value = False
                if not values:
                    raise fail(f"'{op}' needs at least one value")
                out.append(Requirement(key, op, tuple(sorted(set(values)))))
            else:
                raise fail(f"expected an operator after {key!r}, found {op!r}")
        following = take()
        if following is not None and following != ",":
            raise fail(f"requirements are separated by ',', found {following!r}")
        if following == "," and peek() is None:
            raise fail("a ',' must be followed by a requirement")
    return tuple(out)


def selector_matches(requirements: Iterable[Requirement], labels: Mapping[str, str]) -> bool:
    """Every requirement matches (``labels.Selector.Matches``)."""
    return all(r.matches(labels) for r in requirements)


_AFFINITY_OPERATORS = {
    "=": "In",
    "==": "In",
    "in": "In",
    "!=": "NotIn",
    "notin": "NotIn",
    "exists": "Exists",
    "!": "DoesNotExist",
    ">": "Gt",
    "<": "Lt",
}


def node_affinity(requirements: Iterable[Requirement]) -> dict[str, Any] | None:
    """A pod ``affinity`` whose required node affinity selects exactly the nodes the requirements match
    (NodeSelectorRequirement's In/NotIn/Exists/DoesNotExist/Gt/Lt mean what the selector's operators mean);
    None for an empty selector."""
    expressions = [
        {"key": r.key, "operator": _AFFINITY_OPERATORS[r.operator]}
        | ({"values": list(r.values)} if r.operator not in ("exists", "!") else {})
        for r in requirements
    ]
    if not expressions:
        return None
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        }
    }
