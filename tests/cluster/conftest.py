"""The operator the cluster tests share: one process watching the test's namespace, with the chart's defaults."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubehelpers import Kube
from tests.operatorhelpers import OperatorProcess, apply_crds, start_operator


@pytest.fixture
def operator(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    apply_crds(kube)
    handle = start_operator(kube, namespace, tmp_path / "logs")
    yield handle
    handle.stop()
