"""The simulator's Prometheus: node metrics from the physics models, scraped with a lag, into the same
:class:`~mrsched.core.node_metrics.MetricsTracker` the operator fills from the real Prometheus.

What it models, per node, as node_exporter and Prometheus would report it:

* ``load1``: the kernel's damped 1-minute load average of runnable threads, sampled every 5 s
  (:class:`~mrsched.core.node_metrics.LoadAverage`; seed 000 relies on its lag, digest dhok-varma A10);
* ``cpu_utilisation``, ``disk_bytes_per_s``, ``network_bytes_per_s``: ``rate()`` of the node's cumulative
  counters over ``rateWindowS``, as of the latest scrape;
* ``memory_available_mb``: memory minus what the running tasks use, as of the latest scrape.

A policy sees each node as of its latest scrape (every ``scrapeS``): its metrics are up to one scrape interval
late, as on a live cluster. During an outage (``outages``) nothing is scraped and every read answers
``unavailable``; afterwards a node reads as of its last sample (``stale`` once that is older than ``maxAgeS``)
until its next scrape, and rates need two scrapes inside their window again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from mrsched.core.model import Node, NodeMetrics
from mrsched.core.node_metrics import LoadAverage, MetricsTracker, Sample
from mrsched.core.physics import NodeModel
from mrsched.simulator.scenario import MetricsSpec


class SimulatedMetrics:
    def __init__(self, spec: MetricsSpec, nodes: Mapping[str, Node], models: Mapping[str, NodeModel]) -> None:
        self.spec = spec
        self.nodes = nodes
        self.models = models
        self.tracker = MetricsTracker(spec.max_age_s)
        self.loads = {name: LoadAverage() for name in nodes}
        # Per node: (time, cpu busy s, disk bytes, network bytes) at each scrape within the rate window.
        self._history: dict[str, deque[tuple[float, float, float, float]]] = {n: deque() for n in nodes}
        #: Every scrape's load1/cores and CPU utilisation per node, for reports: node -> [(t, ratio, util)].
        self.trace: dict[str, list[tuple[float, float, float | None]]] = {n: [] for n in nodes}

    def down(self, now: float) -> bool:
        outages = self.spec.outages
        return bool(outages) and any(o.start_s <= now < o.end_s for o in outages)

    def sample_load(self, now: float) -> None:
        """The kernel's 5-second run-queue sample on every node (the load average runs even when nothing
        scrapes it)."""
        for name, model in self.models.items():
            model.advance(max(model.now, now))
            self.loads[name].sample(model.runnable())

    def scrape(self, now: float) -> None:
        if self.down(now):
            return
        samples = {}
        for name, model in self.models.items():
            model.advance(max(model.now, now))
            c = model.counters
            disk = c.disk_read_bytes + c.disk_written_bytes
            net = c.network_receive_bytes + c.network_transmit_bytes
            history = self._history[name]
            history.append((now, c.cpu_busy_s, disk, net))
            # rate() uses the samples inside its window only: after an outage longer than the window there is
            # one, and no rate until the next scrape (Prometheus answers nothing for such a series).
            while history[0][0] < now - self.spec.rate_window_s - 1e-9:
                history.popleft()
            node = self.nodes[name]
            load1 = self.loads[name].values["load1"]
            values: dict[str, float | None] = {
                "load1": load1,
                "memory_available_mb": max(0.0, node.memory_mb - model.memory_used_mb()),
                "cpu_utilisation": None,
                "disk_bytes_per_s": None,
                "network_bytes_per_s": None,
            }
            first = history[0]
            span = now - first[0]
            if span > 0:  # rate() needs two samples
                values["cpu_utilisation"] = min(1.0, (c.cpu_busy_s - first[1]) / span / node.cores)
                values["disk_bytes_per_s"] = (disk - first[2]) / span
                values["network_bytes_per_s"] = (net - first[3]) / span
            samples[name] = Sample(now, values)
            self.trace[name].append((now, load1 / node.cores, values["cpu_utilisation"]))
        self.tracker.record(samples)

    def read(self, node: str, now: float) -> NodeMetrics:
        """What the policy reading Prometheus now sees for ``node``."""
        if self.down(now):
            self.tracker.source_down()
        else:
            self.tracker.source_up()
        return self.tracker.node(node, now)

    def thinned_trace(self, every_s: float = 30.0) -> dict[str, list[tuple[float, float, float | None]]]:
        """Each node's load1/cores and CPU utilisation as scraped, at most one point per ``every_s``."""
        out = {}
        for node, points in self.trace.items():
            kept: list[tuple[float, float, float | None]] = []
            for point in points:
                if not kept or point[0] - kept[-1][0] >= every_s:
                    kept.append(point)
            out[node] = kept
        return out
