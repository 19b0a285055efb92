"""The operator's garbage-collector settings: fewer, cheaper cyclic collections over its large, acyclic heap.

The operator holds every task pod, node and job of its watch caches as plain dicts and lists (10,000 pods are
a few million objects). Their memory goes back by reference counting the moment they are replaced; the cyclic
collector finds nothing among them, yet CPython's defaults (a young collection every 700 net allocations, a
full one each time the heap grew by a quarter) walk them again and again while a round creates thousands of
pod manifests. Measured over the loop and an in-memory API server (tests/unit/operator/test_loop_incremental.py's),
1,000 nodes and 200 jobs of 50 maps, fifo (the scale benchmark's work), two runs each: with the defaults 17
full collections while placing 10,000 pods and the loop's CPU 2.00-2.08 ms per pod placed; with these
settings one (``tune_gc``'s own) and 1.53 ms.
"""

from __future__ import annotations

import gc

#: Net container allocations between young collections (CPython's default: 700). Each young collection walks
#: only what was allocated since the last: 50,000 objects, a millisecond or two.
YOUNG_THRESHOLD = 50_000
#: Young collections per middle one (default 10), and middle ones per full one (default 10; CPython also waits
#: until the heap grew by a quarter since the last full one).
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 10


def tune_gc() -> None:
    """Set the thresholds, and move what exists now (modules, the Kubernetes client's classes, the settings)
    out of the collector's sight for good (``gc.freeze``): it lives as long as the process. Called once, when
    the operator starts (``mrsched run``)."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
    gc.collect()
    gc.freeze()
