"""The metric-driven policies on the live control plane, reading the real Prometheus: adaptive slots (seed 001)
follow each emulated node's CPU; the learning scheduler (seed 000) learns from load1 which job overloads a
node and stops sending it there; a Prometheus outage puts both on their fallback (an Event on every node, the
operator's gauges) and the job still finishes; Prometheus back, the policy is back.

Emulated nodes run in model mode: their CPU, load average and memory come from the physics, exported with
node_exporter's names and scraped every second."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.ports import free_port
from mrsched.localcluster.prometheus import PrometheusServer, start_prometheus, stop_prometheus
from mrsched.localcluster.toolchain import Toolchain
from mrsched.operator.model.nodemetrics import MetricsSettings, NodeMetricsSource, prometheus_query
from tests.conftest import EmulateFactory
from tests.kubehelpers import Kube, wait_for
from tests.operatorhelpers import (
    OperatorProcess,
    apply,
    apply_crds,
    job_manifest,
    start_operator,
    task_pods,
    wait_phase,
)

#: Small requests: the policies, not the nodes' allocatable CPU, decide how many tasks a node runs.
TINY = {"map": {"cpu": "10m", "memory": "16Mi"}, "reduce": {"cpu": "10m", "memory": "16Mi"}}
#: Prometheus scrapes every second here: rate() over three seconds is "the last heartbeat period" of seed 001,
#: and still holds the two samples rate() needs when a scrape slips on a loaded machine (with two seconds, a
#: slipped scrape left U unknown and the policy on its fallback for that heartbeat).
METRICS = MetricsSettings(rate_window="3s", max_age_s=6.0)
METRICS_FLAGS = ("--metrics-rate-window", METRICS.rate_window, "--metrics-max-age", f"{METRICS.max_age_s:g}")


def wait_idle_and_fresh(prometheus_url: str, nodes: list[str]) -> None:
    """Until the nodes' series span the rate window, rate() reads a new, idle node as busy (it divides by the
    whole window), so a job applied at once would meet nodes at U ≥ U* and no growth; wait until Prometheus shows
    every node fresh and idle, as the operator will read it (the same window and age limit)."""
    source = NodeMetricsSource(prometheus_query(prometheus_url), METRICS)

    def idle_and_fresh() -> bool:
        read = source.read(nodes)
        return all(
            m.status == "fresh" and m.cpu_utilisation is not None and m.cpu_utilisation < 0.05
            for m in read.values()
        )

    wait_for(idle_and_fresh, 60, f"fresh metrics of idle nodes {nodes}", interval_s=0.5)


def operator_log_tail(operator: OperatorProcess, lines: int = 60) -> str:
    """The end of the operator's log, printed when a live test fails, to tell stale metrics from a policy."""
    return "\n".join(operator.logs().splitlines()[-lines:])


def gauge(operator: OperatorProcess, name: str, **labels: str) -> float | None:
    """One sample of the operator's /metrics, by name and labels (None when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in operator.metrics().splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        match = re.fullmatch(rf"{re.escape(name)}(\{{(.*)\}})?", series)
        if match and ",".join(sorted((match.group(2) or "").split(","))) == wanted:
            return float(value)
    return None


def node_profile(kube: Kube, node: str) -> dict[str, Any]:
    found = kube.kubectl("get", "nodeprofile", node, "-o", "json", check=False)
    return dict(json.loads(found.stdout).get("status") or {}) if found.returncode == 0 else {}


def node_events(kube: Kube, node: str) -> list[str]:
    out = kube.kubectl(
        "get",
        "events",
        "-A",
        "--field-selector",
        f"involvedObject.kind=Node,involvedObject.name={node}",
        "-o",
        "json",
    ).stdout
    return [
        e["reason"] for e in json.loads(out)["items"] if e.get("source", {}).get("component") == "mrsched"
    ]


def pi_job(name: str, maps: int, policy: str, **extra: Any) -> dict[str, Any]:
    return job_manifest(
        name,
        workload={"app": "pi", "parameters": {"samples": 1000}},
        output={"path": f"out/{name}"},
        maps=maps,
        reduces=1,
        resources=TINY,
        policy=policy,
        **extra,
    )


# --- adaptive slots (seed 001, Algorithm 1) ---------------------------------------------------------------


def test_adaptive_slots_follow_each_nodes_cpu_and_shrink_under_a_hog(
    kube: Kube, namespace: str, tmp_path: Path, emulate: EmulateFactory, local_cluster: LocalCluster
) -> None:
    apply_crds(kube)
    # Model time at twice the wall's: the CPU counters are exported in wall seconds (the emulator divides by
    # the scale), so utilisation reads the same, and the hog's shrink, a slot per task ended, comes twice as soon.
    emulator = emulate({"elkholy-i3": 1, "elkholy-dualcore": 1}, time_scale=2.0)
    fast, slow = emulator.nodes  # 4 and 2 hardware threads
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        policy="adaptive-slots",
        extra=("--prometheus-url", local_cluster.prometheus.url, *METRICS_FLAGS),
    )
    try:
        wait_idle_and_fresh(local_cluster.prometheus.url, [fast, slow])
        apply(kube, namespace, pi_job("busy", 200, "adaptive-slots"))

        def slots(node: str) -> int | None:
            value = gauge(operator, "mrsched_node_slots", node=node, type="map", policy="adaptive-slots")
            return None if value is None else int(value)

        # From their first heartbeat both nodes have slots of their own: their hardware threads, 4 and 2. While
        # the job ramps up, the utilisation of the last two seconds is below U* and each grows by one slot per
        # new sample (Algorithm 1, each node on its own utilisation); once its CPU is busy, growth stops.
        wait_for(lambda: slots(fast) is not None and slots(slow) is not None, 30, "slot gauges of both nodes")
        history: dict[str, list[int]] = {fast: [], slow: []}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            values = {node: slots(node) for node in history}
            for node, value in values.items():
                if value is not None:
                    history[node].append(value)
            time.sleep(0.5)
        print("map slots over 20 s:", history)
        assert history[fast][0] > history[slow][0]  # 4 threads vs 2, from the first heartbeat
        threads = {fast: 4, slow: 2}  # where Algorithm 1 starts each node
        for node in history:  # each grew on its own live utilisation
            assert max(history[node]) > threads[node], (history, operator_log_tail(operator))
        shown = node_profile(kube, slow)["policies"]["adaptive-slots"]
        print("slow node's profile:", shown)
        assert shown["cpuUtilisation"] is not None and shown["changes"] >= 1
        before = history[fast][-1]
        # The learned counts are on the NodeProfiles, as the policy's per-node state.
        shown = node_profile(kube, fast)["policies"]["adaptive-slots"]
        assert shown["mapSlots"] >= 1 and shown["metrics"] == "fresh"
        assert "MAPSLOTS" in kube.kubectl("get", "nodeprofiles").stdout

        # A CPU hog on the fast node from now on: U ≥ U* at every heartbeat, so each slot a finished task frees
        # is removed (Algorithm 1's shrink branch) down to the minimum.
        # A slot goes only when a task ends on a fresh sample, and a Pi map on this node takes about 50 model s
        # (25 wall s) under the hog (10 CPU-s at κ 0.62, ten threads on four): six slots take a task's length or two.
        emulator.client.add_fault(fast, "cpu-hog", intensity=2.0)
        hogged_at = time.monotonic()
        wait_for(
            lambda: (s := slots(fast)) is not None and s < before and s <= 2, 180, "the hogged node to shrink"
        )
        print(f"after the hog ({time.monotonic() - hogged_at:.0f} s):", slots(fast), "slow:", slots(slow))
        emulator.client.clear_faults(fast)  # (the job runs on; the namespace goes with the test)
    finally:
        operator.stop()


# --- the learning scheduler (seed 000) --------------------------------------------------------------------


def test_learning_stops_sending_the_job_that_overloads_a_node(
    kube: Kube, namespace: str, tmp_path: Path, emulate: EmulateFactory, local_cluster: LocalCluster
) -> None:
    apply_crds(kube)
    (node,) = emulate({"small": 1}).nodes  # 2 cores, 4 GB
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        policy="learning",
        extra=("--prometheus-url", local_cluster.prometheus.url, *METRICS_FLAGS),
    )
    try:
        # CPU-bound Pi maps (10 CPU-s each, hinted CPU 10) on one 2-core node, θ = 1, no slot limit: the
        # untrained learner sends one per heartbeat until the node's load1 (damped over a minute) tells it,
        # at the heartbeats after, that it overloaded the node.
        hints = {"map": {"cpu": 10, "memory": 5, "disk": 3, "network": 1}}
        wait_idle_and_fresh(local_cluster.prometheus.url, [node])
        apply(kube, namespace, pi_job("heavy", 200, "learning", hints=hints))

        def learned() -> dict[str, Any] | None:
            found = kube.kubectl("get", "policyprofile", "learning", "-o", "json", check=False)
            state = (json.loads(found.stdout or "{}").get("status") or {}).get("state") or {}
            return state if state.get("overloads", 0) >= 5 else None

        try:
            state = wait_for(learned, 180, "the learner to judge five decisions bad", interval_s=1)
        except AssertionError:
            print(operator_log_tail(operator))
            raise
        learned_at = time.time()
        print("learned:", {k: state.get(k) for k in ("decisions", "overloads", "accuracy")})
        time.sleep(25)

        def started(since: float, until: float) -> int:
            from datetime import datetime

            times = [
                datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
                for p in task_pods(kube, namespace, "heavy")
                if p["metadata"]["labels"].get("mrsched.dev/task-type") == "map"
            ]
            return sum(since <= t < until for t in times)

        before = started(learned_at - 20, learned_at)
        after = started(learned_at + 3, learned_at + 23)
        print(f"heavy maps started in the 20 s before learning: {before}, in 20 s after: {after}")
        # Untrained, it sends about one per heartbeat; trained, it holds back while the node is overloaded (the
        # maps it started still run, so load1/cores stays above θ for a while).
        assert before >= 10 and after <= before / 4
        printed = kube.kubectl("get", "policyprofiles").stdout
        print(printed)
        assert "learning" in printed and "naive-bayes" in printed
        load = node_profile(kube, node)["policies"]["learning"]
        assert load["overloads"] >= 5 and load["lastLoadRatio"] > 0
    finally:
        operator.stop()


# --- a Prometheus outage ----------------------------------------------------------------------------------


def _own_prometheus(
    toolchain: Toolchain, local_cluster: LocalCluster, workdir: Path, port: int
) -> PrometheusServer:
    """A Prometheus of the test's own (so that stopping it leaves the session's alone), scraping the same
    emulators: their target files are copied in."""
    server = start_prometheus(toolchain, workdir, port)
    for target in local_cluster.prometheus.targets_dir.glob("*.json"):
        shutil.copy(target, server.targets_dir / target.name)
    return server


def test_a_prometheus_outage_falls_back_and_the_policy_comes_back(
    kube: Kube,
    namespace: str,
    tmp_path: Path,
    emulate: EmulateFactory,
    local_cluster: LocalCluster,
    toolchain: Toolchain,
) -> None:
    apply_crds(kube)
    nodes = emulate({"small": 2}, time_scale=10.0).nodes
    port = free_port()
    prometheus = _own_prometheus(toolchain, local_cluster, tmp_path / "prom", port)
    operator = start_operator(
        kube,
        namespace,
        tmp_path / "logs",
        policy="adaptive-slots",
        extra=("--prometheus-url", prometheus.url, *METRICS_FLAGS),
    )
    try:
        apply(kube, namespace, pi_job("through", 300, "adaptive-slots"))
        wait_for(
            lambda: gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 0,
            60,
            "both nodes' metrics fresh",
        )

        slots_before = {
            n: gauge(operator, "mrsched_node_slots", node=n, type="map", policy="adaptive-slots")
            for n in nodes
        }
        stop_prometheus(prometheus)  # mid-job
        wait_for(
            lambda: gauge(operator, "mrsched_prometheus_up") == 0, 30, "the operator to see Prometheus down"
        )
        wait_for(
            lambda: gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 2,
            30,
            "both nodes on the fallback",
        )
        wait_for(
            lambda: all("MetricsUnavailable" in node_events(kube, n) for n in nodes),
            30,
            "a MetricsUnavailable Event on every node",
        )

        # Tasks keep being placed on the kept slot counts, and say so.
        def fallback_placements() -> int:
            return sum(
                "slot counts kept"
                in (p["metadata"].get("annotations") or {}).get("mrsched.dev/placement", "")
                for p in task_pods(kube, namespace, "through")
            )

        wait_for(lambda: fallback_placements() >= 3, 60, "placements made on the fallback")
        status = node_profile(kube, nodes[0])["policies"]["adaptive-slots"]
        print("during the outage:", status)
        # The fallback keeps each node's last slot counts: no step on unknown utilisation. (The gauge read
        # before the stop may precede one last step on the final sample, hence the profile's count too.)
        during = {
            n: gauge(operator, "mrsched_node_slots", node=n, type="map", policy="adaptive-slots")
            for n in nodes
        }
        time.sleep(5)
        assert during == {
            n: gauge(operator, "mrsched_node_slots", node=n, type="map", policy="adaptive-slots")
            for n in nodes
        }, slots_before
        assert status["metrics"] == "unavailable" and status["fallbacks"] > 0

        prometheus = _own_prometheus(
            toolchain, local_cluster, tmp_path / "prom", port
        )  # same data, same port
        wait_for(lambda: gauge(operator, "mrsched_prometheus_up") == 1, 30, "Prometheus back")
        wait_for(
            lambda: all("MetricsRecovered" in node_events(kube, n) for n in nodes),
            60,
            "a MetricsRecovered Event on every node",
        )
        wait_for(
            lambda: gauge(operator, "mrsched_metrics_fallback_nodes", policy="adaptive-slots") == 0,
            60,
            "no node on the fallback",
        )
        wait_for(
            lambda: node_profile(kube, nodes[0])["policies"]["adaptive-slots"]["metrics"] == "fresh",
            30,
            "Algorithm 1 running on fresh metrics again",
        )
        wait_phase(kube, namespace, "through", ("Succeeded",), 300)
    finally:
        operator.stop()
        stop_prometheus(prometheus)
