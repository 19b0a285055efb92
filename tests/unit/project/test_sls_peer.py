"""The SLS peer harness (bench/peers/sls/sls_peer.py, issue 22): SLS's per-job output read back to the trace's
jobs, and SLS's configuration written from the harness's cluster. The fixtures are a real SLS 3.3.5 run (the
FairScheduler on 8 nodes x 4 containers, four jobs), not made up: jobruntime.csv exactly as SLS wrote it."""

from __future__ import annotations

import importlib.util
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "sls"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_sls_peer", ROOT / "bench" / "peers" / "sls" / "sls_peer.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


peer = _module()
TRACE = FIXTURES / "four-jobs-trace.json"
CSV = (FIXTURES / "four-jobs-fair-jobruntime.csv").read_text()


def test_jobruntime_rows_are_matched_to_trace_jobs_by_their_start_and_end_pair() -> None:
    jobs = peer.parse_jobruntime(CSV, peer.trace_keys(TRACE))
    assert [j.job_id for j in jobs] == ["job_0", "job_1", "job_2", "job_3"]
    # The first of each app's two rows (YARN-10427) is kept; times run from the earliest simulated start.
    first = jobs[0]
    assert (first.start_ms, first.end_ms) == (0, 1795775087080 - 1795775047046)
    assert first.completion_s == pytest.approx(40.034)
    assert jobs[3].start_ms == 1795775062045 - 1795775047046  # job_3 submitted 15 s into the trace


def test_a_job_missing_from_jobruntime_is_an_error_not_a_shorter_table() -> None:
    lines = CSV.splitlines()
    without_last = "\n".join(line for line in lines if "_0004," not in line) + "\n"
    with pytest.raises(peer.PeerError, match="no completion for 1 jobs: \\['job_3'\\]"):
        peer.parse_jobruntime(without_last, peer.trace_keys(TRACE))


def test_a_row_that_matches_no_trace_job_is_an_error() -> None:
    other = CSV.replace(",0,60000,", ",1,60000,")
    with pytest.raises(peer.PeerError, match="matches no trace job"):
        peer.parse_jobruntime(other, peer.trace_keys(TRACE))


def test_trace_jobs_sharing_a_start_and_end_cannot_be_told_apart(tmp_path: Path) -> None:
    job = {"job.start.ms": 0, "job.end.ms": 10, "job.tasks": [{"container.duration.ms": 5}]}
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps({**job, "job.id": "a"}) + "\n" + json.dumps({**job, "job.id": "b"}))
    with pytest.raises(peer.PeerError, match=r"share job\.start\.ms/job\.end\.ms"):
        peer.trace_keys(twice)
    header = tmp_path / "header.json"
    header.write_text(
        json.dumps({"num.nodes": 1, "num.racks": 1}) + "\n" + json.dumps({**job, "job.id": "a"})
    )
    assert peer.trace_keys(header) == {(0, 10): "a"}


def _properties(xml: str) -> dict[str, str]:
    return {p.findtext("name") or "": p.findtext("value") or "" for p in ET.fromstring(xml).iter("property")}


def test_capacity_configuration_names_every_queue_and_splits_what_is_left() -> None:
    cluster = peer.Cluster.from_json(
        {
            "nodes": [{"name": "n1", "rack": "r1", "memoryMB": 4096, "vcores": 4}],
            "queues": [{"name": "a", "capacity": 70, "userLimitFactor": 2}, {"name": "b"}, {"name": "c"}],
        }
    )
    files = peer.config_files(cluster, "capacity")
    capacity = _properties(files["capacity-scheduler.xml"])
    assert capacity["yarn.scheduler.capacity.root.queues"] == "a,b,c"
    assert [capacity[f"yarn.scheduler.capacity.root.{q}.capacity"] for q in "abc"] == ["70", "15", "15"]
    assert capacity["yarn.scheduler.capacity.root.a.user-limit-factor"] == "2"
    runner = _properties(files["sls-runner.xml"])
    assert runner["yarn.resourcemanager.scheduler.class"].endswith("capacity.CapacityScheduler")
    assert runner["yarn.sls.metrics.switch"] == "ON"  # jobruntime.csv is written by the metrics code
    assert "fair-scheduler.xml" not in files


def test_fair_configuration_declares_the_queues_with_weights_and_am_shares() -> None:
    cluster = peer.Cluster.from_json(json.loads((FIXTURES / "four-jobs-cluster.json").read_text()))
    files = peer.config_files(cluster, "fair")
    allocations = ET.fromstring(files["fair-scheduler-allocation.xml"])
    queues = {
        q.get("name"): (q.findtext("weight"), q.findtext("maxAMShare")) for q in allocations.iter("queue")
    }
    assert queues == {"sls_queue_1": ("1", "0.5"), "sls_queue_2": ("1", "0.5")}
    assert _properties(files["fair-scheduler.xml"])["yarn.scheduler.fair.allocation.file"] == (
        "fair-scheduler-allocation.xml"
    )
    racks = [json.loads(chunk) for chunk in peer.node_file(cluster).replace("}\n{", "}\x00{").split("\x00")]
    assert [r["rack"] for r in racks] == ["rack2", "rack1"]
    assert sum(len(r["nodes"]) for r in racks) == 8
    assert racks[0]["nodes"][0] == {"node": "node1", "memory-mb": 4096, "vcores": 4}


def test_bad_cluster_input_is_a_clear_error() -> None:
    with pytest.raises(peer.PeerError, match="non-empty list of nodes"):
        peer.Cluster.from_json({"nodes": [], "queues": [{"name": "a"}]})
    with pytest.raises(peer.PeerError, match="weight must be a number"):
        peer.Cluster.from_json(
            {"nodes": [{"name": "n", "memoryMB": 1, "vcores": 1}], "queues": [{"name": "a", "weight": "x"}]}
        )
    with pytest.raises(peer.PeerError, match="'vcores' is missing"):
        peer.Cluster.from_json({"nodes": [{"name": "n", "memoryMB": 1}], "queues": [{"name": "a"}]})
    with pytest.raises(peer.PeerError, match="malformed"):
        peer.Cluster.from_json(
            {"nodes": [{"name": "n", "memoryMB": "lots", "vcores": 1}], "queues": [{"name": "a"}]}
        )
    with pytest.raises(peer.PeerError, match="scheduler must be one of"):
        peer.config_files(
            peer.Cluster.from_json(json.loads((FIXTURES / "four-jobs-cluster.json").read_text())), "fifo"
        )


SUMMARY = (  # one ApplicationSummary line of a real SLS 3.3.5 run (two-queues, CapacityScheduler)
    "2026-11-27 11:37:15,714 INFO resourcemanager.RMAppManager$ApplicationSummary: "
    "appId=application_1795779403564_0002,name=N/A,user=short,queue=sls_queue_2,state=FINISHED,"
    "finalStatus=SUCCEEDED,memorySeconds=80880,vcoreSeconds=74,preemptedMemorySeconds=0,"
    "preemptedVcoreSeconds=0,preemptedAMContainers={am},preemptedNonAMContainers={other},"
    "preemptedResources=<memory:0\\, vCores:0>,applicationType=YARN,totalAllocatedContainers=6\n"
)


def test_preempted_containers_are_summed_over_the_runs_applications() -> None:
    log = SUMMARY.format(am=0, other=0) + SUMMARY.format(am=1, other=3) + "some other line\n"
    assert peer.preempted_containers(log) == 4
    assert peer.preempted_containers(SUMMARY.format(am=0, other=0)) == 0


def test_a_log_without_application_summaries_is_an_error_not_zero_preemptions() -> None:
    with pytest.raises(peer.PeerError, match="no ApplicationSummary lines"):
        peer.preempted_containers("2026-11-27 INFO resourcemanager.ResourceManager: started\n")
