"""kmock's Kubernetes API emulator over real HTTP, and strict schema validation, for tests.

The emulator is asyncio-based and the official client is synchronous, so the emulator runs
in its own event loop on a background thread; tests talk to it through `EmulatedCluster`,
which hops onto that loop for every look or change so nothing races a request in flight.

kmock facts these tests rely on (read from its source, kmock 0.8):

- it serves create (POST), get, list, patch (a plain dict merge) and delete over the usual
  Kubernetes URLs, stores objects exactly as received, and ignores label selectors;
- it cannot parse the URLs of the core ``namespaces`` resource: ``/api/v1/namespaces`` fails
  inside its request parser (a 500 before any reaction can answer) and
  ``/api/v1/namespaces/<name>`` reads as "namespace <name>, no resource".
  `_parse_namespace_paths` fixes that one case by wrapping kmock's path parser;
- listing a resource it has never seen is a 404, so the fixture declares nodes, pods,
  services, namespaces, events, and the Jobs, JobSets and PyTorchJobs kubectl users apply,
  up front;
- delete removes an object at once (no grace period runs, no deletionTimestamp) unless it has
  finalizers;
- a reaction added with ``kmock[criteria] << payload`` answers before the built-in handlers,
  but creates, patches and deletes are applied to the stored objects *even when a reaction
  answers them with an error*: an injected 500 on a create still stores the object, like a
  real API server whose response was lost.

kmock does not serve the ``log`` subresource (a GET of ``pods/<name>/log`` answers the pod's
JSON): `FaultyEmulator` serves it as the API server and kubelet do, from the text set with
`EmulatedCluster.set_pod_log`: ``text/plain``, ``tailLines`` (the last lines) then
``limitBytes`` (the first bytes of those), 404 for a pod that is not there, 400 for a container
the pod does not have or that has not started (no running or terminated state, now or last).

For refusals that really refuse (the object is *not* stored, as when a ResourceQuota or an
admission webhook says no) and for answers that never arrive, `EmulatedCluster.fail` and
`EmulatedCluster.lose_response` inject a `Fault` into the emulator itself (`FaultyEmulator`):
the n-th matching request from then on is refused with a Kubernetes ``Status`` body, or carried
out and its connection dropped before the answer.

Watches (resource versions, resuming, ``timeoutSeconds``, 410 after a compaction, a stream that
breaks) come from `tests.queues.clusters.k8s_watch.WatchingEmulator`, which `FaultyEmulator`
extends; `EmulatedCluster.compact` and `drop_watch` reach them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp.web
import attrs
import jsonschema  # type: ignore[import-untyped]
import kmock
import kmock._internal.parsing as kmock_parsing
import kubernetes_validate  # type: ignore[import-untyped]
import kubernetes_validate.utils  # type: ignore[import-untyped]
from referencing import Registry, Resource

from tests.queues.clusters.k8s_watch import WatchDrop, WatchingEmulator

T = TypeVar("T")

TOKEN = "s3cr3t-bearer-token"
REQUEST_TIMEOUT = 0.5  # seconds; the timeout test sleeps well past it

NODES = kmock.resource("", "v1", "nodes")
PODS = kmock.resource("", "v1", "pods")
SERVICES = kmock.resource("", "v1", "services")
NAMESPACES = kmock.resource("", "v1", "namespaces")
EVENTS = kmock.resource("", "v1", "events")
# the workload kinds the platform takes in from kubectl users (queues/clusters/adopted.py)
JOBS = kmock.resource("batch", "v1", "jobs")
JOBSETS = kmock.resource("jobset.x-k8s.io", "v1alpha2", "jobsets")
PYTORCHJOBS = kmock.resource("kubeflow.org", "v1", "pytorchjobs")
DECLARED = (NODES, PODS, SERVICES, NAMESPACES, EVENTS, JOBS, JOBSETS, PYTORCHJOBS)


def _parse_namespace_paths(path: str) -> kmock_parsing.ParsedPath:
    """kmock's path parser, taught the cluster-scoped ``namespaces`` resource."""
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) in (3, 4):
        name = parts[3] if len(parts) == 4 else None
        return kmock_parsing.ParsedPath(group="", version="v1", plural="namespaces", name=name)
    return _original_parse_path(path)


_original_parse_path = kmock_parsing.parse_path
kmock_parsing.parse_path = _parse_namespace_paths


@dataclass
class Fault:
    """What goes wrong with the `nth` request (1-based, counted from when the fault is added)
    of `action` on `resource` (on the object named `name` only, when given), and with the
    `times - 1` matching requests after it.

    ``applied``: the server carries the request out before answering (a create stores the
    object); ``lost``: the connection drops before any answer, so the client sees a transport
    error; otherwise the answer is a ``Status`` of ``status`` with ``reason`` and ``message``.
    """

    action: kmock.action
    resource: kmock.resource
    nth: int = 1
    status: int = 500
    reason: str = "InternalError"
    message: str = "Internal error occurred: injected fault"
    applied: bool = False
    lost: bool = False
    name: str = ""
    times: int = 1
    seen: int = 0

    def matches(self, request: kmock.Request) -> bool:
        if request.action != self.action or request.resource != self.resource:
            return False
        if not self.name:
            return True
        named = request.name or ((request.data or {}).get("metadata") or {}).get("name")
        return bool(named == self.name)

    def status_body(self) -> dict[str, Any]:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status,
        }


@attrs.define(kw_only=True)
class FaultyEmulator(WatchingEmulator):
    """kmock's emulator that first consults its injected faults (see `Fault`)."""

    faults: list[Fault] = attrs.field(factory=list)
    answered: list[tuple[Fault, kmock.Request]] = attrs.field(factory=list)
    pod_logs: dict[tuple[str, str], str] = attrs.field(factory=dict)

    def _due(self, request: kmock.Request) -> Fault | None:
        due = None
        for fault in list(self.faults):
            if fault.matches(request):
                fault.seen += 1
                if fault.seen >= fault.nth and due is None:
                    if fault.seen >= fault.nth + fault.times - 1:
                        self.faults.remove(fault)
                    due = fault
        return due

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        fault = self._due(request)
        if fault is None and request.resource == PODS and request.subresource == "log":
            return self._serve_log(request)
        if fault is None:
            return await super()._handle(request)
        self.answered.append((fault, request))
        response: aiohttp.web.StreamResponse | None = None
        if fault.applied or fault.lost:
            try:
                response = await super()._handle(request)
            except Exception:  # e.g. 409: applied as far as it goes
                response = None
        if fault.lost:
            transport = request._raw_request.transport if request._raw_request else None
            if transport is not None:
                transport.abort()  # the client never reads an answer
            return response or aiohttp.web.Response(status=500)
        return aiohttp.web.json_response(fault.status_body(), status=fault.status)

    def _serve_log(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        namespace, name = request.namespace or "", request.name or ""
        stored = dict(self.objects.items()).get((PODS, namespace, name))
        if stored is None or stored.deleted:
            return _status_response(404, "NotFound", f'pods "{name}" not found')
        pod = stored.raw
        containers = [c["name"] for c in pod["spec"]["containers"]]
        container = request.params.get("container") or containers[0]
        if container not in containers:
            return _status_response(
                400, "BadRequest", f"container {container} is not valid for pod {name}"
            )
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        status = next((c for c in statuses if c.get("name") == container), {})
        state = status.get("state") or {}
        started = "running" in state or "terminated" in state
        if not (started or "terminated" in (status.get("lastState") or {})):
            waiting = (state.get("waiting") or {}).get("reason", "ContainerCreating")
            message = f'container "{container}" in pod "{name}" is waiting to start: {waiting}'
            return _status_response(400, "BadRequest", message)
        lines = self.pod_logs.get((namespace, name), "").splitlines(keepends=True)
        if "tailLines" in request.params:
            lines = lines[len(lines) - min(len(lines), int(request.params["tailLines"])) :]
        body = "".join(lines).encode()
        if "limitBytes" in request.params:
            body = body[: int(request.params["limitBytes"])]
        return aiohttp.web.Response(body=body, content_type="text/plain")


def _status_response(code: int, reason: str, message: str) -> aiohttp.web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip
    return aiohttp.web.json_response(body, status=code)


class EmulatedCluster:
    """A `kmock.KubernetesEmulator` on 127.0.0.1, served from a background event loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.url = ""
        self.emulator: FaultyEmulator
        self._thread = threading.Thread(target=self._serve, name="kmock", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout=10):
            raise RuntimeError("the Kubernetes emulator did not start")
        if self._error is not None:
            raise self._error

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as error:  # surfaced to the test thread
            self._error = error
            self._started.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with FaultyEmulator() as emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            for resource in DECLARED:
                emulator.resources[resource] = kmock.ResourceInfo()
            self._started.set()
            await self._stop.wait()

    def close(self) -> None:
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the emulator's loop and return its result."""

        async def run() -> T:
            return fn()

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return future.result(timeout=10)

    # -- seeding and looking --------------------------------------------------------------

    def add_node(
        self,
        name: str,
        allocatable: dict[str, str],
        labels: dict[str, str] | None = None,
        *,
        ready: bool = True,
        unschedulable: bool = False,
    ) -> None:
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {
                "allocatable": {"cpu": "96", "memory": "1056Gi", "pods": "110", **allocatable},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True" if ready else "Unknown"},
                ],
            },
        }

        def store() -> None:
            existed = (NODES, None, name) in self.emulator.objects
            self.emulator.objects[NODES, None, name] = node
            self.emulator.record(NODES, "MODIFIED" if existed else "ADDED", node)

        self.call(store)

    def add_pod(
        self,
        namespace: str,
        name: str,
        node: str,
        gpus: dict[str, str],
        *,
        phase: str = "Running",
        init_gpus: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """A pod someone else runs (no platform labels unless given), bound to `node`, whose
        container asks `gpus` as limits (and an init container `init_gpus`, as requests)."""
        spec: dict[str, Any] = {
            "nodeName": node,
            "containers": [{"name": "main", "image": "serve:1", "resources": {"limits": gpus}}],
        }
        if init_gpus:
            spec["initContainers"] = [
                {"name": "warm", "image": "warm:1", "resources": {"requests": init_gpus}}
            ]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec,
            "status": {"phase": phase},
        }

        def store() -> None:
            self.emulator.objects[PODS, namespace, name] = pod
            self.emulator.record(PODS, "ADDED", pod)

        self.call(store)
        return pod

    def compact(self) -> None:
        """The API server forgets its change history (etcd compaction): watches from an older
        resourceVersion get 410 Expired."""
        self.call(self.emulator.compact)

    def drop_watch(self, resource: kmock.resource, after_events: int = 0) -> None:
        """The next watch of `resource` loses its connection after `after_events` events."""
        self.call(lambda: self.emulator.drops.append(WatchDrop(resource, after_events)))

    def watches(self, resource: kmock.resource | None = None) -> list[kmock.Request]:
        """The watch requests served so far (of `resource` only, when given)."""
        return [
            r
            for r in self.requests("GET")
            if r.params.get("watch") == "true" and (resource is None or r.resource == resource)
        ]

    def stored(
        self, resource: kmock.resource, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """The live (not deleted) objects of `resource`, optionally of one namespace."""

        def collect() -> list[dict[str, Any]]:
            return [
                obj.raw
                for (res, ns, _), obj in self.emulator.objects.items()
                if res == resource and not obj.deleted and (namespace is None or ns == namespace)
            ]

        return self.call(collect)

    def put(self, resource: kmock.resource, obj: dict[str, Any]) -> None:
        """Store `obj` as if a user (kubectl apply) or a controller had created it."""
        metadata = obj["metadata"]

        def store() -> None:
            self.emulator.objects[resource, metadata.get("namespace"), metadata["name"]] = obj

        self.call(store)

    def get(self, resource: kmock.resource, namespace: str, name: str) -> dict[str, Any] | None:
        """The live object, or None when there is none."""

        def look() -> dict[str, Any] | None:
            key = (resource, namespace, name)
            if key not in self.emulator.objects or self.emulator.objects[key].deleted:
                return None
            return dict(self.emulator.objects[key].raw)

        return self.call(look)

    def remove(self, resource: kmock.resource, namespace: str, name: str) -> None:
        """A user (kubectl delete) or a controller deletes the object; it is gone at once."""
        self.call(lambda: self.emulator.objects[resource, namespace, name].delete())

    def stored_pods(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        return {pod["metadata"]["name"]: pod for pod in self.stored(PODS, namespace)}

    def set_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        def patch() -> None:
            pod = self.emulator.objects[PODS, namespace, name]
            pod.patch({"status": status})
            self.emulator.record(PODS, "MODIFIED", pod.raw)

        self.call(patch)

    def set_pod_log(self, namespace: str, name: str, text: str) -> None:
        """What the pod's container has written so far (served on ``pods/<name>/log``)."""
        self.call(lambda: self.emulator.pod_logs.__setitem__((namespace, name), text))

    def evict_pod(self, namespace: str, name: str, message: str = "") -> None:
        """What the kubelet (node pressure) or a drain's eviction leaves of a running pod."""
        self.set_pod_status(
            namespace,
            name,
            {
                "phase": "Failed",
                "reason": "Evicted",
                "message": message or "The node was low on resource: memory.",
            },
        )

    def delete_pod(self, namespace: str, name: str) -> None:
        """Someone else (a user, a controller) deletes the pod; it is gone at once."""

        def delete() -> None:
            pod = self.emulator.objects[PODS, namespace, name]
            last = pod.raw
            pod.delete()
            self.emulator.record(PODS, "DELETED", last)

        self.call(delete)

    def fail(
        self,
        action: kmock.action,
        resource: kmock.resource,
        *,
        nth: int = 1,
        status: int = 500,
        reason: str = "InternalError",
        message: str = "Internal error occurred: injected fault",
        applied: bool = False,
        name: str = "",
        times: int = 1,
    ) -> Fault:
        """The `nth` matching request from now on (and `times - 1` more) is answered with a
        `status` Status; it is carried out first only when `applied` (else nothing is
        stored). `name`: only requests on the object of that name match."""
        fault = Fault(
            action, resource, nth, status, reason, message, applied, name=name, times=times
        )
        self.call(lambda: self.emulator.faults.append(fault))
        return fault

    def lose_response(
        self, action: kmock.action, resource: kmock.resource, *, nth: int = 1
    ) -> Fault:
        """The `nth` matching request from now on is carried out, but its answer is lost."""
        fault = Fault(action, resource, nth, applied=True, lost=True)
        self.call(lambda: self.emulator.faults.append(fault))
        return fault

    def faults_pending(self) -> list[Fault]:
        return self.call(lambda: list(self.emulator.faults))

    def requests(self, method: str | None = None) -> list[kmock.Request]:
        def collect() -> list[kmock.Request]:
            return [r for r in self.emulator if method is None or r.method.value == method]

        return self.call(collect)

    def react(
        self, action: kmock.action, resource: kmock.resource, *payload: Any, times: int = 0
    ) -> None:
        """Answer matching requests with `payload` (a status code, a callable, a body, ...).

        With `times`, only the first `times` matching requests of the whole session get it
        (kmock slices the request history), later ones reach the emulator as usual.
        """

        def register() -> None:
            view = self.emulator[action][resource]
            reaction = view[:times] if times else view
            for item in payload:
                reaction = reaction << item

        self.call(register)


# -- schema validation ----------------------------------------------------------------------

SCHEMA_VERSION = kubernetes_validate.latest_version()


def validate_manifest(manifest: dict[str, Any]) -> None:
    """Validate strictly against the newest Kubernetes schema kubernetes-validate ships.

    kubernetes-validate finds a schema by kind and apiVersion; DeleteOptions (sent with
    apiVersion v1, as kubectl does) lives under the meta group's file, so it is checked against
    that file with the same validator.
    """
    if manifest.get("kind") == "DeleteOptions":
        schema_dir = f"kubernetes-json-schema/v{SCHEMA_VERSION}-local-strict"
        schema = kubernetes_validate.utils.schema_contents(
            f"{schema_dir}/deleteoptions-meta-v1.json", SCHEMA_VERSION
        )
        definitions = kubernetes_validate.utils.schema_contents(
            f"{schema_dir}/_definitions.json", SCHEMA_VERSION
        )
        registry = Resource.from_contents(schema) @ Registry()
        registry = Resource.from_contents(definitions) @ registry
        jsonschema.Draft202012Validator(schema, registry=registry).validate(manifest)
        return
    kubernetes_validate.validate(manifest, SCHEMA_VERSION, strict=True)
