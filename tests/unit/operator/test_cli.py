"""The ``mrsched`` command line: ``mrsched run``'s operator flags, made from OperatorConfig's fields."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest

from mrsched.cli import build_parser, main
from mrsched.cli.operator_flags import NOT_FLAGS, operator_config, operator_flags
from mrsched.operator.model.config import OperatorConfig

#: ``mrsched run``'s flags as they were written out by hand (the tests, docs, demo and chart use them).
HAND_WRITTEN = {
    "--kubeconfig": "kubeconfig",
    "--policy": "policy",
    "--heartbeat": "heartbeat_s",
    "--namespace": "namespaces",
    "--node-selector": "node_selector",
    "--worker-image": "worker_image",
    "--worker-command": "worker_command",
    "--data-claim": "data_claim",
    "--data-host-path": "data_host_path",
    "--allowed-image": "allowed_images",
    "--allow-user-override": "allow_user_override",
    "--allowed-policy": "allowed_policies",
    "--max-tasks-per-namespace": "max_tasks_per_namespace",
    "--prometheus-url": "prometheus_url",
    "--metrics-node-label": "metrics_node_label",
    "--metrics-node-pattern": "metrics_node_pattern",
    "--metrics-query": "metrics_queries",
    "--metrics-rate-window": "metrics_rate_window",
    "--metrics-max-age": "metrics_max_age_s",
    "--policy-options": "policy_options",
    "--probe-nodes": "probe_nodes",
    "--probe-namespace": "probe_namespace",
    "--probe-scale": "probe_scale",
    "--probe-repeats": "probe_repeats",
    "--no-health-monitor": "health_monitor",
    "--taint-degraded-nodes": "taint_degraded_nodes",
    "--degraded-canary-interval": "degraded_canary_interval_s",
    "--health-write-interval": "health_write_interval_s",
    "--metrics-port": "metrics_port",
    "--liveness-port": "liveness_port",
    "--bind-address": "bind_address",
    "--lease-namespace": "lease_namespace",
    "--verbose": "verbose",
}

#: A value each field's flag accepts (the rest: "7" for numbers, "x" for strings, a choice not the default).
SAMPLES = {
    "policy": "fifo",
    "policy_options": '{"a": 1}',
    "node_selector": "a=b",
    "allowed_policies": "fifo",
    "metrics_queries": "load1=node_load5",
    "worker_command": "python -m x",
}


def run_actions() -> dict[str, argparse.Action]:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {option: action for action in commands.choices["run"]._actions for option in action.option_strings}


def parse_run(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", *argv])


def test_the_hand_written_flags_keep_their_names_and_destinations() -> None:
    actions = run_actions()
    for option, dest in HAND_WRITTEN.items():
        assert option in actions, option
        assert actions[option].dest == dest, option
    assert actions["--metrics-query"].metavar == "NAME=PROMQL"
    assert actions["--allowed-image"].metavar == "PREFIX" and actions["--allowed-policy"].metavar == "POLICY"
    assert actions["--probe-nodes"].choices == ("auto", "always", "never")


def _argv(option: str, action: argparse.Action) -> list[str]:
    if action.nargs == 0:  # a switch
        return [option]
    if action.choices:
        return [option, next(c for c in action.choices if c != OperatorConfig().model_dump()[action.dest])]
    if action.dest in SAMPLES:
        return [option, SAMPLES[action.dest]]
    return [option, "7" if action.type in (int, float) else "x"]


def test_every_field_is_a_flag_or_deliberately_none() -> None:
    defaults = OperatorConfig()
    flags = {flag.field: flag.option for flag in operator_flags()}
    assert set(flags) | NOT_FLAGS == set(OperatorConfig.model_fields)
    assert not set(flags) & NOT_FLAGS
    actions = run_actions()
    for name, option in flags.items():
        config = operator_config(parse_run(*_argv(option, actions[option])), environ={})
        assert getattr(config, name) != getattr(defaults, name), f"{option} does not set {name}"


def test_run_without_flags_is_the_defaults_or_the_environment() -> None:
    args = parse_run()
    # None: no flag given hides an MRSCHED_* variable.
    assert all(getattr(args, flag.field) is None for flag in operator_flags())
    assert operator_config(args, environ={}) == OperatorConfig()
    assert (args.kubeconfig, args.liveness_port, args.verbose) == (None, 8080, False)
    env = {"MRSCHED_HEARTBEAT_S": "2.5", "MRSCHED_NAMESPACES": "a,b", "MRSCHED_WORKER_COMMAND": "w,-v"}
    config = operator_config(args, environ=env)
    assert (config.heartbeat_s, config.namespaces, config.worker_command) == (2.5, ("a", "b"), ("w", "-v"))


def test_bind_address_and_lease_namespace_default_to_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MRSCHED_BIND_ADDRESS", raising=False)
    monkeypatch.delenv("MRSCHED_LEASE_NAMESPACE", raising=False)
    args = parse_run()
    assert (args.bind_address, args.lease_namespace) == ("127.0.0.1", "default")
    monkeypatch.setenv("MRSCHED_BIND_ADDRESS", "0.0.0.0")
    monkeypatch.setenv("MRSCHED_LEASE_NAMESPACE", "ops")
    args = parse_run()
    assert (args.bind_address, args.lease_namespace) == ("0.0.0.0", "ops")


def test_flags_beat_the_environment() -> None:
    env = {
        "MRSCHED_POLICY": "fifo",
        "MRSCHED_HEALTH_MONITOR": "true",
        "MRSCHED_ALLOW_USER_OVERRIDE": "false",
        "MRSCHED_DATA_HOST_PATH": "/h",
        "MRSCHED_WORKER_COMMAND": "w",
        "MRSCHED_MAP_SLOTS": "",
    }
    args = parse_run(
        "--policy",
        "lsps",
        "--no-health-monitor",
        "--allow-user-override",
        "--data-host-path",
        "",
        "--worker-command",
        "",
        "--map-slots",
        "2",
    )
    config = operator_config(args, environ=env)
    assert (config.policy, config.health_monitor, config.allow_user_override) == ("lsps", False, True)
    # An empty string is a value for a string field, but leaves a field parsed from it (a command, a list) alone.
    assert (config.data_host_path, config.worker_command, config.map_slots) == ("", ("w",), 2)


def test_the_special_flags_parse_as_before() -> None:
    args = parse_run(
        "--namespace",
        "a",
        "--namespace",
        "b",
        "--worker-command",
        "python  -m mrworker",
        "--metrics-query",
        "load1=rate(x{a='='}[1m])",
        "--metrics-query",
        "cpu_utilisation=y",
        "--policy-options",
        '{"assignMultiple": false}',
        "--heartbeat",
        "0.5",
        "--metrics-max-age",
        "5",
    )
    config = operator_config(args, environ={})
    expected: dict[str, Any] = {
        "namespaces": ("a", "b"),
        "worker_command": ("python", "-m", "mrworker"),
        "metrics_queries": {"load1": "rate(x{a='='}[1m])", "cpu_utilisation": "y"},
        "policy_options": {"assignMultiple": False},
        "heartbeat_s": 0.5,
        "metrics_max_age_s": 5.0,
    }
    assert {name: getattr(config, name) for name in expected} == expected
    with pytest.raises(SystemExit, match="--metrics-query 'load1': expected NAME=PROMQL"):
        operator_config(parse_run("--metrics-query", "load1"), environ={})


def test_run_hands_the_config_and_process_flags_to_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    import mrsched.operator.process.main

    seen: dict[str, Any] = {}
    monkeypatch.setattr(
        mrsched.operator.process.main, "run_operator", lambda config, **kw: seen.update(config=config, **kw)
    )
    for name in ("MRSCHED_POLICY", "MRSCHED_BIND_ADDRESS", "MRSCHED_LEASE_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--policy", "fifo", "--liveness-port", "9", "--verbose"])
    assert exit_info.value.code == 0
    assert seen == {
        "config": OperatorConfig(policy="fifo"),
        "kubeconfig": None,
        "bind_address": "127.0.0.1",
        "liveness_port": 9,
        "lease_namespace": "default",
        "verbose": True,
    }


def test_python_m_mrsched_and_the_console_script() -> None:
    (script,) = entry_points(group="console_scripts", name="mrsched")
    assert script.load() is main
    done = subprocess.run(
        [sys.executable, "-m", "mrsched", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--no-health-monitor" in done.stdout and "--metrics-query NAME=PROMQL" in done.stdout
