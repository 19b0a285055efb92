"""What a pod declares about its work, as the model mode reads it."""

from __future__ import annotations

import re

import pytest

from mrsched.core.catalog import application
from mrsched.core.probes import PROBE_ETA, PROBE_KINDS, ProbeKind, probe_demand
from mrsched.core.report import TaskReport
from mrsched.emulator import workload
from mrsched.emulator.workload import (
    WorkloadError,
    container_env,
    demand_from_env,
    map_output_weight,
    map_task,
    reduce_wait,
)
from mrsched.operator.model import pods


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


def test_reduce_fetches_map_output_held_elsewhere_over_the_network() -> None:
    env = {"MRSCHED_APP": "wordcount", "MRSCHED_TASK_TYPE": "reduce", "MRSCHED_INPUT_BYTES": "40000000"}
    alone = demand_from_env(env, "n1")
    quarter_here = demand_from_env(env, "n1", {"n1": 1.0, "n2": 3.0})
    all_here = demand_from_env(env, "n1", {"n1": 5.0})
    assert alone is not None and quarter_here is not None and all_here is not None
    assert all_here == alone and alone.network_mb == 0
    # readPerInput 1.0: the 40 MB shuffle, three quarters of it on n2.
    assert quarter_here.network_mb == pytest.approx(30) and quarter_here.read_mb == pytest.approx(
        alone.read_mb - 30
    )
    assert quarter_here.cpu_s == alone.cpu_s and quarter_here.write_mb == alone.write_mb
    # A map is not a shuffle.
    assert demand_from_env({**env, "MRSCHED_TASK_TYPE": "map"}, "n1", {"n2": 1.0}) == demand_from_env(
        {**env, "MRSCHED_TASK_TYPE": "map"}, "n1"
    )


def test_reduces_that_wait_for_their_maps_and_the_operators_labels() -> None:
    env = {"MRSCHED_APP": "wordcount", "MRSCHED_TASK_TYPE": "reduce", "MRSCHED_MAPS": "4"}
    assert reduce_wait({**env, "MRSCHED_WAIT_FOR_MAPS": "86400"}) == (4, 86400.0)
    assert reduce_wait(env) is None  # the worker does not wait either
    assert reduce_wait({**env, "MRSCHED_TASK_TYPE": "map", "MRSCHED_WAIT_FOR_MAPS": "60"}) is None
    # The emulator reads the labels the operator writes (it may not import the operator: a layer above it).
    assert (workload.JOB_UID_LABEL, workload.TYPE_LABEL, workload.INDEX_LABEL) == (
        pods.JOB_UID_LABEL,
        pods.TYPE_LABEL,
        pods.INDEX_LABEL,
    )
    assert workload.WAIT_FOR_MAPS_ENV == "MRSCHED_WAIT_FOR_MAPS" and workload.MAPS_ENV == "MRSCHED_MAPS"
    labels = {pods.JOB_UID_LABEL: "u1", pods.TYPE_LABEL: "map", pods.INDEX_LABEL: "3"}
    pod = {"metadata": {"namespace": "ns", "labels": labels}, "spec": {"containers": [{"env": []}]}}
    assert map_task(pod) == ("ns/u1", 3)
    assert map_task({"metadata": {"labels": {**labels, pods.TYPE_LABEL: "reduce"}}}) is None
    assert map_output_weight(pod) == 1.0
    pod["spec"]["containers"][0]["env"] = [{"name": "MRSCHED_INPUT_BYTES", "value": "5000"}]
    assert map_output_weight(pod) == 5000.0
    report = TaskReport("succeeded", written_bytes=700).to_json()
    pod["status"] = {"containerStatuses": [{"state": {"terminated": {"message": report}}}]}
    assert map_output_weight(pod) == 700.0


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
