"""Kubernetes quantities as the operator reads them: a job's own (refused with a message naming the field) and
other owners' (a node's allocatable, another tenant's pod, a node's slots label), which never stop a round."""

from __future__ import annotations

from typing import Any

import pytest

from mrsched.core.model import UNCAPPED
from mrsched.operator.model import snapshot as snap
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import InvalidSpec, JobSpec, parse_cpu, parse_memory_mb


@pytest.mark.parametrize(
    ("value", "cores"),
    [("500m", 0.5), ("2", 2.0), (2, 2.0), ("1.5", 1.5), ("1e3", 1000.0), ("100u", 1e-4), ("0.5k", 500.0)],
)
def test_cpu_quantities(value: Any, cores: float) -> None:
    assert parse_cpu(value) == pytest.approx(cores)


@pytest.mark.parametrize(
    ("value", "mib"),
    [
        ("512Mi", 512.0),
        ("1Gi", 1024.0),
        ("1G", 1e9 / 2**20),
        ("100m", 0.1 / 2**20),  # legal: a tenth of a byte (the old parser raised on it)
        ("1E", 1e18 / 2**20),  # legal: an exabyte (the old parser raised on it)
        (1048576, 1.0),
    ],
)
def test_memory_quantities(value: Any, mib: float) -> None:
    assert parse_memory_mb(value) == pytest.approx(mib)


@pytest.mark.parametrize("value", ["abc", "", "Mi", "1.2.3", "12xyz"])
def test_a_malformed_quantity_is_a_value_error_that_quotes_it(value: str) -> None:
    with pytest.raises(ValueError, match=f"'{value}' is not a Kubernetes quantity"):
        parse_cpu(value)


def _job(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {"workload": {"app": "pi"}, "output": {"path": "o"}, "resources": resources},
    }


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"map": {"cpu": "abc"}}, "spec.resources.map.cpu: 'abc' is not a Kubernetes quantity"),
        (
            {"reduce": {"memory": "12xyz"}},
            "spec.resources.reduce.memory: '12xyz' is not a Kubernetes quantity",
        ),
        ({"map": {"cpu": "0"}}, "spec.resources.map.cpu: '0' must be a positive quantity"),
        ({"reduce": {"memory": "-1Gi"}}, "spec.resources.reduce.memory: '-1Gi' must be a positive quantity"),
    ],
)
def test_a_job_with_a_bad_quantity_is_an_invalid_spec_naming_the_field(
    resources: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSpec, match=message):
        JobSpec.from_resource(_job(resources))


def test_a_jobs_quantities_are_read_with_their_suffixes() -> None:
    spec = JobSpec.from_resource(_job({"map": {"cpu": "250m", "memory": "1.5Gi"}, "reduce": {"cpu": 2}}))
    assert (spec.map_resources.cpu, spec.map_resources.memory_mb) == (0.25, 1536.0)
    assert spec.reduce_resources.cpu == 2.0


def _pod(node: str, cpu: Any, memory: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {
        "metadata": {"namespace": "other", "name": "p"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": "Running"},
    }


def test_other_tenants_requests_with_unusual_quantities_are_counted() -> None:
    used = snap.requested([_pod("n1", "100m", "100m"), _pod("n1", "1", "1Gi"), _pod("n2", "0.5", "1E")])
    assert used["n1"].cpu == pytest.approx(1.1)
    assert used["n1"].memory_mb == pytest.approx(1024 + 0.1 / 2**20)
    assert used["n2"].memory_mb == pytest.approx(1e18 / 2**20)


def test_an_unreadable_request_counts_as_nothing_and_the_rest_still_counts() -> None:
    """Not a quantity the apiserver would admit, but read from outside our control: never an exception."""
    used = snap.requested([_pod("n1", "abc", "1Gi"), _pod("n1", "1", "zz")])
    assert (used["n1"].cpu, used["n1"].memory_mb) == (1.0, 1024.0)


def test_a_node_with_an_unreadable_slots_label_or_allocatable_gets_the_defaults() -> None:
    config = OperatorConfig()
    body = {
        "metadata": {
            "name": "n1",
            "labels": {snap.MAP_SLOTS_LABEL: "abc", snap.REDUCE_SLOTS_LABEL: "3"},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "bogus"}, "conditions": []},
    }
    node = snap.read_node(body, config).node
    assert (node.map_slots, node.reduce_slots) == (UNCAPPED, 3)  # no configured cap: requests bind
    assert node.cores == 4 and node.memory_mb == 1024.0
