"""Informer-style caches: list once, then watch from that resourceVersion, so that a scheduling round reads memory,
not the API server (client-go's reflector and store, on plain JSON dicts).

Each :class:`WatchedList` lists its objects in pages (a 10,000-pod list is about 60 MB in one response), then
watches from the list's resourceVersion with bookmarks, applying ADDED, MODIFIED and DELETED in a thread of its
own; a watch the server ends is resumed from the last resourceVersion seen, and one it has compacted away
(410 Gone) is replaced by a fresh list. With a label or field selector the server sends only what matches, and
an object that stops matching arrives as DELETED.

The operator writes through: a pod it created, a status it patched, is put into the cache from the API server's
answer, so that the next round sees its own writes even before their watch events arrive (the job status holds
the attempt record, and reading an older one could reuse an attempt number). An event older than what the cache
holds is ignored: resourceVersions are opaque to clients, but every etcd-backed API server issues them as
increasing integers, and only those are compared.

Why not ``kubernetes.watch.Watch``: with ``deserialize=False`` (the raw dicts, without building a model object
per event, which costs more than the rest of the round) its 410 handling reads a key it never set, and it stops
tracking the resourceVersion; the loop here is the reflector's few lines.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from mrsched.operator.kube.kubeclient import REQUEST_TIMEOUT_S, _json

log = logging.getLogger("mrsched.operator.kube.watchcache")

#: Objects per page of the initial list.
PAGE = 500
#: The server ends each watch after about this long (it jitters it); the watch is then resumed.
WATCH_TIMEOUT_S = 300
#: Deleted objects remembered (a write's answer is at most a request's time late).
TOMBSTONES = 20_000
#: Waits between attempts when a list or watch fails for another reason than 410 (doubling, capped).
RETRY_S = (0.5, 10.0)

ListCall = Callable[..., Any]
T = TypeVar("T")


def object_key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _newer_or_unknown(new: str, old: str) -> bool:
    """False only when both resourceVersions are integers and ``new`` is older than ``old``."""
    try:
        return int(new) >= int(old)
    except ValueError:
        return True


class WatchedList:
    """The objects one list call returns, kept current by a watch. ``call`` is a kubernetes client list method
    with its arguments bound (namespace, selectors); it is called with ``watch``, ``resource_version`` and the
    paging arguments. ``on_change`` runs (in the watch thread) after every change, e.g. to wake the loop.

    ``group_by`` (an object's group, e.g. its job's uid label) keeps the objects indexed by group, each group
    with a version that changes whenever one of its objects does (:meth:`groups`): a round asks which groups
    changed instead of reading every object. :attr:`changes` counts every change to the store. ``transform``
    slims each object on its way in (client-go's informers' transform functions): the cache keeps only what its
    readers read."""

    def __init__(
        self,
        name: str,
        call: ListCall,
        on_change: Callable[[], None] = lambda: None,
        group_by: Callable[[dict[str, Any]], str] | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.name = name
        self._transform = transform
        self._call = call
        self._on_change = on_change
        self._group_by = group_by
        self._lock = threading.Lock()
        self._store: dict[str, dict[str, Any]] = {}
        self._groups: dict[str, dict[str, dict[str, Any]]] = {}
        #: group -> the value of ``changes`` when one of its objects last changed
        self._group_versions: dict[str, int] = {}
        self.changes = 0
        #: Recently deleted objects' last resourceVersions, so that a late write-through cannot revive one.
        self._deleted: dict[str, str] = {}
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)
        #: Counters for /metrics and the benchmark: lists made (1 + one per 410), events applied.
        self.lists = 0
        self.events = 0

    # reading ------------------------------------------------------------------------------------------------

    def items(self) -> list[dict[str, Any]]:
        """The objects as last seen (the dicts themselves: callers must not change them)."""
        with self._lock:
            return list(self._store.values())

    def __len__(self) -> int:
        return len(self._store)

    def groups(self) -> dict[str, tuple[int, list[dict[str, Any]]]]:
        """With ``group_by``: each group's version and objects. Equal versions in two calls: the same objects."""
        with self._lock:
            return {g: (self._group_versions[g], list(objs.values())) for g, objs in self._groups.items()}

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout_s: float) -> bool:
        return self._synced.wait(timeout_s)

    # writing through ----------------------------------------------------------------------------------------

    def apply(self, obj: dict[str, Any]) -> None:
        """Put the API server's answer to one of our writes into the cache (unless the cache holds a newer
        version already)."""
        if not obj.get("metadata", {}).get("name") or obj.get("kind") == "Status":
            return
        self._put(obj)

    def _put(self, obj: dict[str, Any]) -> bool:
        obj = self._slim(obj)
        key = object_key(obj)
        version = obj["metadata"].get("resourceVersion", "")
        with self._lock:
            held = self._store.get(key)
            if held is not None:
                held_version = held["metadata"].get("resourceVersion", "")
                if (version and version == held_version) or not _newer_or_unknown(version, held_version):
                    return False  # older, or the watch's echo of our own write: nothing changed
            gone = self._deleted.get(key)
            if held is None and gone is not None and not _newer_or_unknown(version, gone):
                return False  # our write's answer, arriving after the watch said the object was deleted
            self._store[key] = obj
            self._regroup(key, held, obj)
        return True

    def _remove(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        with self._lock:
            self._regroup(key, self._store.pop(key, None), None)
            self._deleted[key] = obj["metadata"].get("resourceVersion", "")
            while len(self._deleted) > TOMBSTONES:
                del self._deleted[next(iter(self._deleted))]  # the oldest

    def _slim(self, obj: dict[str, Any]) -> dict[str, Any]:
        # managedFields (server-side apply's per-field ownership) are a third or more of a pod's JSON and nothing
        # here reads them: dropped on the way in, as client-go's informers' transform functions do.
        obj["metadata"].pop("managedFields", None)
        return self._transform(obj) if self._transform is not None else obj

    def _regroup(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Under the lock: one object replaced (``old`` -> ``new``, either None); its groups' versions bumped."""
        self.changes += 1
        if self._group_by is None:
            return
        for obj in (old, new):
            if obj is None:
                continue
            group = self._group_by(obj)
            self._group_versions[group] = self.changes
            members = self._groups.setdefault(group, {})
            if obj is new:
                members[key] = obj
            else:
                members.pop(key, None)
                if not members:
                    del self._groups[group]
                    del self._group_versions[group]

    def _index(self, store: dict[str, dict[str, Any]]) -> None:
        """Under the lock: a fresh list replaces the store; every group gets a new version."""
        self._store = store
        self.changes += 1
        self._groups, self._group_versions = {}, {}
        if self._group_by is None:
            return
        for key, obj in store.items():
            group = self._group_by(obj)
            self._groups.setdefault(group, {})[key] = obj
            self._group_versions[group] = self.changes

    # the reflector ------------------------------------------------------------------------------------------

    def start(self) -> WatchedList:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the current watch: the thread is a daemon, and the server ends every watch within
        ``WATCH_TIMEOUT_S`` (closing the response from this thread would block on the reader's lock)."""
        self._stop.set()

    def _run(self) -> None:
        version: str | None = None
        wait = RETRY_S[0]
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                version = self._watch(version)
                wait = RETRY_S[0]
            except ApiException as err:
                if err.status == 410:  # compacted: list again
                    version = None
                    continue
                log.warning("watch %s: %s %s; retrying in %.1f s", self.name, err.status, err.reason, wait)
                self._stop.wait(wait)
                wait = min(RETRY_S[1], wait * 2)
            except Exception as err:  # connection reset, timeout: resume from the last version seen
                if self._stop.is_set():
                    return
                log.warning("watch %s: %s; retrying in %.1f s", self.name, err, wait)
                self._stop.wait(wait)
                wait = min(RETRY_S[1], wait * 2)

    def _list(self) -> str:
        store: dict[str, dict[str, Any]] = {}
        token: str | None = None
        version = ""
        while True:
            page = _json(
                self._call(
                    limit=PAGE,
                    _continue=token,
                    _request_timeout=REQUEST_TIMEOUT_S,
                    _preload_content=False,
                )
            )
            meta = page.get("metadata") or {}
            version = version or meta.get("resourceVersion", "")  # every page is of the first page's snapshot
            for obj in page.get("items") or []:
                store[object_key(obj)] = self._slim(obj)
            token = meta.get("continue")
            if not token:
                break
        with self._lock:
            self._index(store)
        self.lists += 1
        self._synced.set()
        self._on_change()
        return version

    def _watch(self, version: str) -> str:
        resp = self._call(
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_S,
            _request_timeout=(REQUEST_TIMEOUT_S, WATCH_TIMEOUT_S + 30),
            _preload_content=False,
        )
        try:
            if not 200 <= resp.status <= 299:
                raise ApiException(status=resp.status, reason=resp.reason)
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    break
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    raise ApiException(status=obj.get("code"), reason=obj.get("message", ""))
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self._remove(obj)
                elif not self._put(obj):
                    continue
                self.events += 1
                self._on_change()
        finally:
            resp.release_conn()
        return version


class Memo(Generic[T]):
    """What was derived from each object (a parsed pod, a node's capacity), computed again only when the
    object's resourceVersion changes: a round over 10,000 cached pods parses the few that changed. Entries
    not asked for between two :meth:`sweep` calls (objects gone from the cluster) are dropped then."""

    def __init__(self, derive: Callable[[dict[str, Any]], T]) -> None:
        self._derive = derive
        #: uid -> (resourceVersion, value, the sweep generation that last asked for it)
        self._values: dict[str, tuple[str, T, int]] = {}
        self._generation = 0

    def __call__(self, obj: dict[str, Any]) -> T:
        meta = obj["metadata"]
        key = meta.get("uid")
        version = meta.get("resourceVersion")
        if not key or not version:  # not from the API server (tests' objects): nothing to key on
            return self._derive(obj)
        held = self._values.get(key)
        if held is not None and held[0] == version:
            if held[2] != self._generation:
                self._values[key] = (version, held[1], self._generation)
            return held[1]
        value = self._derive(obj)
        self._values[key] = (version, value, self._generation)
        return value

    def sweep(self) -> None:
        now = self._generation
        self._values = {k: v for k, v in self._values.items() if v[2] == now}
        self._generation += 1

    def __len__(self) -> int:
        return len(self._values)


def wait_all_synced(lists: Iterable[WatchedList], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    return all(w.wait_synced(max(0.0, deadline - time.monotonic())) for w in lists)
