"""A task's duration: alone on an idle node (:func:`isolated_duration`), among similar tasks at a load held
constant (:func:`predicted_duration`), both closed forms; and :func:`run_alone`, which runs the fluid model.

Alone, a task's time is seed 002's static model (Gupta, Eq 3.1/3.2): it uses one resource after another,

    T = Ω + θn/βn + w + θc/κc + θd/κd

(start-up overhead Ω, network transfer, CPU work θc in reference-core seconds at capability κc, disk work θd
in reference-disk seconds at capability κd; the network term is zero for local input, where Eq 3.2 applies
exactly). ``w`` is time the task sleeps using nothing (a server's think time, a deliberate delay: seed 000's
URLGet and "WordCount + 10 ms delay"); a sleeping task is not runnable, so it adds nothing to the load average.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from mrsched.core.physics.fluid_model import NodeModel
from mrsched.core.physics.parameters import Fault, NodeCapability, TaskDemand


def isolated_duration(cap: NodeCapability, demand: TaskDemand) -> float:
    """Seed 002 Eq 3.2 (plus the network term): the task's time alone on an idle node, without noise; a task of
    several threads does its CPU work on min(threads, cores) cores, paying the over-subscription cost when it
    has more threads than the node has cores (as :class:`NodeModel` charges it)."""
    cpu_time = demand.cpu_s / (cap.cpu_rate * min(demand.threads, cap.cores))
    onset = cap.contention_onset * cap.cores
    if demand.threads > onset:
        cpu_time *= 1.0 + cap.cpu_contention * (demand.threads - onset) / cap.cores
    return (
        (cap.overhead_s if demand.startup else 0.0)
        + demand.network_mb / cap.network_mbps
        + demand.wait_s
        + cpu_time
        + demand.disk_s / cap.disk_rate
        + demand.transmit_mb / cap.network_mbps
    )


def predicted_duration(cap: NodeCapability, demand: TaskDemand, others: int) -> float:
    """Expected time of a task that joins ``others`` similar tasks on a node, no noise: the fluid model's
    sharing at that load held constant (CPU stretched by processor sharing and the over-subscription cost;
    disk by the streams expected in their disk phase at the same time, with seek thrashing). A task of t
    threads is t CPU consumers: alone it uses min(t, cores) cores, among k tasks its threads share the cores
    with the k·t of them."""
    k = others + 1
    t = demand.threads
    cpu_t, disk_t = demand.cpu_s / (cap.cpu_rate * min(t, cap.cores)), demand.disk_s / cap.disk_rate
    busy = cpu_t + disk_t
    threads = k * t
    cpu_stretch = (
        (min(t, cap.cores) / t)
        * max(1.0, threads / cap.cores)
        * (1.0 + cap.cpu_contention * max(0.0, threads - cap.contention_onset * cap.cores) / cap.cores)
    )
    streams = max(1.0, k * (disk_t / busy if busy else 0.0))
    disk_stretch = streams * (1.0 + cap.disk_contention * (streams - 1.0))
    # Start-up's CPU share shares the cores too (the tasks' start-ups overlap one another's CPU work).
    share = cap.overhead_cpu_share
    overhead = (cap.overhead_s if demand.startup else 0.0) * ((1.0 - share) + share * cpu_stretch)
    return (
        overhead
        + demand.network_mb / cap.network_mbps
        + demand.wait_s
        + cpu_t * cpu_stretch
        + disk_t * disk_stretch
        + demand.transmit_mb / cap.network_mbps
    )


def run_alone(cap: NodeCapability, demand: TaskDemand, *, faults: Iterable[Fault] = ()) -> float:
    """Duration of one task started at time 0 on an otherwise idle node, noise off (for tests and probes)."""
    model = NodeModel("probe", replace(cap, noise_sigma=0.0))
    for fault in faults:
        model.add_fault(fault)
    model.start("t", demand, 0.0)
    while model.running_ids:
        model.advance(model.next_event_s())
    (outcome,) = model.pop_finished()
    return outcome.duration_s
