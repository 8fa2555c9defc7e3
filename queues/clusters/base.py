"""The interface every cluster driver implements, and the plain data it speaks.

Drivers take and return frozen dataclasses only: no Django, no ORM. The service layer maps
database rows to a `LaunchSpec` and the `ClusterState` a driver reports back to rows.

Errors: every driver raises `ClusterUnavailable` when the cluster cannot be reached or refuses
to talk to us (server errors, timeouts, connection refused, bad credentials). The caller marks
the cluster degraded and retries next cycle; nothing was decided, nothing is lost. The cluster
may also refuse one job while staying healthy: `QuotaExceeded` (a namespace ResourceQuota has no
room for the job's workers now: requeue the job, try later) and `RequestRejected` (the request
itself was refused, by validation or an admission webhook: retrying it unchanged will not help).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable


class DriverError(Exception):
    """Base of every error a cluster driver raises."""


class ClusterUnavailable(DriverError):
    """The cluster could not be reached or answered with an error that is not ours to fix.

    HTTP 5xx and 429, 401/403 (credentials), timeouts, connection refused, TLS failures. The
    caller marks the cluster degraded and retries on the next cycle.
    """


class InvalidSpec(DriverError, ValueError):
    """A launch spec that cannot be turned into a workload; the message names the field."""


class RequestRejected(DriverError):
    """The cluster rejected a request as invalid (HTTP 400/422 and other 4xx we do not expect),
    or an admission webhook denied it (whatever its status). The cluster itself is healthy."""


class QuotaExceeded(DriverError):
    """A create was refused because a ResourceQuota of the namespace is used up (HTTP 403
    "exceeded quota"). The cluster is healthy and the request valid: it may fit later, once the
    namespace's other pods are gone. The message is the API server's."""


class WorkloadConflict(DriverError):
    """A pod or service with the workload's name exists but is not the one we asked for.

    Typically the pods of a previous run of the same job are still terminating after a stop.
    Retry the launch after they are gone.
    """


class WorkerPhase(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"  # the kubelet stopped reporting (node unreachable)


# Pod status reasons of a worker that did not fail on its own: evicted by the kubelet (node
# pressure) or through the eviction API (a drain), preempted by the kubelet for a critical pod,
# or stopped by a graceful node shutdown.
DISRUPTION_REASONS = frozenset({"Evicted", "Preempting", "Shutdown", "NodeShutdown", "Terminated"})


class WorkloadPhase(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class NodeInfo:
    """One node as the scheduler needs it.

    `allocatable` holds the integer capacity per extended resource name, e.g.
    ``{"nvidia.com/gpu": 8}`` or, for a node in MIG mixed mode,
    ``{"nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 2}``. `other_usage` holds, per
    resource name too, what pods the platform did not create (another team's service, a
    DaemonSet, anything on a shared cluster) request on the node while they run: the platform
    may place only ``allocatable - other_usage``.
    """

    name: str
    allocatable: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = True
    unschedulable: bool = False  # cordoned (spec.unschedulable)
    other_usage: Mapping[str, int] = field(default_factory=dict)

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.unschedulable


@dataclass(frozen=True)
class FlavorDefinition:
    """How a platform flavor shows up on nodes: a resource name plus optional node labels."""

    name: str
    resource_name: str
    node_selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerPlacement:
    """Worker `index` (0-based, the rank) planned on node `node`."""

    index: int
    node: str


@dataclass(frozen=True)
class EnvVar:
    """One environment variable of the job's container: a literal ``value``, or (with
    ``secret_name``) the value of key ``secret_key`` of a Secret of the team's namespace."""

    name: str
    value: str = ""
    secret_name: str = ""
    secret_key: str = ""


class VolumeKind(StrEnum):
    """The volumes a job may mount (their Kubernetes field names)."""

    PVC = "persistentVolumeClaim"
    CONFIG_MAP = "configMap"
    SECRET = "secret"
    EMPTY_DIR = "emptyDir"


@dataclass(frozen=True)
class Volume:
    """A volume of each worker and where the container mounts it. ``source`` names the claim,
    ConfigMap or Secret (empty for an emptyDir, which may have a ``medium`` and a
    ``size_limit``)."""

    name: str
    kind: VolumeKind
    mount_path: str
    source: str = ""
    read_only: bool = False
    medium: str = ""
    size_limit: str = ""


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    seconds: int | None = None  # tolerationSeconds (NoExecute only)


@dataclass(frozen=True)
class Resources:
    """CPU and memory of each worker as Kubernetes quantities; "" leaves one unset. The limits
    are the requests unless given (and then at least the requests)."""

    cpu: str = ""
    memory: str = ""
    cpu_limit: str = ""
    memory_limit: str = ""

    @property
    def requests(self) -> dict[str, str]:
        return {
            name: value for name, value in (("cpu", self.cpu), ("memory", self.memory)) if value
        }

    @property
    def limits(self) -> dict[str, str]:
        pairs = (("cpu", self.cpu_limit or self.cpu), ("memory", self.memory_limit or self.memory))
        return {name: value for name, value in pairs if value}


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a driver needs to start (or rescale) one job's workers.

    `workers` lists the workers that should exist, each with the node the engine planned for
    it; `scale` adds the missing ones and removes the others. `gang_size` is the job's full
    gang (`workers` of the job); for an elastic job `min_workers` is set and `workers` may hold
    any count between the two.
    """

    job_id: str
    job_name: str
    team: str
    queue: str
    service_class: str
    image: str
    resource_name: str
    gpus_per_worker: int
    workers: tuple[WorkerPlacement, ...]
    gang_size: int
    grace_period_seconds: int = 30
    min_workers: int | None = None
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    flavor: str = ""
    # the job's spec (queues/models/job_spec.py), rendered by manifests.pod_manifest
    env_vars: tuple[EnvVar, ...] = ()  # after `env`, in this order
    volumes: tuple[Volume, ...] = ()
    shm_size: str = ""  # an emptyDir of medium Memory at /dev/shm with this size limit
    resources: Resources = field(default_factory=Resources)
    image_pull_secret: str = ""
    tolerations: tuple[Toleration, ...] = ()  # besides the platform's nvidia.com/gpu one
    working_dir: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    host_network: bool = False
    allow_privilege_escalation: bool | None = None  # None: the cluster's default
    array: tuple[str, int] | None = None  # a job array's (array id, this job's index)

    @property
    def elastic(self) -> bool:
        return self.min_workers is not None


@dataclass(frozen=True)
class WorkerStatus:
    index: int
    pod_name: str
    node: str  # where it runs, else the node it is pinned to; "" when unknown
    phase: WorkerPhase
    terminating: bool = False  # deletion requested, grace period running
    message: str = ""  # e.g. "ImagePullBackOff: ..." or the pod's failure reason
    reason: str = ""  # the pod's own status reason, e.g. "Evicted" (see `DISRUPTION_REASONS`)
    restarts: int = 0  # container restarts the kubelet made in this pod (restartCount)

    @property
    def disrupted(self) -> bool:
        """Failed because something outside the job took the pod away (an eviction, a node
        shutdown), not because the job's own code failed."""
        return self.phase is WorkerPhase.FAILED and self.reason in DISRUPTION_REASONS


@dataclass(frozen=True)
class WorkloadStatus:
    """What a cluster reports about one job's workers."""

    job_id: str
    namespace: str
    phase: WorkloadPhase
    workers: tuple[WorkerStatus, ...]
    failed_workers: int
    message: str = ""


MAX_LOG_LINES = 5000  # the most log lines of one worker a driver is asked for


@dataclass(frozen=True)
class WorkerLog:
    """One worker of a job as its pod is now, with the last lines of its log.

    `worker` is None when the worker has no pod (never made, deleted, or gone with the job).
    `lines` holds at most the `tail_lines` asked for, oldest first, without line ends; `note`
    says why there are none when it is not obvious (the container has not started yet).
    """

    index: int
    worker: WorkerStatus | None
    lines: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class ClusterState:
    nodes: tuple[NodeInfo, ...]
    workloads: tuple[WorkloadStatus, ...]

    def workload(self, job_id: str) -> WorkloadStatus | None:
        return next((w for w in self.workloads if w.job_id == job_id), None)


@runtime_checkable
class ClusterDriver(Protocol):
    """What the service layer may ask of a cluster. Every method may raise `ClusterUnavailable`."""

    def sync(self) -> ClusterState:
        """Read nodes and the workloads the platform owns."""
        ...

    def launch(self, spec: LaunchSpec) -> None:
        """Create the job's namespace, workers and (multi-worker or elastic) service.

        Idempotent: launching a workload that already exists as asked is not an error.
        """
        ...

    def stop(self, job_id: str, namespace: str, grace_period_seconds: int) -> None:
        """Delete the job's workers gracefully. A workload that is already gone is fine."""
        ...

    def scale(self, spec: LaunchSpec) -> None:
        """Add missing workers and remove surplus ones (highest index first) to match `spec`."""
        ...

    def worker_logs(
        self, job_id: str, namespace: str, worker_index: int | None, tail_lines: int
    ) -> tuple[WorkerLog, ...]:
        """The job's workers as their pods are now, by index, each with the last `tail_lines`
        (0 to `MAX_LOG_LINES`; 0: the status only, no log read) lines of its log.

        `worker_index` None: every worker that has a pod; else that worker only, a
        `WorkerLog` with `worker=None` when it has no pod. A pod whose container has not
        started has no lines and a `note` saying so: that is not an error. Reads only.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def workload_phase(phases: Iterable[WorkerPhase]) -> WorkloadPhase:
    """The job's phase from its workers' phases: one failed worker fails the whole gang.

    Succeeded only when every worker succeeded; running when every worker has started (running,
    succeeded, or unknown because its node stopped reporting); otherwise pending.
    """
    seen = list(phases)
    if not seen:
        return WorkloadPhase.PENDING
    if WorkerPhase.FAILED in seen:
        return WorkloadPhase.FAILED
    if all(p is WorkerPhase.SUCCEEDED for p in seen):
        return WorkloadPhase.SUCCEEDED
    if WorkerPhase.PENDING in seen:
        return WorkloadPhase.PENDING
    return WorkloadPhase.RUNNING


def node_flavor_capacity(node: NodeInfo, flavors: Iterable[FlavorDefinition]) -> dict[str, int]:
    """Capacity per flavor name that `node` offers, ignoring whether it is schedulable.

    A flavor matches when the node exposes its resource and carries every label of its node
    selector. Each resource of the node counts for one flavor only: when several flavors match
    the same resource (say a generic ``gpu`` flavor and an ``h100`` flavor selecting on
    ``nvidia.com/gpu.product``), the one with the most selector labels wins, then the first
    name in sort order. Flavors with zero capacity are left out.
    """
    return {f.name: node.allocatable[resource] for resource, f in _flavor_of(node, flavors).items()}


def node_flavor_other_usage(node: NodeInfo, flavors: Iterable[FlavorDefinition]) -> dict[str, int]:
    """What other workloads hold on `node`, per flavor name, with the resource-to-flavor mapping
    of `node_flavor_capacity` (never more than the flavor's capacity; zeros left out)."""
    out = {}
    for resource, flavor in _flavor_of(node, flavors).items():
        held = min(node.other_usage.get(resource, 0), node.allocatable[resource])
        if held > 0:
            out[flavor.name] = held
    return out


def _flavor_of(node: NodeInfo, flavors: Iterable[FlavorDefinition]) -> dict[str, FlavorDefinition]:
    """The flavor each resource of `node` counts for (see `node_flavor_capacity`)."""
    best: dict[str, FlavorDefinition] = {}
    for flavor in flavors:
        if node.allocatable.get(flavor.resource_name, 0) <= 0:
            continue
        if any(node.labels.get(key) != value for key, value in flavor.node_selector.items()):
            continue
        current = best.get(flavor.resource_name)
        if current is None or _specificity(flavor) < _specificity(current):
            best[flavor.resource_name] = flavor
    return best


def _specificity(flavor: FlavorDefinition) -> tuple[int, str]:
    return (-len(flavor.node_selector), flavor.name)
