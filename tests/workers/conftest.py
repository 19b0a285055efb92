from __future__ import annotations

from pathlib import Path

import pytest

from tests.workers.image import Worker


@pytest.fixture
def worker(tmp_path: Path) -> Worker:
    return Worker(tmp_path / "data", tmp_path / "scratch")
