"""Leader election that fences (issue 20, defect 5), on an in-memory Lease with the apiserver's optimistic
concurrency and hand-driven clocks: expiry judged on the observer's own clock, a leader that cannot renew stops
writing before any standby may start, writes refused once leadership lapses, and a release hands over at once.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mrsched.operator.kube.leader import FencedApi, LeaderLease, LeadershipLost


class LeaseStore:
    """One Lease object with a resourceVersion, as the apiserver keeps it; ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("apiserver unreachable")

    def read_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._check()
        return copy.deepcopy(self.lease)

    def create_lease(self, namespace: str, body: dict[str, Any]) -> bool:
        self._check()
        if self.lease is not None:
            return False
        self.version += 1
        self.lease = {
            **copy.deepcopy(body),
            "metadata": {**body["metadata"], "resourceVersion": str(self.version)},
        }
        return True

    def replace_lease(self, namespace: str, name: str, lease: dict[str, Any]) -> bool:
        self._check()
        assert self.lease is not None
        if lease["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            return False
        self.version += 1
        self.lease = copy.deepcopy(lease)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return True

    def create_pod(self, pod: dict[str, Any]) -> bool:
        self._check()
        return True

    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"].get("holderIdentity")


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def candidate(store: LeaseStore, name: str, clock: Clock) -> LeaderLease:
    return LeaderLease(store, "ns", "mrsched-leader", name, clock=clock)  # type: ignore[arg-type]


def test_a_standby_takes_over_only_after_a_whole_lease_without_change_on_its_own_clock() -> None:
    store = LeaseStore()
    a_clock, b_clock = (
        Clock(100.0),
        Clock(9_000_000.0),
    )  # two machines' monotonic clocks have nothing in common
    a, b = candidate(store, "a", a_clock), candidate(store, "b", b_clock)
    assert a.try_acquire_or_renew() and a.leading()
    for _ in range(30):  # a renews every 2 s for a minute: b never leads, whatever renewTime says
        a_clock.now += 2
        b_clock.now += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew() and not b.leading()
    # a stops renewing (paused, partitioned); b last saw the record change at its last try, 0 on this scale.
    b_clock.now += 2
    assert not b.try_acquire_or_renew()
    b_clock.now += 12.9
    assert not b.try_acquire_or_renew(), "not before a whole lease since b saw the last change"
    b_clock.now += 0.2
    assert b.try_acquire_or_renew() and store.holder() == "b"


def test_renew_time_from_a_skewed_clock_does_not_expire_the_lease() -> None:
    # The old election compared the holder's renewTime with the standby's wall clock: a standby a minute ahead
    # found every lease expired. Here the holder's renewTime is written a day in the past.
    store = LeaseStore()
    clock = Clock(0.0)
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    assert a.try_acquire_or_renew()
    assert store.lease is not None
    store.lease["spec"]["renewTime"] = "2026-11-25T00:00:00.000001Z"
    assert not b.try_acquire_or_renew()
    clock.now += 5
    assert not b.try_acquire_or_renew()


def test_a_leader_that_cannot_renew_stops_writing_before_a_standby_may_start() -> None:
    store = LeaseStore()
    a_clock, b_clock = Clock(0.0), Clock(0.0)
    a, b = candidate(store, "a", a_clock), candidate(store, "b", b_clock)
    api = FencedApi(store, a.check)  # type: ignore[arg-type]
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b has seen a's last renewal, sent at 0
    store.down = True  # a is cut off from the apiserver; b is not
    stopped_at = None
    for step in range(1, 200):
        a_clock.now = b_clock.now = step * 0.1
        with pytest.raises(ConnectionError):
            a.try_acquire_or_renew()
        if stopped_at is None and not a.leading():
            stopped_at = a_clock.now
    assert stopped_at is not None and stopped_at <= 10.0 + 1e-9, "renew deadline"
    with pytest.raises(LeadershipLost):
        api.create_pod({"metadata": {"name": "p"}})
    store.down = False
    assert store.lease is not None
    b_clock.now = 14.9
    assert not b.try_acquire_or_renew(), "b waits a whole lease after a's last renewal"
    b_clock.now = 15.1
    assert b.try_acquire_or_renew()
    assert stopped_at + 5 <= 15.1, "a stopped at least lease - renew deadline before b started"


def test_reads_pass_the_fence_and_a_release_hands_over_at_once() -> None:
    store = LeaseStore()
    clock = Clock(0.0)
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    fenced = FencedApi(store, a.check)  # type: ignore[arg-type]
    with pytest.raises(LeadershipLost):
        fenced.replace_lease("ns", "x", {})  # any write, before leading
    assert fenced.read_lease("ns", "mrsched-leader") is None, "reads pass the fence"
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release() and not a.leading()
    assert store.holder() is None
    assert b.try_acquire_or_renew(), "no holder: free at once"


def test_the_durations_must_nest() -> None:
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderLease(LeaseStore(), "ns", "l", "a", lease_s=10, renew_deadline_s=10)  # type: ignore[arg-type]
