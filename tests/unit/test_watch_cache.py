"""The operator's watch caches (watchcache.WatchedList): a paged list, then a watch from its resourceVersion;
bookmarks, 410 Gone, selectors' DELETED, and writes through that never go back in time."""

from __future__ import annotations

import json
import threading
from typing import Any

from mrsched.operator.watchcache import Memo, WatchedList


def pod(name: str, version: int, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "resourceVersion": str(version),
            "managedFields": [{"manager": "kubelet", "fieldsV1": {}}],
        },
        "labels": labels,
    }


class Response:
    def __init__(
        self, data: dict[str, Any] | None = None, events: list[dict[str, Any]] | None = None
    ) -> None:
        self.data = json.dumps(data).encode() if data is not None else b""
        self.status, self.reason = 200, "OK"
        self._events = events or []

    def stream(self, amt: Any = None, decode_content: Any = None) -> Any:
        for event in self._events:
            yield (json.dumps(event) + "\n").encode()

    def release_conn(self) -> None:
        pass


class FakeServer:
    """Answers the list call: pages while listing, then one scripted watch after another."""

    def __init__(self, pages: list[list[dict[str, Any]]], version: str, watches: list[list[dict[str, Any]]]):
        self.pages, self.version, self.watches = pages, version, watches
        self.calls: list[dict[str, Any]] = []
        self.done = threading.Event()

    def __call__(self, **kwargs: Any) -> Response:
        self.calls.append(kwargs)
        if kwargs.get("watch"):
            if not self.watches:
                self.done.set()
                threading.Event().wait(0.05)
                return Response(events=[])
            return Response(events=self.watches.pop(0))
        index = int(kwargs.get("_continue") or 0)
        more = index + 1 < len(self.pages)
        meta = {"resourceVersion": self.version, **({"continue": str(index + 1)} if more else {})}
        return Response({"metadata": meta, "items": self.pages[index]})


def run(server: FakeServer) -> WatchedList:
    cache = WatchedList("pods", server).start()
    assert server.done.wait(5)
    cache.stop()
    return cache


def names(cache: WatchedList) -> list[str]:
    return sorted(o["metadata"]["name"] for o in cache.items())


def test_a_paged_list_then_the_watch_from_its_version_with_bookmarks() -> None:
    server = FakeServer(
        [[pod("a", 5)], [pod("b", 6)]],
        "10",
        [
            [
                {"type": "ADDED", "object": pod("c", 11)},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                {"type": "MODIFIED", "object": pod("a", 16)},
                {"type": "DELETED", "object": pod("b", 17)},  # deleted, or no longer matching the selector
            ],
            [],
        ],
    )
    cache = run(server)
    assert names(cache) == ["a", "c"] and cache.synced
    assert all("managedFields" not in o["metadata"] for o in cache.items()), "dropped: nothing reads them"
    assert [c.get("_continue") for c in server.calls[:2]] == [None, "1"]
    watches = [c for c in server.calls if c.get("watch")]
    assert watches[0]["resource_version"] == "10" and watches[0]["allow_watch_bookmarks"]
    assert watches[1]["resource_version"] == "17", "resumed from the last version seen, not listed again"
    assert cache.lists == 1


def test_410_gone_lists_again() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    server = FakeServer([[pod("a", 5)]], "10", [[gone], []])
    server_pages_after = [[pod("z", 30)]]

    def relisting(**kwargs: Any) -> Response:
        if not kwargs.get("watch") and server.calls:
            server.pages = server_pages_after
        return server(**kwargs)

    cache = WatchedList("pods", relisting).start()
    assert server.done.wait(5)
    cache.stop()
    assert cache.lists == 2 and names(cache) == ["z"]


def test_a_write_through_is_kept_until_a_newer_event_and_never_revives_a_deleted_object() -> None:
    server = FakeServer([[pod("a", 5)]], "10", [])
    cache = run(server)
    cache.apply(pod("a", 20))  # our status patch's answer
    cache._put(pod("a", 12))  # an older watch event arriving after it
    assert cache.items()[0]["metadata"]["resourceVersion"] == "20"
    cache._put(pod("a", 21))
    assert cache.items()[0]["metadata"]["resourceVersion"] == "21"
    cache._remove(pod("a", 25))
    cache.apply(pod("a", 22))  # a late answer to a write made before the deletion
    assert names(cache) == []
    cache.apply(pod("a", 30))  # created again since
    assert names(cache) == ["a"]
    cache.apply({"kind": "Status", "metadata": {}})  # a delete's answer when the object went at once
    assert names(cache) == ["a"]


def test_a_memo_derives_again_only_when_the_object_changes_and_forgets_what_is_gone() -> None:
    calls: list[str] = []
    memo = Memo(lambda o: calls.append(o["metadata"]["name"]) or o["metadata"]["resourceVersion"])
    assert memo(pod("a", 1)) == "1" and memo(pod("a", 1)) == "1" and calls == ["a"]
    assert memo(pod("a", 2)) == "2" and calls == ["a", "a"]
    memo(pod("b", 1))
    memo.sweep()
    assert len(memo) == 2
    memo(pod("b", 1))
    memo.sweep()  # a was not asked for since the last sweep: gone
    assert len(memo) == 1 and calls == ["a", "a", "b"]
    unversioned = {"metadata": {"name": "x", "resourceVersion": ""}}
    memo(unversioned), memo(unversioned)
    assert calls[-2:] == ["x", "x"], "without a uid and version nothing is memoised"
