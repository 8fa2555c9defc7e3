"""The Kubernetes cluster driver, on the official `kubernetes` client.

Connects with an API server URL + bearer token, or a kubeconfig file + context. TLS is verified
by default. Every request carries a timeout, and urllib3 does not retry on its own: a failed
request surfaces at once as `ClusterUnavailable` and the next cycle retries.

Reads use raw JSON (``_preload_content=False``): the driver only needs a few fields and this
keeps it independent of the client's model classes. Writes send the dict manifests built by
`queues.clusters.manifests`, unchanged.

`sync` reads nodes and pods (every pod: those of other workloads hold GPUs too) from caches
that follow them with LIST + WATCH (`queues.clusters.watch`): a driver kept across cycles
(`queues.clusters.pool.DriverPool`) asks the API server only for what changed since the last one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from queues.clusters import adopted, manifests, pod_logs
from queues.clusters.base import (
    MAX_LOG_LINES,
    ClusterState,
    ClusterUnavailable,
    InvalidSpec,
    LaunchSpec,
    QuotaExceeded,
    RequestRejected,
    WorkerLog,
    WorkerPlacement,
    WorkloadConflict,
)
from queues.clusters.k8s_state import (
    _owned_by_job,
    _pod_message,
    _terminating,
    _worker_index,
    _worker_status,
    cluster_state,
    parse_node,
    read_pod,
)
from queues.clusters.kubernetes_adopted import AdoptedWorkloadCalls
from queues.clusters.watch import ResourceCache, WatchSettings

logger = logging.getLogger(__name__)

Manifest = dict[str, Any]

MANAGED_SELECTOR = f"{manifests.MANAGED_BY_KEY}={manifests.MANAGED_BY}"
# What the API server's Status message says when an admission webhook or a ResourceQuota
# refuses a create (k8s.io/apiserver admission and plugin/pkg/admission/resourcequota).
ADMISSION_DENIED = ("admission webhook", "denied the request")
QUOTA_EXCEEDED = "exceeded quota"


@dataclass(frozen=True)
class KubernetesConnection:
    """How to reach one cluster. Give `api_server` + `token`, or `kubeconfig_path` (+ `context`),
    or `in_cluster` (the cluster this process runs in, with its pod's ServiceAccount: the API
    server from KUBERNETES_SERVICE_HOST/PORT, the token and CA from the mounted ServiceAccount
    files, the token re-read as the kubelet rotates it).

    The token and CA data never appear in a repr or a log line.
    """

    api_server: str = ""
    token: str = field(default="", repr=False)
    kubeconfig_path: str = ""
    context: str = ""
    ca_cert_data: str = field(default="", repr=False)  # PEM; default: the system trust store
    verify_tls: bool = True
    request_timeout_seconds: float = 10.0
    cluster_domain: str = "cluster.local"
    in_cluster: bool = False
    watch_idle_seconds: float = 0.25  # a watch silent this long has sent all it had

    def __post_init__(self) -> None:
        if self.in_cluster:
            if self.kubeconfig_path or self.api_server or self.token:
                raise InvalidSpec(
                    "in_cluster: uses the pod's ServiceAccount; give no api_server, token or "
                    "kubeconfig_path"
                )
        elif self.kubeconfig_path and (self.api_server or self.token):
            raise InvalidSpec("kubeconfig_path: give either a kubeconfig or api_server + token")
        if not self.kubeconfig_path and not self.in_cluster:
            if not self.api_server:
                raise InvalidSpec("api_server: required unless kubeconfig_path is given")
            if not self.api_server.startswith(("https://", "http://")):
                raise InvalidSpec(f"api_server: {self.api_server!r} must start with https://")
            if not self.token:
                raise InvalidSpec("token: required with api_server")
        if self.request_timeout_seconds <= 0:
            raise InvalidSpec("request_timeout_seconds: must be positive")
        if self.watch_idle_seconds <= 0:
            raise InvalidSpec("watch_idle_seconds: must be positive")

    def build_api_client(self) -> k8s.ApiClient:
        configuration = k8s.Configuration()
        if self.in_cluster:
            try:
                k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                    client_configuration=configuration
                )
            except k8s_config.ConfigException as error:
                raise InvalidSpec(
                    f"in_cluster: this process does not run in a Kubernetes pod with a "
                    f"ServiceAccount token ({error})"
                ) from None
        elif self.kubeconfig_path:
            try:
                k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=self.kubeconfig_path,
                    context=self.context or None,
                    client_configuration=configuration,
                    persist_config=False,
                )
            except (k8s_config.ConfigException, OSError, ValueError) as error:
                raise InvalidSpec(f"kubeconfig_path: cannot load it: {error}") from None
        else:
            configuration.host = self.api_server.rstrip("/")
            configuration.api_key = {"authorization": self.token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        if self.ca_cert_data:
            configuration.ca_cert_data = self.ca_cert_data
        configuration.verify_ssl = self.verify_tls
        # No silent retries inside one cycle: the caller retries on the next one.
        configuration.retries = urllib3.Retry(total=0, redirect=0, raise_on_status=False)
        return k8s.ApiClient(configuration)


class KubernetesDriver(AdoptedWorkloadCalls):
    """`ClusterDriver` for one Kubernetes cluster (and the calls about kubectl-applied
    workloads, `AdoptedWorkloadCalls`).

    It keeps what it has read (`keeps_state`): kept across cycles, each `sync` reads only the
    changes. `clock` (monotonic seconds) times the watches' backoff."""

    keeps_state = True

    def __init__(
        self, connection: KubernetesConnection, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._connection = connection
        self._api_client = connection.build_api_client()
        self._core = k8s.CoreV1Api(self._api_client)
        self._custom = k8s.CustomObjectsApi(self._api_client)  # adopted workloads, any group
        timeout = connection.request_timeout_seconds
        self._timeout = (timeout, timeout)
        watch = WatchSettings(
            request_timeout_seconds=timeout, idle_seconds=connection.watch_idle_seconds
        )
        # The kinds `sync` follows; another kind is one more line (see queues/clusters/watch.py).
        self._nodes = ResourceCache("nodes", self._core.list_node, watch, clock, parse_node)
        self._pods = ResourceCache(
            "pods", self._core.list_pod_for_all_namespaces, watch, clock, read_pod
        )
        # the kinds teams apply with kubectl (docs/KUEUE.md), read by `list_adopted`
        self.adopted_caches = tuple(
            ResourceCache(
                f"{kind.plural}.{kind.group}",
                partial(
                    self._custom.list_cluster_custom_object, kind.group, kind.version, kind.plural
                ),
                watch,
                clock,
            )
            for kind in adopted.KINDS
        )

    def __repr__(self) -> str:
        return f"KubernetesDriver({self._connection!r})"

    # -- reading -------------------------------------------------------------------------

    def sync(self) -> ClusterState:
        # the kinds side by side: each watch waits for a moment of silence, together only once
        with ThreadPoolExecutor(len(self.caches), thread_name_prefix="k8s-sync") as threads:
            failed = [e for e in threads.map(_refresh, self.caches) if e is not None]
        if failed:
            raise failed[0]
        return cluster_state(self._nodes.derived(), self._pods.derived())

    @property
    def caches(self) -> tuple[ResourceCache[Any], ...]:
        """The kinds this driver follows, each with what it has cost (`ResourceCache.stats`)."""
        return (self._nodes, self._pods)

    def worker_logs(
        self, job_id: str, namespace: str, worker_index: int | None, tail_lines: int
    ) -> tuple[WorkerLog, ...]:
        if not 0 <= tail_lines <= MAX_LOG_LINES:
            raise InvalidSpec(f"tail_lines: must be 0 to {MAX_LOG_LINES}, got {tail_lines}")
        pods: dict[int, Manifest] = {}
        for pod in sorted(self._job_pods(job_id, namespace), key=_terminating, reverse=True):
            pods[_worker_index(pod)] = pod  # a live pod wins over a terminating one
        if worker_index is not None:
            if worker_index not in pods:
                return (WorkerLog(worker_index, None, note=f"worker {worker_index} has no pod"),)
            pods = {worker_index: pods[worker_index]}
        return tuple(self._worker_log(pods[index], tail_lines) for index in sorted(pods))

    def _worker_log(self, pod: Manifest, tail_lines: int) -> WorkerLog:
        worker = _worker_status(pod)
        waiting = pod_logs.not_started(pod, worker.message)
        if tail_lines == 0 or waiting:
            note = f"worker {worker.index} {waiting}" if waiting else ""
            return WorkerLog(worker.index, worker, note=note)
        name, namespace = worker.pod_name, str(pod["metadata"].get("namespace", ""))
        try:
            with api_errors(f"read the log of pod {namespace}/{name}", tolerate=(404,)):
                response: Any = self._core.read_namespaced_pod_log(
                    name,
                    namespace,
                    container=manifests.CONTAINER_NAME,
                    tail_lines=tail_lines,
                    limit_bytes=pod_logs.LOG_LIMIT_BYTES,
                    **self._raw(),
                )
                data = response.data
        except _Tolerated:  # deleted since the list
            return WorkerLog(worker.index, None, note=f"worker {worker.index} has no pod")
        except RequestRejected as error:  # 400: e.g. its container is (again) waiting to start
            return WorkerLog(worker.index, worker, note=str(error))
        return WorkerLog(worker.index, worker, *pod_logs.log_lines(data, pod_logs.LOG_LIMIT_BYTES))

    # -- writing -------------------------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        manifests.validate_spec(spec)
        if not spec.workers:
            raise InvalidSpec("workers: a launch needs at least one worker")
        self._ensure_namespace(spec.team)
        if manifests.needs_service(spec):
            self._ensure_service(spec)
        for worker in sorted(spec.workers, key=lambda w: w.index):
            self._ensure_pod(spec, worker)
        logger.info(
            "launched job %s: %d worker(s) in %s",
            spec.job_id,
            len(spec.workers),
            manifests.team_namespace(spec.team),
        )

    def stop(self, job_id: str, namespace: str, grace_period_seconds: int) -> None:
        if grace_period_seconds < 0:
            raise InvalidSpec(f"grace_period_seconds: must be >= 0, got {grace_period_seconds}")
        pods = self._job_pods(job_id, namespace)
        for pod in sorted(pods, key=_worker_index, reverse=True):
            self._delete_pod(pod["metadata"]["name"], namespace, grace_period_seconds)
        for service in self._job_services(job_id, namespace):
            self._delete_service(service["metadata"]["name"], namespace)
        logger.info("stopped job %s: %d pod(s) in %s", job_id, len(pods), namespace)

    def scale(self, spec: LaunchSpec) -> None:
        manifests.validate_spec(spec)
        if not spec.workers:
            raise InvalidSpec("workers: scaling needs at least one worker; stop the job instead")
        namespace = manifests.team_namespace(spec.team)
        existing = {
            _worker_index(pod): pod
            for pod in self._job_pods(spec.job_id, namespace)
            if not _terminating(pod)
        }
        wanted = {worker.index: worker for worker in spec.workers}
        surplus = sorted(set(existing) - set(wanted), reverse=True)
        for index in surplus:
            pod_name = existing[index]["metadata"]["name"]
            self._delete_pod(pod_name, namespace, spec.grace_period_seconds)
        missing = sorted(set(wanted) - set(existing))
        if missing:
            self._ensure_namespace(spec.team)
            if manifests.needs_service(spec):
                self._ensure_service(spec)
        for index in missing:
            self._ensure_pod(spec, wanted[index])
        logger.info("scaled job %s: +%d -%d worker(s)", spec.job_id, len(missing), len(surplus))

    def close(self) -> None:
        self._api_client.close()  # type: ignore[no-untyped-call]

    # -- helpers -------------------------------------------------------------------------

    def _raw(self) -> dict[str, Any]:
        return {"_preload_content": False, "_request_timeout": self._timeout}

    def _read(
        self, action: str, call: Callable[[], Any], tolerate: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        with api_errors(action, tolerate):
            response = call()
            data = response.data
        try:
            decoded = json.loads(data)
        except ValueError as error:
            raise ClusterUnavailable(f"{action}: the API server sent invalid JSON") from error
        if not isinstance(decoded, dict):
            raise ClusterUnavailable(f"{action}: the API server sent {type(decoded).__name__}")
        return decoded

    def _job_pods(self, job_id: str, namespace: str) -> list[Manifest]:
        selector = f"{MANAGED_SELECTOR},{manifests.JOB_LABEL}={manifests.label_value(job_id)}"
        pod_list = self._read(
            f"list pods of job {job_id}",
            lambda: self._core.list_namespaced_pod(
                namespace, label_selector=selector, **self._raw()
            ),
        )
        return [pod for pod in pod_list.get("items", []) if _owned_by_job(pod, job_id)]

    def _job_services(self, job_id: str, namespace: str) -> list[Manifest]:
        selector = f"{MANAGED_SELECTOR},{manifests.JOB_LABEL}={manifests.label_value(job_id)}"
        service_list = self._read(
            f"list services of job {job_id}",
            lambda: self._core.list_namespaced_service(
                namespace, label_selector=selector, **self._raw()
            ),
        )
        return [svc for svc in service_list.get("items", []) if _owned_by_job(svc, job_id)]

    def _ensure_namespace(self, team: str) -> None:
        body = manifests.namespace_manifest(team)
        self._create(
            f"create namespace {body['metadata']['name']}",
            lambda: self._core.create_namespace(body, **self._raw()),  # type: ignore[arg-type]
        )

    def _ensure_service(self, spec: LaunchSpec) -> None:
        body = manifests.service_manifest(spec)
        namespace = body["metadata"]["namespace"]
        name = body["metadata"]["name"]
        created = self._create(
            f"create service {namespace}/{name}",
            lambda: self._core.create_namespaced_service(
                namespace,
                body,  # type: ignore[arg-type]
                **self._raw(),
            ),
        )
        if not created:
            existing = self._read(
                f"read service {namespace}/{name}",
                lambda: self._core.read_namespaced_service(name, namespace, **self._raw()),
            )
            if not _owned_by_job(existing, spec.job_id):
                raise WorkloadConflict(f"service {namespace}/{name} belongs to another workload")

    def _ensure_pod(self, spec: LaunchSpec, worker: WorkerPlacement) -> None:
        body = manifests.pod_manifest(spec, worker, self._connection.cluster_domain)
        namespace = body["metadata"]["namespace"]
        name = body["metadata"]["name"]
        created = self._create(
            f"create pod {namespace}/{name}",
            lambda: self._core.create_namespaced_pod(
                namespace,
                body,  # type: ignore[arg-type]
                **self._raw(),
            ),
        )
        if created:
            return
        # 409: ours from an earlier attempt whose answer was lost (adopt it), or in the way.
        try:
            existing = self._read(
                f"read pod {namespace}/{name}",
                lambda: self._core.read_namespaced_pod(name, namespace, **self._raw()),
                tolerate=(404,),
            )
        except _Tolerated:
            raise WorkloadConflict(
                f"pod {namespace}/{name} vanished between create and read; launch again"
            ) from None
        if not _owned_by_job(existing, spec.job_id):
            raise WorkloadConflict(f"pod {namespace}/{name} belongs to another workload")
        if _terminating(existing):
            raise WorkloadConflict(
                f"pod {namespace}/{name} of a previous run is still terminating; "
                "launch again once it is gone"
            )
        if (existing.get("status") or {}).get("phase") == "Failed":  # e.g. evicted
            self._delete_pod(name, namespace, 0)
            raise WorkloadConflict(
                f"pod {namespace}/{name} had failed ({_pod_message(existing['status'])}); "
                "removed it, launch again once it is gone"
            )
        planned = existing["metadata"].get("annotations", {}).get(manifests.PLANNED_NODE_ANNOTATION)
        if planned != worker.node:
            raise WorkloadConflict(
                f"pod {namespace}/{name} exists on node {planned!r}, not on {worker.node!r}"
            )

    def _read_or_none(
        self, action: str, call: Callable[[], Any], tolerate: tuple[int, ...] = (404,)
    ) -> Manifest | None:
        """A read whose object may be gone: None on 404 (or the other `tolerate` statuses)."""
        try:
            return self._read(action, call, tolerate=tolerate)
        except _Tolerated:
            return None

    def _send(self, action: str, call: Callable[[], Any], tolerate: tuple[int, ...]) -> bool:
        """A write; False when the API answered one of the `tolerate` statuses."""
        try:
            with api_errors(action, tolerate=tolerate):
                call()
                return True
        except _Tolerated:
            logger.debug("%s: tolerated", action)
            return False

    def _create(self, action: str, call: Callable[[], Any]) -> bool:
        """Run a create call; False when the object already existed (HTTP 409)."""
        try:
            with api_errors(action, tolerate=(409,)):
                call()
                return True
        except _Tolerated:
            logger.debug("%s: already exists", action)
            return False

    def _delete_pod(self, name: str, namespace: str, grace_period_seconds: int) -> None:
        body = manifests.delete_options(grace_period_seconds)
        self._delete(
            f"delete pod {namespace}/{name}",
            lambda: self._core.delete_namespaced_pod(
                name,
                namespace,
                grace_period_seconds=grace_period_seconds,
                propagation_policy="Background",
                body=body,  # type: ignore[arg-type]
                **self._raw(),
            ),
        )

    def _delete_service(self, name: str, namespace: str) -> None:
        self._delete(
            f"delete service {namespace}/{name}",
            lambda: self._core.delete_namespaced_service(name, namespace, **self._raw()),
        )

    def _delete(self, action: str, call: Callable[[], Any]) -> None:
        try:
            with api_errors(action, tolerate=(404,)):
                call()
        except _Tolerated:
            logger.debug("%s: already gone", action)


def _refresh(cache: ResourceCache[Any]) -> ClusterUnavailable | None:
    try:
        cache.refresh()
    except ClusterUnavailable as error:
        return error
    return None


class _Tolerated(Exception):
    """An API answer the caller expects and treats as success (409 on create, 404 on delete)."""


@contextmanager
def api_errors(action: str, tolerate: tuple[int, ...] = ()) -> Iterator[None]:
    """Translate client and transport errors into driver errors.

    5xx, 429, 401, 403, status 0 (TLS and other client-side failures), timeouts and connection
    errors become `ClusterUnavailable`; statuses in `tolerate` raise the internal `_Tolerated`;
    other 4xx become `RequestRejected`. Two refusals concern one job, not the cluster, whatever
    their status: an admission webhook's denial (400, 403 or 422, "admission webhook ... denied
    the request") is a `RequestRejected`, and a ResourceQuota's (403, "exceeded quota") a
    `QuotaExceeded`. Any other 403 is the platform's own credentials or RBAC: the cluster's.
    """
    try:
        yield
    except ApiException as error:
        status = int(error.status or 0)
        if status in tolerate:
            raise _Tolerated() from None
        reason = f"{action}: HTTP {status} {error.reason or ''}".rstrip()
        message = _status_message(error.body)
        if status in (400, 403, 422) and all(part in message for part in ADMISSION_DENIED):
            raise RequestRejected(f"{reason}: {message}") from None  # whatever code it chose
        if status == 403 and QUOTA_EXCEEDED in message:
            raise QuotaExceeded(f"{reason}: {message}") from None
        if status == 0 or status >= 500 or status in (401, 403, 429):
            raise ClusterUnavailable(reason) from None
        raise RequestRejected(f"{reason}: {message}") from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise ClusterUnavailable(f"{action}: {type(error).__name__}: {error}") from None


def _status_message(body: Any) -> str:
    try:
        decoded = json.loads(body or "")
    except (ValueError, TypeError):
        return str(body or "")[:200]
    if isinstance(decoded, dict):
        return str(decoded.get("message", ""))[:500]
    return ""
