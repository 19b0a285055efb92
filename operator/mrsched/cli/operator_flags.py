"""The operator's flags of ``mrsched run``, one per field of :class:`OperatorConfig`, made from the model.

The rule: field ``foo_bar`` is ``--foo-bar`` (a seconds field's ``_s`` dropped: ``heartbeat_s`` is
``--heartbeat``), parsed as its annotation says: a number as that type, a ``Literal`` as its choices, a tuple
as a repeatable flag, a dict as JSON, and a bool as the switch away from its default (``--foo-bar`` for a
default ``False``, ``--no-foo-bar`` for ``True``). Every flag defaults to None, so a field the command line
leaves alone comes from its ``MRSCHED_<FIELD>`` variable (the Helm chart sets those), else from the model
(:meth:`OperatorConfig.from_env`). :data:`SPECIAL` lists the flags that differ from the rule, :data:`HELP`
their help; a field without help there gets its ``#:`` comment in ``config.py``, and :data:`NOT_FLAGS` the
fields deliberately left to the environment.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from mrsched.operator.model.config import OperatorConfig


def _queries(pairs: list[str]) -> dict[str, str]:
    """``NAME=PROMQL`` flags as a dict (the PromQL may contain '=')."""
    out = {}
    for pair in pairs:
        name, sep, query = pair.partition("=")
        if not sep or not name or not query:
            raise SystemExit(f"mrsched: --metrics-query {pair!r}: expected NAME=PROMQL")
        out[name] = query
    return out


def _words(command: str) -> tuple[str, ...]:
    return tuple(command.split())


@dataclass(frozen=True)
class Special:
    """How one field's flag differs from the rule (None: as the rule has it)."""

    flag: str | None = None
    metavar: str | None = None
    #: Given more than once, a list (None: when the field is a tuple).
    repeatable: bool | None = None
    #: From the flag's value, when not empty, to the field's.
    parse: Callable[[Any], Any] | None = None


#: The flags that differ from the rule, as they were written out before it.
SPECIAL: dict[str, Special] = {
    "namespaces": Special(flag="--namespace"),
    "allowed_images": Special(flag="--allowed-image", metavar="PREFIX"),
    "allowed_policies": Special(flag="--allowed-policy", metavar="POLICY"),
    # One string, split at whitespace (the environment's MRSCHED_WORKER_COMMAND is comma-separated).
    "worker_command": Special(repeatable=False, parse=_words),
    "metrics_queries": Special(
        flag="--metrics-query", metavar="NAME=PROMQL", repeatable=True, parse=_queries
    ),
}

#: Fields that are no flag: set them with ``MRSCHED_<FIELD>``. None so far.
NOT_FLAGS: frozenset[str] = frozenset()

#: The help of the flags written out before the rule, kept as it was (it names each default by hand).
HELP: dict[str, str] = {
    "policy": "default policy (MRSCHED_POLICY; default fair)",
    "heartbeat_s": "seconds between rounds",
    "namespaces": "watch only these (repeatable)",
    "node_selector": "label selector of task nodes (default mrsched.dev/worker=true)",
    "worker_image": "task image",
    "worker_command": "task command, space-separated (default: python -m mrworker)",
    "data_claim": "ReadWriteMany PVC (in each job's namespace) every task mounts at /data (default mrsched-data)",
    "data_host_path": "instead of a claim, this directory of each node at /data (hostPath: Pod Security baseline "
    "refuses it)",
    "allowed_images": "an image prefix a job's workload.image may start with, * for any (repeatable; default: "
    "none, so no job sets its own image or command)",
    "allow_user_override": "let a job's spec.user name someone other than its namespace",
    "allowed_policies": "a policy a job's spec.policy may name (repeatable; default: any)",
    "max_tasks_per_namespace": "task pods of one namespace running or pending at once, at most (default 0: no cap)",
    "prometheus_url": "Prometheus for node metrics",
    "metrics_node_label": "series label naming the node (default node)",
    "metrics_node_pattern": "regex whose first group is the node in that label (default (.*))",
    "metrics_queries": "replace one node metric's PromQL (docs/metrics.md); repeatable",
    "metrics_rate_window": "rate() window of node metrics (default 1m)",
    "metrics_max_age_s": "seconds after which a node's metrics count as stale (default 30)",
    "policy_options": "the default policy's options as JSON (docs/policies.md)",
    "probe_nodes": "run probe tasks on each new or changed node (default auto: when a policy in use needs them)",
    "probe_namespace": "namespace of probe pods (default: the first watched)",
    "probe_scale": "multiplies every probe's work (default 1)",
    "probe_repeats": "runs of each probe kind per node (default 4)",
    "health_monitor": "do not watch probed nodes for soft faults (slowdowns in CPU or disk; docs/profiles.md)",
    "taint_degraded_nodes": "taint a node judged degraded mrsched.dev/degraded=<resource>:NoSchedule until it "
    "recovers",
    "degraded_canary_interval_s": "with --taint-degraded-nodes: seconds between canary maps on a tainted node, "
    "which show whether it recovered (default 30; 0: none)",
    "health_write_interval_s": "seconds between writes of a node's health unless its verdict changes (default 60)",
    "metrics_port": "/metrics port (default 9090)",
}


@dataclass(frozen=True)
class Flag:
    """One field's flag: ``add_argument``'s arguments, and how its value becomes the field's."""

    field: str
    option: str
    kwargs: dict[str, Any]
    parse: Callable[[Any], Any] | None = None

    def value(self, parsed: Any) -> Any:
        """The field's value from the parsed one (None: the flag was not given, or gave an empty list or
        string to a field parsed from one)."""
        if self.parse is None:
            return parsed
        return self.parse(parsed) if parsed else None


def _field_comments(model: type[OperatorConfig]) -> dict[str, str]:
    """The ``#:`` comment above each field in the model's source ({} where the source is not at hand)."""
    try:
        lines = inspect.getsource(model).splitlines()
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    block: list[str] = []
    for line in lines:
        text = line.strip()
        if text.startswith("#:"):
            block.append(text[2:].strip())
            continue
        named = re.match(r"(\w+)\s*:", text)
        if named and block and named[1] in model.model_fields:
            comments[named[1]] = " ".join(block)
        block = []
    return comments


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def _help(name: str, info: FieldInfo, comments: dict[str, str]) -> str:
    if name in HELP:
        return HELP[name]
    text = info.description or comments.get(name, "").replace("``", "")
    if not text:
        text = name.removesuffix("_s").replace("_", " ") + (", seconds" if name.endswith("_s") else "")
    default = info.get_default(call_default_factory=True)
    return f"{text} (default {_shown(default)})".replace("%", "%%")


def _unwrap(annotation: Any) -> Any:
    """``X | None`` as ``X`` (no flag sets None: leaving it out keeps the environment's or the default)."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _flag(name: str, info: FieldInfo, comments: dict[str, str]) -> Flag:
    special = SPECIAL.get(name, Special())
    option = special.flag or "--" + name.removesuffix("_s").replace("_", "-")
    kwargs: dict[str, Any] = {"dest": name, "help": _help(name, info, comments)}
    if special.metavar:
        kwargs["metavar"] = special.metavar
    annotation = _unwrap(info.annotation)
    origin = get_origin(annotation)
    parse = special.parse
    repeatable = special.repeatable if special.repeatable is not None else origin is tuple
    if repeatable:
        kwargs["action"] = "append"
        parse = parse or tuple
    elif annotation is bool:
        default = info.get_default()
        if default is True:
            option = "--no-" + option.removeprefix("--")
        kwargs.update(action="store_const", const=not default)
    elif origin is Literal:
        kwargs["choices"] = get_args(annotation)
    elif annotation in (int, float):
        kwargs["type"] = annotation
    elif origin is dict:
        parse = parse or json.loads
    elif annotation is not str and parse is None:
        raise TypeError(f"OperatorConfig.{name}: no flag for a {annotation}; add it to SPECIAL or NOT_FLAGS")
    return Flag(name, option, kwargs, parse)


@cache
def operator_flags() -> tuple[Flag, ...]:
    """A flag per :class:`OperatorConfig` field but :data:`NOT_FLAGS`, in the model's order."""
    comments = _field_comments(OperatorConfig)
    return tuple(
        _flag(name, info, comments)
        for name, info in OperatorConfig.model_fields.items()
        if name not in NOT_FLAGS
    )


def add_operator_flags(parser: argparse.ArgumentParser) -> None:
    for flag in operator_flags():
        parser.add_argument(flag.option, **flag.kwargs)


def operator_config(args: argparse.Namespace, environ: dict[str, str] | None = None) -> OperatorConfig:
    """The flags given, else the ``MRSCHED_*`` variables of ``environ`` (default: the process's), else the
    model's defaults."""
    overrides = {flag.field: flag.value(getattr(args, flag.field)) for flag in operator_flags()}
    return OperatorConfig.from_env(environ, **overrides)
