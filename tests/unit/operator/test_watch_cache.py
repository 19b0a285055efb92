"""The operator's watch caches (watchcache.WatchedList): a paged list, then a watch from its resourceVersion;
bookmarks, 410 Gone, selectors' DELETED, and writes through that never go back in time."""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

from mrsched.core.model import Explanation
from mrsched.operator.kube.informers import slim_pod
from mrsched.operator.kube.watchcache import Memo, WatchedList
from mrsched.operator.model.config import OperatorConfig
from mrsched.operator.model.jobspec import JobSpec
from mrsched.operator.model.pods import TRACKING_FINALIZER, read_attempt, task_pod
from mrsched.operator.model.snapshot import pod_request
from mrsched.operator.model.tracking import tracked
from mrsched.operator.scheduling.canary import busy_nodes


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


def test_groups_change_version_only_when_one_of_their_objects_does() -> None:
    server = FakeServer([[pod("a1", 5, job="a"), pod("a2", 6, job="a"), pod("b1", 7, job="b")]], "10", [])
    cache = WatchedList("pods", server, group_by=lambda o: o["labels"]["job"]).start()
    assert server.done.wait(5)
    cache.stop()

    def members(groups: dict[str, tuple[int, list[dict[str, Any]]]]) -> dict[str, list[str]]:
        return {g: sorted(o["metadata"]["name"] for o in objs) for g, (_, objs) in groups.items()}

    before = cache.groups()
    assert members(before) == {"a": ["a1", "a2"], "b": ["b1"]}
    cache._put(pod("a1", 5, job="a"))  # the same version again: no change
    cache._put(pod("b1", 11, job="b"))
    after = cache.groups()
    assert after["a"][0] == before["a"][0], "a's pods did not change"
    assert after["b"][0] != before["b"][0]
    cache._remove(pod("a2", 12, job="a"))
    cache._put(pod("c1", 13, job="c"))
    last = cache.groups()
    assert members(last) == {"a": ["a1"], "b": ["b1"], "c": ["c1"]}
    assert last["a"][0] != after["a"][0] and last["b"][0] == after["b"][0]
    cache._remove(pod("a1", 14, job="a"))
    assert "a" not in cache.groups(), "a group with no objects is gone"
    changes = cache.changes
    cache._put(pod("b1", 9, job="b"))  # older than held: ignored
    assert cache.changes == changes


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


def test_a_slimmed_task_pod_reads_as_the_whole_pod_does() -> None:
    """The cache keeps of a pod only what a round reads (informers.slim_pod): every reader gets the same answer
    from the slim pod as from the whole one, and the slim one is a fraction of its size."""
    job = JobSpec.from_resource(
        {
            "metadata": {"name": "wc", "namespace": "team-a", "uid": "u1"},
            "spec": {"workload": {"app": "wordcount"}, "input": {"paths": ["in"]}, "output": {"path": "out"}},
        }
    )
    whole = task_pod(
        job, "map", 3, 1, OperatorConfig(), node="n1", explanation=Explanation("fifo", 1.0, "why")
    )
    whole["metadata"].update(
        uid="p1",
        resourceVersion="7",
        creationTimestamp="2026-01-01T00:00:00Z",
        finalizers=[TRACKING_FINALIZER],
    )
    report = '{"wall_s": 2.5, "written_bytes": 1024}'
    whole["status"] = {
        "phase": "Failed",
        "startTime": "2026-01-01T00:00:01Z",
        "conditions": [{"type": "DisruptionTarget", "status": "True"}],
        "containerStatuses": [
            {
                "name": "task",
                "state": {
                    "terminated": {
                        "exitCode": 143,
                        "reason": "Error",
                        "message": report,
                        "startedAt": "2026-01-01T00:00:02Z",
                        "finishedAt": "2026-01-01T00:00:09Z",
                    }
                },
            }
        ],
    }
    slim = slim_pod(copy.deepcopy(whole))
    assert read_attempt(slim) == read_attempt(whole) and read_attempt(whole) is not None
    assert pod_request(slim) == pod_request(whole) is None, "finished: it holds nothing"
    for pod in (whole, slim):
        pod["status"]["phase"] = "Running"
    assert pod_request(slim) == pod_request(whole) and pod_request(whole) is not None
    assert tracked(slim) == tracked(whole) == 0
    assert busy_nodes([slim]) == busy_nodes([whole])
    assert len(json.dumps(slim)) < len(json.dumps(whole)) / 2, (len(json.dumps(slim)), len(json.dumps(whole)))
