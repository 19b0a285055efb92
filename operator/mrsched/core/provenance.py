"""Where each constant comes from: every number in the node and application catalogs and in a
scenario names its source, and a constant set from the result it is meant to reproduce is flagged as such.

A catalog entry (a node class, an application) and a scenario carry a ``sources`` mapping from a dotted path
to a source. A path covers the number at that path and every number under it (``physics`` covers
``physics.cpuRate`` and ``physics.overheadS``; ``cluster.nodes`` covers every node group's ``count``); list
items are not addressed one by one. The root cannot be covered as a whole: one sentence for a whole scenario
says nothing about any one of its numbers.

A source starts with its kind, then a colon and the source itself:

* ``measured:`` measured on our own workers or cluster, with the command that measures it;
* ``paper:`` a paper's *input or baseline* figure (a table and row, a machine's specification, a baseline
  scheduler's time), never the result of the policy the scenario is meant to reproduce;
* ``spec:`` a hardware, software or standard's published value (Hadoop 1.2.1's default heartbeat, a NIC);
* ``assumption:`` a stated assumption with its reason (what the papers leave open);
* ``target-fitted:`` set from the very result it should reproduce. Allowed only as a flag: a result that rests
  on it is never reported as reproduced (``met``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

KINDS = ("measured", "paper", "spec", "assumption", "target-fitted")
TARGET_FITTED = "target-fitted"
#: Keys whose numbers are not constants of the model: how many times to repeat a run, not what it runs on.
NOT_CONSTANTS = frozenset({"seeds"})


class ProvenanceError(ValueError):
    """A source that does not say what kind it is, or a sources key that names nothing."""


def source_kind(source: str) -> str:
    """The kind of a source (``paper``, ``measured``, ...); raises when it names none of :data:`KINDS`."""
    kind, sep, rest = source.partition(":")
    kind = kind.strip()
    if not sep or kind not in KINDS or not rest.strip():
        raise ProvenanceError(
            f"a source starts with one of {', '.join(KINDS)} and a colon, then says what: {source!r}"
        )
    return kind


def numeric_paths(tree: Any, prefix: str = "") -> Iterator[str]:
    """The dotted path of every number under ``tree`` (booleans are not numbers; list items share their list's
    path, since a source for one node group or job is a source for its list)."""
    if isinstance(tree, bool):
        return
    if isinstance(tree, int | float):
        yield prefix
    elif isinstance(tree, Mapping):
        for key, value in tree.items():
            if prefix == "" and key in NOT_CONSTANTS | {"sources"}:
                continue
            yield from numeric_paths(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(tree, list):
        for item in tree:
            yield from numeric_paths(item, prefix)


def _covers(key: str, path: str) -> bool:
    return path == key or path.startswith(key + ".")


def uncovered(tree: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
    """The numbers in ``tree`` that no key of ``sources`` covers (sorted, each once)."""
    if "" in sources:
        raise ProvenanceError("a source must name a path: the root cannot be covered as a whole")
    return sorted({p for p in numeric_paths(tree) if not any(_covers(k, p) for k in sources)})


def stale_keys(tree: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
    """Keys of ``sources`` that cover no number of ``tree`` (a renamed or removed constant)."""
    paths = list(numeric_paths(tree))
    return sorted(k for k in sources if not any(_covers(k, p) for p in paths))


def target_fitted(sources: Mapping[str, str]) -> dict[str, str]:
    """The constants flagged as set from the result they should reproduce: {path: source}."""
    return {k: v for k, v in sources.items() if source_kind(v) == TARGET_FITTED}


def problems(tree: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
    """Everything wrong with one entry's sources, as messages (empty when every number has a valid source)."""
    found = [f"no source for {p}" for p in uncovered(tree, sources)]
    found += [f"source for {k}, which is not a number here" for k in stale_keys(tree, sources)]
    for key, source in sources.items():
        try:
            source_kind(source)
        except ProvenanceError as error:
            found.append(f"{key}: {error}")
    return found
