"""Parity of offline inputs: what one policy of a comparison is given before the run, every policy of
it that can use the same input is given too, or the comparison says who lacks it.

An offline input is an option learned outside the workload and handed to the policy at the start: DARA's
per-class load model π^M = (α_c, α_d) (``alphas``, seed 002 §4.2.3), which diagnosis uses as the prior of its
beliefs (ch.6). Probes (seed 002 P3-A) are not an option: the simulator runs them for every policy that reads
them (``Policy.needs_probes``), and what each policy reads is listed by :func:`offline_inputs`.
"""

from __future__ import annotations

from typing import Any

from mrsched.core.policy import Policy, registered
from mrsched.policies import policy_names
from mrsched.simulator.scenario import Scenario, policy_name

#: Policy options that are offline inputs.
OFFLINE_INPUTS = ("alphas",)


def _policy(label: str) -> type[Policy]:
    assert policy_name(label) in policy_names(), label  # every policy module registered
    return registered()[policy_name(label)]


def _accepts(label: str, option: str) -> bool:
    config = _policy(label).Config
    return any(option in (name, info.alias) for name, info in config.model_fields.items())


def share_offline_inputs(scenario: Scenario, labels: list[str]) -> tuple[Scenario, list[str]]:
    """``scenario`` with every offline input that one of ``labels`` is given also given to each other label
    whose policy takes it and has none of its own (the first giver's value, its source copied with a note), and
    one sentence per input shared. A label's own value is kept: a variant may mean to differ."""
    options = dict(scenario.policy_options)
    sources = dict(scenario.sources)
    notes: list[str] = []
    for option in OFFLINE_INPUTS:
        givers = [label for label in labels if option in (scenario.options_for(label) or {})]
        if not givers:
            continue
        giver = givers[0]
        value = (scenario.options_for(giver) or {})[option]
        given = []
        for label in labels:
            if label in givers or not _accepts(label, option):
                continue
            key = label if label in options else policy_name(label)
            if option in (options.get(key) or {}):
                continue  # a variant that reads its bare policy's options: given through it
            options[key] = {**(options.get(key) or {}), option: value}
            source = sources.get(f"policyOptions.{giver}.{option}") or sources.get(
                f"policyOptions.{policy_name(giver)}.{option}"
            )
            if source:
                sources[f"policyOptions.{key}.{option}"] = f"{source}; given to {key} as to {giver} (parity)"
            given.append(key)
        if given:
            notes.append(f"`{option}` of `{giver}` given to {', '.join(f'`{g}`' for g in given)} as well")
    if not notes:
        return scenario, notes
    return scenario.model_copy(update={"policy_options": options, "sources": sources}), notes


def offline_inputs(scenario: Scenario, labels: list[str]) -> dict[str, list[str]]:
    """What each label is given before the run: its offline-input options and probes (``needs_probes``)."""
    out: dict[str, list[str]] = {}
    for label in labels:
        own: dict[str, Any] = scenario.options_for(label) or {}
        given = [option for option in OFFLINE_INPUTS if option in own]
        if _policy(label).needs_probes:
            given.append("probes")
        out[label] = given
    return out
