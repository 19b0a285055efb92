"""The user's journeys end to end (issue 25), on the same real local control plane as tests/: its fixtures come
from tests/conftest.py, so one ``make test`` run starts one cluster for both."""

from __future__ import annotations

import pytest
from tests.conftest import emulate, kube, local_cluster, namespace, toolchain  # noqa: F401  (fixtures)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.path):
            item.add_marker(pytest.mark.cluster)
