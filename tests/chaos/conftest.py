"""The chaos suite's operator: one process watching the test's namespace, with the chart's defaults but for the
job policy: any image is allowed, since jobs here bring images that fail to pull or do not exist (the policy
itself is tested in tests/unit/operator/test_job_policy.py and tests/cluster/test_chart.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubehelpers import Kube
from tests.operatorhelpers import OperatorProcess, apply_crds, start_operator


@pytest.fixture
def operator(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    apply_crds(kube)
    handle = start_operator(kube, namespace, tmp_path / "logs", env={"MRSCHED_ALLOWED_IMAGES": "*"})
    yield handle
    handle.stop()
