"""A small traced scenario for the sweep tests (tests/unit/simulator/test_sweep_files.py,
tests/cluster/test_cluster_sweep.py): the SWIM FB-2009 trace's first jobs on four nodes, its trace file beside it
as bench/scenarios' are."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

TRACE = (
    Path(__file__).parents[1] / "bench" / "data" / "traces" / "swim" / "FB-2009_samples_24_times_1hr_0.tsv"
)
SWIM_SMALL: dict[str, Any] = {
    "name": "swim-small",
    "source": "test",
    "headline": "test",
    "cluster": {"nodes": [{"class": "tan-node", "count": 2}, {"class": "yao-m1large", "count": 2}]},
    "workload": {
        "trace": {
            "format": "swim",
            "path": "traces/fb.tsv",
            "maxJobs": 12,
            "sizeScale": 150,
            "app": "wordcount",
        }
    },
    "policies": ["fifo", "fair"],
    "seeds": [1, 2],
}


def write_swim_small(directory: Path, **overrides: Any) -> Path:
    """The scenario (with ``overrides``) as ``directory``/s.yaml and its trace as traces/fb.tsv; its path."""
    (directory / "traces").mkdir(parents=True)
    shutil.copyfile(TRACE, directory / "traces" / "fb.tsv")
    path = directory / "s.yaml"
    path.write_text(yaml.safe_dump({**SWIM_SMALL, **overrides}))
    return path
