"""What a pod declares about its work, as the model mode reads it."""

from __future__ import annotations

import pytest

from mrsched.core.catalog import application
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
        ({"MRSCHED_APP": "pi", "MRSCHED_TASK_TYPE": "shuffle"}, "must be 'map', 'reduce' or 'commit-job'"),
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
