"""Watches as a real API server serves them, taught to kmock's emulator.

kmock 0.8 (read from its source, kmock/_internal/k8s.py) lists with a constant
``resourceVersion: "..."``, stamps no version on objects, and serves every watch the same way:
all current objects as ADDED, then every later change, forever. It ignores ``resourceVersion``,
``timeoutSeconds`` and ``allowWatchBookmarks`` and never answers 410. `WatchingEmulator` adds
what a client that follows a cluster relies on:

- one revision counter for the cluster (as etcd's): every change gets the next one, stamped as
  ``metadata.resourceVersion`` on the object in its event and in lists; a LIST carries the
  current revision;
- a watch from ``resourceVersion=N`` replays the changes after N, then streams new ones (one from
  "" or "0" starts with the current objects as ADDED, as the real server does);
- ``timeoutSeconds`` ends the stream (with a BOOKMARK first when ``allowWatchBookmarks``);
- `compact` forgets the history: a watch from an older revision gets an ``ERROR`` event with a
  410 ``Expired`` Status, as after an etcd compaction;
- `drop_watch`: the next watch of a resource breaks its connection after some events.

kmock's own changes (creates, patches, deletes over HTTP) reach `record` through its event
buses; the test helpers of `EmulatedCluster` call `record` for the changes they make directly.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import attrs
import kmock

Event = dict[str, Any]


@dataclass
class WatchDrop:
    """The next watch of `resource` loses its connection after `after_events` events."""

    resource: kmock.resource
    after_events: int = 0


class _Recorder:
    """Stands in for kmock's event bus of one resource: its events go to `record`."""

    def __init__(self, emulator: WatchingEmulator, resource: kmock.resource) -> None:
        self.emulator = emulator
        self.resource = resource

    async def put(self, event: Event) -> None:
        self.emulator.record(self.resource, event["type"], event["object"])


class _Recorders(dict[kmock.resource, _Recorder]):
    def __init__(self, emulator: WatchingEmulator) -> None:
        super().__init__()
        self.emulator = emulator

    def __missing__(self, resource: kmock.resource) -> _Recorder:
        recorder = self[resource] = _Recorder(self.emulator, resource)
        return recorder


@attrs.define(kw_only=True)
class WatchingEmulator(kmock.KubernetesEmulator):
    """kmock's emulator with revisions, resumable watches, timeouts and 410 (module docstring)."""

    revision: int = 0
    compacted: int = 0  # watches from a revision below this get 410 Expired
    history: dict[kmock.resource, list[tuple[int, Event]]] = attrs.field(factory=dict)
    versions: dict[tuple[Any, Any, Any], int] = attrs.field(factory=dict)
    drops: list[WatchDrop] = attrs.field(factory=list)
    watches_served: int = 0
    _changed: asyncio.Event = attrs.field(factory=asyncio.Event)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._buses = _Recorders(self)

    def record(self, resource: kmock.resource, kind: str, raw: dict[str, Any]) -> None:
        """One change of an object: the next revision, kept in the resource's history."""
        self.revision += 1
        metadata = raw.get("metadata") or {}
        key = (resource, metadata.get("namespace"), metadata.get("name"))
        if kind == "DELETED":
            self.versions.pop(key, None)
        else:
            self.versions[key] = self.revision
        event = {"type": kind, "object": _stamped(raw, self.revision)}
        self.history.setdefault(resource, []).append((self.revision, event))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def compact(self) -> None:
        """Forget every change so far: watches from an earlier revision get 410."""
        self.compacted = self.revision
        self.history = {}

    async def _serve_list(self, request: kmock.Request) -> Any:
        listed = await super()._serve_list(request)
        items = [self._current(request.resource, item) for item in listed["items"]]
        return {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": str(self.revision)},
            "items": items,
        }

    async def _serve_watch(self, request: kmock.Request) -> AsyncIterator[Any]:  # type: ignore[override]
        yield b""  # the headers go out at once, as the real server's do
        self.watches_served += 1
        resource = request.resource
        params = request.params
        since = params.get("resourceVersion") or ""
        timeout = float(params.get("timeoutSeconds") or 1800)
        drop = next((d for d in self.drops if d.resource == resource), None)
        if drop is not None:
            self.drops.remove(drop)
        sent = 0
        if since in ("", "0"):
            listed = await self._serve_list(request)
            for item in listed["items"]:
                yield {"type": "ADDED", "object": item}
            cursor = self.revision
        else:
            cursor = int(since)
            if cursor < self.compacted:
                yield {"type": "ERROR", "object": _expired(cursor, self.compacted)}
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            changed = self._changed
            for revision, event in self._after(resource, cursor):
                cursor = revision
                if not _in_namespace(request, event):
                    continue
                if drop is not None and sent >= drop.after_events:
                    await _break_connection(request)
                    return
                yield event
                sent += 1
            if drop is not None and sent >= drop.after_events:
                await _break_connection(request)
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            if _client_gone(request):
                return  # aiohttp does not cancel a handler whose client left
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(remaining, 0.05))
        if params.get("allowWatchBookmarks") == "true":
            bookmark = {"kind": "Bookmark", "metadata": {"resourceVersion": str(self.revision)}}
            yield {"type": "BOOKMARK", "object": bookmark}

    def _after(self, resource: Any, cursor: int) -> list[tuple[int, Event]]:
        events = self.history.get(resource, [])
        start = bisect.bisect_right(events, cursor, key=lambda item: item[0])
        return events[start:]

    def _current(self, resource: Any, item: dict[str, Any]) -> dict[str, Any]:
        metadata = item.get("metadata") or {}
        key = (resource, metadata.get("namespace"), metadata.get("name"))
        return _stamped(item, self.versions.get(key, 0))


def _stamped(raw: dict[str, Any], revision: int) -> dict[str, Any]:
    metadata = {**(raw.get("metadata") or {}), "resourceVersion": str(revision)}
    return {**raw, "metadata": metadata}


def _in_namespace(request: kmock.Request, event: Event) -> bool:
    namespace = (event["object"].get("metadata") or {}).get("namespace")
    return request.namespace is None or namespace == request.namespace


def _expired(since: int, oldest: int) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {since} ({oldest})",
        "reason": "Expired",
        "code": 410,
    }


def _client_gone(request: kmock.Request) -> bool:
    raw = request._raw_request
    transport = raw.transport if raw is not None else None
    return transport is None or transport.is_closing()


async def _break_connection(request: kmock.Request) -> None:
    await asyncio.sleep(0.05)  # what was sent reaches the client first
    raw = request._raw_request
    if raw is not None and raw.transport is not None:
        raw.transport.abort()
