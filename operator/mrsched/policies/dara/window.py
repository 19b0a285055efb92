"""DARA's sliding window of observations (seed 002 §4.2.3: the least squares refitted online) kept as arrays, so
that a refit reads the window's columns instead of rebuilding them from every observation (on a whole
SWIM day DARA refits about 7,000 times, once per arriving job, over 3,000 observations each)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mrsched.policies.dara.model import Columns, Observation, Profile, load_terms


class FitWindow:
    """The last ``capacity`` observations, oldest first, as a ring of arrays: each one's duration, total
    container count and, once every application of its mix has a profile (a profile is set once and never
    changes), its Eq 4.12 load terms. Those still waiting for a neighbour's profile are looked at again at
    each :meth:`sync`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._clear()

    def _clear(self) -> None:
        capacity = self.capacity
        self._objects: list[Observation | None] = [None] * capacity
        self._duration = np.zeros(capacity)
        self._total = np.zeros(capacity)
        self._cpu = np.zeros(capacity)
        self._io = np.zeros(capacity)
        self._resolved = np.zeros(capacity, dtype=bool)
        self._app = np.zeros(capacity, dtype=np.intp)
        self._class = np.zeros(capacity, dtype=np.intp)
        self._app_names: list[str] = []
        self._app_ids: dict[str, int] = {}
        self._class_names: list[str] = []
        self._class_ids: dict[str, int] = {}
        self._start = 0
        self._size = 0
        self._waiting: set[int] = set()  # slots whose load terms wait for a profile

    def __len__(self) -> int:
        return self._size

    def _slots(self) -> np.ndarray:
        return (self._start + np.arange(self._size)) % self.capacity

    def append(self, observation: Observation, profiles: dict[str, Profile]) -> None:
        if self._size < self.capacity:
            slot = (self._start + self._size) % self.capacity
            self._size += 1
        else:  # the oldest leaves
            slot = self._start
            self._start = (self._start + 1) % self.capacity
        self._objects[slot] = observation
        self._duration[slot] = observation.duration_s
        self._total[slot] = sum(observation.mix.values())
        self._app[slot] = _intern(observation.app, self._app_ids, self._app_names)
        self._class[slot] = _intern(observation.node_class, self._class_ids, self._class_names)
        self._resolved[slot] = False
        self._waiting.add(slot)
        self._resolve(slot, profiles)

    def _resolve(self, slot: int, profiles: dict[str, Profile]) -> None:
        observation = self._objects[slot]
        assert observation is not None
        terms = load_terms(observation, profiles)
        if terms is not None:
            self._cpu[slot], self._io[slot] = terms
            self._resolved[slot] = True
            self._waiting.discard(slot)

    def sync(self, observations: Sequence[Observation], profiles: dict[str, Profile]) -> None:
        """Make the window hold ``observations`` (the policy appends to both, so they agree unless the deque was
        changed behind the window's back, when it is rebuilt), and look again at those waiting for a profile."""
        n = len(observations)
        aligned = n == self._size and (
            n == 0
            or (
                self._objects[self._start] is observations[0]
                and self._objects[(self._start + n - 1) % self.capacity] is observations[-1]
            )
        )
        if not aligned:
            self._clear()
            for observation in list(observations)[-self.capacity :]:
                self.append(observation, profiles)
            return
        for slot in sorted(self._waiting):
            self._resolve(slot, profiles)

    def columns(self) -> Columns | None:
        """:func:`model.columns_of` of the window: the same rows, in the same order, the same floats."""
        slots = self._slots()
        slots = slots[self._resolved[slots] & (self._duration[slots] > 0)]
        if len(slots) == 0:
            return None
        apps, group = _ranked(self._app[slots], self._app_names)
        classes, row_class = _ranked(self._class[slots], self._class_names)
        return Columns(
            apps, group, classes, row_class, self._duration[slots], self._cpu[slots], self._io[slots]
        )

    def class_loads(self, node_class: str) -> np.ndarray:
        """The total container count of every observation of ``node_class`` in the window, oldest first."""
        slots = self._slots()
        cid = self._class_ids.get(node_class)
        if cid is None:
            return np.zeros(0)
        return np.asarray(self._total[slots[self._class[slots] == cid]])


def _intern(name: str, ids: dict[str, int], names: list[str]) -> int:
    found = ids.get(name)
    if found is None:
        found = ids[name] = len(names)
        names.append(name)
    return found


def _ranked(ids: np.ndarray, names: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct names among ``ids``, sorted, and each id's index in that list."""
    present = np.unique(ids)
    ordered = sorted((names[i], i) for i in present.tolist())
    rank = np.empty(len(names), dtype=np.intp)
    rank[[i for _, i in ordered]] = np.arange(len(ordered))
    return [name for name, _ in ordered], rank[ids]
