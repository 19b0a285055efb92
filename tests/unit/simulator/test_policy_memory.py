"""Every policy's memory is bounded whatever the workload (issue 51): 60 jobs of six applications with distinct
requests at once on 30 nodes of four classes (bench/policy_stress.py's workload), each policy with the defaults
the operator gives it, stays under the chart's operator memory limit, and its rounds within the headroom the
operator leaves at 10,000 pods. Each policy runs in a fresh process (its own peak resident set) under a 4 GiB
address-space cap; DARA with the thesis's unbounded Eq 4.16 search, the simulator's default before, asked
numpy for gigabytes on a workload like this one."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
try:
    from policy_stress import CHART_LIMIT_MIB, ROUND_HEADROOM_MIB, measure
finally:
    sys.path.pop(0)

from mrsched.policies import policy_names

#: Simulated seconds: the first maps of every job have started by then and each round has weighed all 60 jobs
#: (DARA's and diagnosis's mix searches run on the first rounds); bench/policy_stress.py runs 120 s.
UNTIL_S = 8.0


def test_a_crowded_cluster_keeps_every_policy_under_the_charts_memory_limit() -> None:
    with ThreadPoolExecutor(2) as pool:  # each a process of its own: two cores
        rows = list(pool.map(lambda policy: measure(policy, UNTIL_S), policy_names()))
    failed = [r for r in rows if "error" in r]
    assert not failed, failed
    assert all(r["events"] > 0 for r in rows), rows
    over = [r for r in rows if r["peak_mib"] >= CHART_LIMIT_MIB or r["growth_mib"] >= ROUND_HEADROOM_MIB]
    assert not over, over
