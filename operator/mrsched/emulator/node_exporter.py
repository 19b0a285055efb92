"""Node metrics with node_exporter's names and semantics, one set per emulated node, labelled ``node``.

A real cluster runs node_exporter on every node and Prometheus relabels its series with the node's name; the
emulator exports the same series for all its nodes from one endpoint, each carrying ``node="<name>"``:

* ``node_cpu_seconds_total{cpu, mode}``: counters per core, modes ``user``, ``system``, ``iowait``, ``idle``;
* ``node_load1``, ``node_load5``, ``node_load15``: exponentially damped averages of runnable threads sampled
  every 5 s, as the Linux kernel computes them;
* ``node_memory_MemTotal_bytes``, ``node_memory_MemAvailable_bytes``;
* ``node_disk_read_bytes_total``, ``node_disk_written_bytes_total`` (``device="sda"``);
* ``node_network_receive_bytes_total``, ``node_network_transmit_bytes_total`` (``device="eth0"``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mrsched.core.node_metrics import LOAD_SAMPLE_S, LOAD_WINDOWS_S, LoadAverage
from mrsched.emulator.runners import NodeUsage

__all__ = ["LOAD_SAMPLE_S", "LoadAverage", "NodeInfo", "NodeMetricsCollector"]

_LOAD_SERIES = {"node_load1": "load1", "node_load5": "load5", "node_load15": "load15"}
_USER_SHARE = 0.9  # busy CPU time split between user and system mode


@dataclass
class NodeInfo:
    name: str
    cores: int
    memory_bytes: float


class NodeMetricsCollector(Collector):
    """Collects node_exporter-style series for every live node from the runner's usage counters."""

    def __init__(
        self,
        nodes: Callable[[], list[NodeInfo]],
        usage: Callable[[str], NodeUsage],
        started: float | None = None,
    ) -> None:
        self._nodes = nodes
        self._usage = usage
        self._started = time.monotonic() if started is None else started
        self._loads: dict[str, LoadAverage] = {}
        self._idle: dict[str, float] = {}
        self._lock = threading.Lock()

    def sample_load(self) -> None:
        """Called every LOAD_SAMPLE_S seconds by the emulator."""
        with self._lock:
            live = {n.name for n in self._nodes()}
            for gone in set(self._loads) - live:
                del self._loads[gone]
            for name in live:
                self._loads.setdefault(name, LoadAverage()).sample(self._usage(name).runnable)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        cpu = CounterMetricFamily(
            "node_cpu_seconds_total", "Seconds the CPUs spent in each mode.", labels=["node", "cpu", "mode"]
        )
        loads = {
            k: GaugeMetricFamily(k, f"{int(LOAD_WINDOWS_S[w] // 60)}m load average.", labels=["node"])
            for k, w in _LOAD_SERIES.items()
        }
        mem_total = GaugeMetricFamily(
            "node_memory_MemTotal_bytes", "Memory information field MemTotal_bytes.", labels=["node"]
        )
        mem_avail = GaugeMetricFamily(
            "node_memory_MemAvailable_bytes", "Memory information field MemAvailable_bytes.", labels=["node"]
        )
        disk_read = CounterMetricFamily(
            "node_disk_read_bytes_total",
            "The total number of bytes read successfully.",
            labels=["node", "device"],
        )
        disk_written = CounterMetricFamily(
            "node_disk_written_bytes_total",
            "The total number of bytes written successfully.",
            labels=["node", "device"],
        )
        net_rx = CounterMetricFamily(
            "node_network_receive_bytes_total",
            "Network device statistic receive_bytes.",
            labels=["node", "device"],
        )
        net_tx = CounterMetricFamily(
            "node_network_transmit_bytes_total",
            "Network device statistic transmit_bytes.",
            labels=["node", "device"],
        )
        elapsed = time.monotonic() - self._started
        with self._lock:
            for node in self._nodes():
                usage = self._usage(node.name)
                # Spread busy and iowait time evenly over the cores; idle is what is left of wall time.
                per_core_busy = usage.cpu_busy_s / node.cores
                per_core_iowait = usage.cpu_iowait_s / node.cores
                # A counter never goes down, even when processes used more CPU than the node's cores.
                idle = max(self._idle.get(node.name, 0.0), elapsed - per_core_busy - per_core_iowait)
                self._idle[node.name] = idle
                for core in range(node.cores):
                    labels = [node.name, str(core)]
                    cpu.add_metric([*labels, "user"], per_core_busy * _USER_SHARE)
                    cpu.add_metric([*labels, "system"], per_core_busy * (1 - _USER_SHARE))
                    cpu.add_metric([*labels, "iowait"], per_core_iowait)
                    cpu.add_metric([*labels, "idle"], idle)
                load = self._loads.get(node.name)
                for key, family in loads.items():
                    family.add_metric([node.name], load.values[_LOAD_SERIES[key]] if load else 0.0)
                mem_total.add_metric([node.name], node.memory_bytes)
                mem_avail.add_metric([node.name], max(0.0, node.memory_bytes - usage.memory_used_bytes))
                disk_read.add_metric([node.name, "sda"], usage.disk_read_bytes)
                disk_written.add_metric([node.name, "sda"], usage.disk_written_bytes)
                net_rx.add_metric([node.name, "eth0"], usage.network_receive_bytes)
                net_tx.add_metric([node.name, "eth0"], usage.network_transmit_bytes)
        yield cpu
        yield from loads.values()
        yield from (mem_total, mem_avail, disk_read, disk_written, net_rx, net_tx)
