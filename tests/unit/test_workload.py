"""What a pod declares about its work, as the model mode reads it."""

from __future__ import annotations

import re

import pytest

from mrsched.core.catalog import application
from mrsched.core.probes import PROBE_ETA, PROBE_KINDS, ProbeKind, probe_demand
from mrsched.emulator.workload import WorkloadError, container_env, demand_from_env


def test_demand_follows_the_application_profile_and_input_size() -> None:
    demand = demand_from_env({"MRSCHED_APP": "wordcount", "MRSCHED_INPUT_BYTES": "128000000"}, "n1")
    assert demand is not None
    profile = application("wordcount").map
    assert demand.cpu_s == pytest.approx(profile.cpu_s_per_mb * 128)
    assert demand.read_mb == pytest.approx(128) and demand.network_mb == 0


def test_input_held_elsewhere_crosses_the_network() -> None:
    env = {"MRSCHED_APP": "sort", "MRSCHED_INPUT_BYTES": "64000000", "MRSCHED_INPUT_HOSTS": "n2,n3"}
    local = demand_from_env({**env, "MRSCHED_INPUT_HOSTS": "n1, n2"}, "n1")
    remote = demand_from_env(env, "n1")
    assert local is not None and remote is not None
    assert remote.network_mb == pytest.approx(64) and remote.read_mb == pytest.approx(local.read_mb - 64)


def test_no_application_means_no_finite_work() -> None:
    assert demand_from_env({}, "n1") is None


@pytest.mark.parametrize(
    "env, message",
    [
        ({"MRSCHED_APP": "nope"}, "unknown application 'nope'"),
        (
            {"MRSCHED_APP": "pi", "MRSCHED_TASK_TYPE": "shuffle"},
            "must be 'map', 'reduce', 'commit-job' or 'probe'",
        ),
        ({"MRSCHED_APP": "pi", "MRSCHED_INPUT_BYTES": "lots"}, "must be a number of bytes"),
        ({"MRSCHED_APP": "randomwriter", "MRSCHED_TASK_TYPE": "reduce"}, "map-only"),
    ],
)
def test_bad_declarations_fail_with_a_clear_message(env: dict[str, str], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        demand_from_env(env, "n1")


def test_container_env_reads_literals_and_downward_api_fields() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    ]
                }
            ],
        },
    }
    assert container_env(pod) == {"A": "1", "NODE": "n1"}


@pytest.mark.parametrize("kind", PROBE_KINDS)
@pytest.mark.parametrize("scale", [None, "0.25"])
def test_probe_pods_carry_the_probes_known_work_without_an_application(
    kind: ProbeKind, scale: str | None
) -> None:
    env = {"MRSCHED_TASK_TYPE": "probe", "MRSCHED_PROBE_KIND": kind, "MRSCHED_DATA_DIR": "/data"}
    if scale is not None:
        env["MRSCHED_PROBE_SCALE"] = scale
    demand = demand_from_env(env, "n1")
    assert demand == probe_demand(kind, 1.0 if scale is None else float(scale))


def test_probe_work_scales_as_the_thesis_probes_do() -> None:
    def work(kind: str) -> tuple[float, float]:
        demand = demand_from_env({"MRSCHED_TASK_TYPE": "probe", "MRSCHED_PROBE_KIND": kind}, "n1")
        assert demand is not None
        return demand.cpu_s, demand.read_mb + demand.write_mb

    assert work("unit") == (0.0, 0.0)
    base_cpu, base_mb = work("base")
    assert work("cpu") == (pytest.approx(PROBE_ETA * base_cpu), pytest.approx(base_mb))
    assert work("disk") == (pytest.approx(base_cpu), pytest.approx(PROBE_ETA * base_mb))


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "MRSCHED_PROBE_KIND='': a probe must be one of unit, base, cpu, disk"),
        ({"MRSCHED_PROBE_KIND": "gpu"}, "MRSCHED_PROBE_KIND='gpu': a probe must be one of"),
        ({"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "big"}, "'big': must be a positive number"),
        ({"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "0"}, "'0': must be a positive number"),
        ({"MRSCHED_PROBE_KIND": "cpu", "MRSCHED_PROBE_SCALE": "nan"}, "'nan': must be a positive number"),
        ({"MRSCHED_PROBE_KIND": "disk", "MRSCHED_PROBE_SCALE": "-1"}, "'-1': must be a positive number"),
    ],
)
def test_bad_probe_declarations_fail_with_a_clear_message(env: dict[str, str], message: str) -> None:
    with pytest.raises(WorkloadError, match=re.escape(message)):
        demand_from_env({"MRSCHED_TASK_TYPE": "probe", **env}, "n1")
