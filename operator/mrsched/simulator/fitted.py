"""Which target-fitted constants a scenario's results rest on, and how a summary's verdict reads then.

A constant flagged ``target-fitted:`` (mrsched.core.provenance) was set from the very result it should
reproduce, so a result resting on it is never reported as reproduced. A scenario's results rest on its own
flagged sources, on those of every node class its cluster uses (its policy entries' ``clusterOverrides``
included) and on those of every application its workload runs (its jobs' ``app``, its trace's ``app``).

Each flag is keyed ``"<where>: <path>"``, where is ``scenario <name>``, ``node class <name>`` or ``application
<name>``, e.g. ``"node class yao-m1large: physics.cpuRate"``, and valued with its source. results.json records
them as ``targetFitted``; a results.json written before that key existed is read through its scenario file
(:func:`recorded`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mrsched.core.catalog import application
from mrsched.core.provenance import target_fitted
from mrsched.simulator.scenario import Scenario, ScenarioError, load_scenario

#: results.json's key for the flags a run rests on.
KEY = "targetFitted"
_SCENARIO, _SCENARIOS = "scenario ", "scenarios "


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def target_fitted_constants(scenario: Scenario) -> dict[str, str]:
    """Every target-fitted constant the scenario's results rest on: ``{"<where>: <path>": source}``, the
    scenario's own first, then its node classes' and its applications', each in the order the scenario names
    them."""
    out = {
        f"{_SCENARIO}{scenario.name}: {path}": src for path, src in target_fitted(scenario.sources).items()
    }
    clusters = [scenario.cluster, *(scenario.cluster_for(label) for label in scenario.cluster_overrides)]
    classes = {group.node_class: group for cluster in clusters for group in cluster.nodes}
    for name, group in classes.items():
        for path, src in target_fitted(group.resolve().sources).items():
            out[f"node class {name}: {path}"] = src
    apps = [job.app for job in scenario.workload.jobs]
    if scenario.workload.trace is not None:
        apps.append(scenario.workload.trace.app)
    for name in _unique(apps):
        for path, src in target_fitted(application(name).sources).items():
            out[f"application {name}: {path}"] = src
    return out


def recorded(result: Mapping[str, Any], scenarios: Path) -> dict[str, str]:
    """The flags a results.json rests on: its ``targetFitted``, or, for results written before that key, its
    scenario file's (``<scenarios>/<scenario>.yaml``). Raises ScenarioError when it has neither: whether such
    a result may be called met cannot be told."""
    if KEY in result:
        return dict(result[KEY])
    path = scenarios / f"{result['scenario']}.yaml"
    if not path.exists():
        raise ScenarioError(
            f"results of {result['scenario']!r} record no {KEY} and there is no {path} to read them from"
        )
    return target_fitted_constants(load_scenario(path))


def merge(*flags: Mapping[str, str]) -> dict[str, str]:
    """Several results' flags as one mapping: the union, a catalog entry's flag once, and a scenario constant
    that several scenarios flag alike (same path, same source) once for all of them (``"scenarios dara-wl1,
    dara-wl2: policyOptions.dara.alphas"``)."""
    own: dict[tuple[str, str], list[str]] = {}  # (path, source) -> scenario names
    catalog: dict[str, str] = {}
    for found in flags:
        for key, source in found.items():
            where, _, path = key.partition(": ")
            if where.startswith((_SCENARIO, _SCENARIOS)):  # one scenario's, or an earlier merge's
                group = where.removeprefix(_SCENARIOS).removeprefix(_SCENARIO).split(", ")
                own.setdefault((path, source), []).extend(group)
            else:
                catalog[key] = source
    out = {}
    for (path, source), names in own.items():
        names = _unique(names)
        out[f"{'scenarios' if len(names) > 1 else 'scenario'} {', '.join(names)}: {path}"] = source
    return {**out, **catalog}


def _span(names: list[str]) -> str:
    """Scenario names, a run of three or more numbered alike (dara-wl1, dara-wl2, dara-wl3) as its first and
    last (``dara-wl1 to dara-wl3``)."""
    parts: list[list[str]] = []
    last: tuple[str, int] | None = None
    for name in names:
        found = re.fullmatch(r"(.*?)(\d+)", name)
        here = (found[1], int(found[2])) if found else None
        if here and last and here == (last[0], last[1] + 1):
            parts[-1].append(name)
        else:
            parts.append([name])
        last = here
    return ", ".join(
        p[0] if len(p) == 1 else ", ".join(p) if len(p) == 2 else f"{p[0]} to {p[-1]}" for p in parts
    )


def label(key: str) -> str:
    """A flag's key as a summary prints it: a merged scenario list shortened by :func:`_span`."""
    where, _, path = key.partition(": ")
    if not where.startswith(_SCENARIOS):
        return key
    return f"{_SCENARIOS}{_span(where.removeprefix(_SCENARIOS).split(', '))}: {path}"


def names(flags: Mapping[str, str]) -> str:
    """The flags' keys, for a verdict cell (their sources are listed by :func:`describe`)."""
    return "; ".join(label(key) for key in flags)


def claim(verdict: str, flags: Mapping[str, str]) -> str:
    """A summary's verdict as it may be printed for results that rest on ``flags``: without flags, unchanged;
    with some, a ``met`` (or ``met ...``) is ``not claimed: rests on target-fitted <flags>``, and any other
    verdict (``not met``, ``missed by ...``) names the flags after it. ``-`` and ``""`` (no verdict) stay."""
    if not flags or verdict in ("", "-"):
        return verdict
    if verdict == "met" or verdict.startswith("met "):
        return f"not claimed: rests on target-fitted {names(flags)}"
    return f"{verdict}; rests on target-fitted {names(flags)}"


def describe(flags: Mapping[str, str]) -> list[str]:
    """Markdown lines naming each flag with its source, under ``Rests on target-fitted constants:``; no lines
    when there are none."""
    if not flags:
        return []
    return [
        "Rests on target-fitted constants: set from the result they should reproduce, so no result here that "
        "rests on them is reported as met.",
        "",
        *(f"* {label(key)}: {source}" for key, source in flags.items()),
        "",
    ]
