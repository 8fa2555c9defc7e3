"""Follow one kind of Kubernetes object across cycles: LIST once, then WATCH from its version.

`ResourceCache` keeps every object of one kind (nodes, pods, ...) as the API server last
described it. The first `refresh` LISTs the kind and remembers the list's ``resourceVersion``;
each later `refresh` opens a WATCH from the last version seen and applies the events the server
has for us (ADDED and MODIFIED store the object, DELETED drops it, BOOKMARK only moves the
version on), until the stream is silent for `WatchSettings.idle_seconds` (everything that
happened since the last cycle has arrived: the server sends its backlog at once) or the server
ends it after ``timeoutSeconds``. Then the connection is closed; the cache and its version stay
for the next cycle. Nothing runs between cycles (see docs/LIVE_CYCLE.md, "Following the
clusters").

Faults, as a real API server makes them:

- the version is too old (etcd compacted it): ``410 Gone``, as the HTTP status of the watch or as
  an ``ERROR`` event whose Status has code 410: the kind is LISTed again;
- the stream drops half-way: the events read so far are kept and the watch is opened again once,
  at once, from the last version applied, so no event is lost;
- anything else (a refused or failed request, a second drop in a row, an ``ERROR`` event other
  than 410): `ClusterUnavailable`. The kind is not asked again before a backoff of
  `backoff_seconds` x 2^(failures - 1), at most `backoff_max_seconds`; meanwhile `refresh` raises
  `ClusterUnavailable` at once, without a request. The cached objects and version stay: once the
  server answers again, the watch resumes where it stopped (or LISTs again on 410).

A kind is any ``list_*`` function of the official client that takes ``watch``,
``resource_version``, ``timeout_seconds`` and ``allow_watch_bookmarks`` (every one of them does:
``CoreV1Api.list_node``, ``BatchV1Api.list_job_for_all_namespaces``, or a
``functools.partial`` of ``CustomObjectsApi.list_cluster_custom_object`` with group, version
and plural). One `ResourceCache` per kind; it is not thread-safe (one cycle at a time uses it).
`derive` reads what the caller needs of an object once, when the object arrives or changes
(`derived`), instead of on every cycle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from queues.clusters.base import ClusterUnavailable

Manifest = dict[str, Any]
ListCall = Callable[..., Any]
GONE = 410
T = TypeVar("T")


@dataclass(frozen=True)
class WatchSettings:
    """How a `ResourceCache` talks to the API server."""

    request_timeout_seconds: float = 10.0  # connect, and a LIST's read
    idle_seconds: float = 0.25  # a watch silent this long has sent what it had
    timeout_seconds: int = 5  # the server ends a watch after this (timeoutSeconds), and so do we
    backoff_seconds: float = 1.0  # first wait after a failure, doubled on each further one
    backoff_max_seconds: float = 60.0


@dataclass
class CacheStats:
    """What following the kind has cost so far (read by tests and benchmarks/k8s_sync_bench)."""

    lists: int = 0
    watches: int = 0
    events: int = 0
    bytes: int = 0


class KindAbsent(ClusterUnavailable):
    """The kind cannot be listed at all: its CRD is not installed (404) or the platform may not
    list it (403). Raised by the first LIST, and again while the backoff after it runs."""


class _Gone(Exception):
    """The version to watch from is too old (410): LIST again."""


class _StreamLost(Exception):
    """The watch stream broke after it had started."""


class ResourceCache(Generic[T]):
    """The objects of one kind, kept up to date by `refresh` (see the module docstring)."""

    def __init__(
        self,
        kind: str,
        call: ListCall,
        settings: WatchSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        derive: Callable[[Manifest], T] | None = None,
    ) -> None:
        self.kind = kind
        self.stats = CacheStats()
        self._call = call
        self._settings = settings or WatchSettings()
        self._clock = clock
        self._derive = derive
        self._objects: dict[tuple[str, str], Manifest] = {}
        self._derived: dict[tuple[str, str], T] = {}
        self._version = ""  # "" until the first LIST succeeds
        self._failures = 0
        self._retry_at: float | None = None
        self._last_error = ""
        self._absent = False  # the last failure was `KindAbsent`

    def __repr__(self) -> str:
        return f"ResourceCache({self.kind!r}, {len(self._objects)} objects, v={self._version!r})"

    @property
    def resource_version(self) -> str:
        return self._version

    @property
    def failures(self) -> int:
        """Failed refreshes in a row (0 once one succeeds)."""
        return self._failures

    @property
    def retry_in(self) -> float:
        """Seconds before the next refresh may ask the server again (0: now)."""
        if self._retry_at is None:
            return 0.0
        return max(0.0, self._retry_at - self._clock())

    def items(self) -> list[Manifest]:
        """Every object of the kind as last seen, in no particular order."""
        return list(self._objects.values())

    def derived(self) -> list[T]:
        """`derive` of every object, as `items` (empty without a `derive`)."""
        return list(self._derived.values())

    def refresh(self) -> None:
        """Bring the cache up to date; `ClusterUnavailable` when the kind cannot be followed now."""
        wait = self.retry_in
        if wait > 0:
            if self._absent:
                raise KindAbsent(self._last_error)
            raise ClusterUnavailable(
                f"{self._last_error} (watch of {self.kind} lost: {self._failures} failure(s) "
                f"in a row, next attempt in {wait:.0f} s)"
            )
        try:
            self._update()
        except ClusterUnavailable as error:
            self._failures += 1
            settings = self._settings
            delay = settings.backoff_seconds * 2 ** min(self._failures - 1, 30)
            self._retry_at = self._clock() + min(delay, settings.backoff_max_seconds)
            self._last_error = str(error)
            self._absent = isinstance(error, KindAbsent)
            raise
        self._failures = 0
        self._retry_at = None
        self._last_error = ""

    def forget(self) -> None:
        """Drop the objects and version: the next refresh LISTs again."""
        self._objects = {}
        self._derived = {}
        self._version = ""

    # -- one refresh -----------------------------------------------------------------------

    def _update(self) -> None:
        if not self._version:
            self._relist()
            return
        try:
            try:
                self._drain()
            except _StreamLost:
                self._drain()  # once more, from the last version applied: nothing is lost
        except _Gone:
            self._relist()
        except _StreamLost as error:
            raise ClusterUnavailable(
                f"watch {self.kind}: the stream broke twice: {error}"
            ) from None

    def _relist(self) -> None:
        response = self._request("list", _request_timeout=self._timeout(self._settings))
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ClusterUnavailable(f"list {self.kind}: {type(error).__name__}: {error}") from None
        self.stats.lists += 1
        self.stats.bytes += len(data)
        try:
            decoded = json.loads(data)
        except ValueError:
            raise ClusterUnavailable(
                f"list {self.kind}: the API server sent invalid JSON"
            ) from None
        if not isinstance(decoded, dict):
            raise ClusterUnavailable(f"list {self.kind}: the API server sent no object list")
        self._objects = {_key(item): item for item in decoded.get("items") or []}
        derive = self._derive
        self._derived = {} if derive is None else {k: derive(v) for k, v in self._objects.items()}
        # a list without a version (not from a real API server) cannot be watched from: the
        # next refresh LISTs again
        self._version = str((decoded.get("metadata") or {}).get("resourceVersion") or "")

    def _drain(self) -> None:
        settings = self._settings
        response = self._request(
            "watch",
            watch=True,
            resource_version=self._version,
            timeout_seconds=settings.timeout_seconds,
            allow_watch_bookmarks=True,
            _request_timeout=(settings.request_timeout_seconds, settings.idle_seconds),
        )
        self.stats.watches += 1
        deadline = self._clock() + settings.timeout_seconds + settings.idle_seconds
        try:
            for line in self._lines(response):
                self._apply(line)
                if self._clock() > deadline:
                    break  # a busy stream: the rest comes next cycle, from this version
        except urllib3.exceptions.ReadTimeoutError:
            pass  # silent for idle_seconds: caught up
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise _StreamLost(f"{type(error).__name__}: {error}") from None
        finally:
            response.close()  # never back to the pool: the server may still be streaming

    def _lines(self, response: Any) -> Iterator[bytes]:
        pending = b""
        for chunk in response.stream(64 * 1024, decode_content=True):
            self.stats.bytes += len(chunk)
            pending += chunk
            *complete, pending = pending.split(b"\n")
            yield from (line for line in complete if line.strip())
        if pending.strip():
            yield pending

    def _apply(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            raise _StreamLost("a watch event is not JSON") from None
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == GONE:
                raise _Gone()
            message = obj.get("message") or obj.get("reason") or "no message"
            raise ClusterUnavailable(f"watch {self.kind}: ERROR {obj.get('code')}: {message}")
        self.stats.events += 1
        if kind in ("ADDED", "MODIFIED"):
            key = _key(obj)
            self._objects[key] = obj
            if self._derive is not None:
                self._derived[key] = self._derive(obj)
        elif kind == "DELETED":
            self._objects.pop(_key(obj), None)
            self._derived.pop(_key(obj), None)
        elif kind != "BOOKMARK":
            raise _StreamLost(f"unknown watch event type {kind!r}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self._version = str(version)

    def _request(self, action: str, **kwargs: Any) -> Any:
        try:
            return self._call(_preload_content=False, **kwargs)
        except ApiException as error:
            if error.status == GONE and action == "watch":
                raise _Gone() from None
            if error.status in (403, 404) and action == "list":
                raise KindAbsent(
                    f"list {self.kind}: HTTP {error.status}: not installed or not allowed"
                ) from None
            raise ClusterUnavailable(
                f"{action} {self.kind}: HTTP {error.status} {error.reason or ''}".rstrip()
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ClusterUnavailable(
                f"{action} {self.kind}: {type(error).__name__}: {error}"
            ) from None

    @staticmethod
    def _timeout(settings: WatchSettings) -> tuple[float, float]:
        return (settings.request_timeout_seconds, settings.request_timeout_seconds)


def _key(obj: Manifest) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
