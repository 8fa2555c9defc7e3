"""Reading what a Kubernetes cluster reports (pure): its nodes, the platform's workers grouped
into workloads, and what pods the platform did not create hold on each node.

The driver's caches read each object once, when it arrives or changes (`parse_node`,
`read_pod`); `cluster_state` puts a cycle's `ClusterState` together from those readings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType
from typing import Any, NamedTuple

from queues.clusters import adopted, manifests
from queues.clusters.base import (
    ClusterState,
    NodeInfo,
    WorkerPhase,
    WorkerStatus,
    WorkloadStatus,
    workload_phase,
)
from queues.clusters.k8s_objects import add_counts, held_by_other, managed, parse_count

Manifest = dict[str, Any]
_POD_PHASES = MappingProxyType(
    {
        "Pending": WorkerPhase.PENDING,
        "Running": WorkerPhase.RUNNING,
        "Succeeded": WorkerPhase.SUCCEEDED,
        "Failed": WorkerPhase.FAILED,
    }
)


class PodReading(NamedTuple):
    """What `sync` needs of one pod (read once per change of the pod, `read_pod`): a worker of
    a platform job, or what a pod the platform did not create holds on its node."""

    job: tuple[str, str] | None = None  # (namespace, job id) of a platform worker
    worker: WorkerStatus | None = None
    held: tuple[str, dict[str, int]] | None = None  # (node, devices) of another workload
    # a worker of a kubectl-applied workload: the pod as its controller made it, whose worker
    # index is known only beside its siblings (adopted.worker_indexes)
    adopted_pod: Manifest | None = None


def read_pod(pod: Manifest) -> PodReading:
    job_id = _job_id(pod) if managed(pod) else ""
    if job_id:
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace", ""))
        of_adopted = adopted.WORKER_OFFSET_ANNOTATION in (metadata.get("annotations") or {})
        return PodReading(
            job=(namespace, job_id),
            worker=_worker_status(pod),
            adopted_pod=pod if of_adopted else None,
        )
    return PodReading(held=held_by_other(pod))


def cluster_state(nodes: Iterable[NodeInfo], pods: Iterable[PodReading]) -> ClusterState:
    """The nodes, each with what other workloads hold on it, and the platform's workloads."""
    pods = list(pods)
    other: dict[str, dict[str, int]] = {}
    for reading in pods:
        if reading.held is not None:
            add_counts(other.setdefault(reading.held[0], {}), reading.held[1])
    infos = sorted(
        (
            replace(node, other_usage=other[node.name]) if node.name in other else node
            for node in nodes
        ),
        key=_node_name,
    )
    return ClusterState(nodes=tuple(infos), workloads=_workloads(pods))


def parse_node(node: Manifest) -> NodeInfo:
    """A node's name, extended-resource capacity, labels, readiness and cordon."""
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    spec = node.get("spec") or {}
    allocatable = {
        resource: parse_count(quantity)
        for resource, quantity in (status.get("allocatable") or {}).items()
        if "/" in resource
    }
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return NodeInfo(
        name=str(metadata.get("name", "")),
        allocatable=allocatable,
        labels=dict(metadata.get("labels") or {}),
        ready=ready,
        unschedulable=bool(spec.get("unschedulable", False)),
    )


def workloads_from_pods(pods: Iterable[Manifest]) -> tuple[WorkloadStatus, ...]:
    """Group the platform's pods by job and summarise each job's workers (other pods, and the
    platform's without a job, are left out)."""
    return _workloads(read_pod(pod) for pod in pods)


def _workloads(pods: Iterable[PodReading]) -> tuple[WorkloadStatus, ...]:
    jobs: dict[tuple[str, str], list[PodReading]] = {}
    for reading in pods:
        if reading.job is not None and reading.worker is not None:
            jobs.setdefault(reading.job, []).append(reading)
    return tuple(
        _workload_status(job_id, namespace, _numbered(readings))
        for (namespace, job_id), readings in sorted(jobs.items())
    )


def _numbered(readings: list[PodReading]) -> list[WorkerStatus]:
    """The workers of one job; the pods a controller made for a kubectl-applied workload take
    their worker index from their place among their siblings."""
    workers = [r.worker for r in readings if r.worker is not None]
    controllers = [r.adopted_pod for r in readings if r.adopted_pod is not None]
    if not controllers:
        return workers
    indexes = adopted.worker_indexes(controllers)
    return [replace(w, index=indexes.get(w.pod_name, w.index)) for w in workers]


def _workload_status(job_id: str, namespace: str, found: list[WorkerStatus]) -> WorkloadStatus:
    workers = tuple(sorted(found, key=lambda w: w.index))
    phase = workload_phase(w.phase for w in workers)
    failed = [w for w in workers if w.phase is WorkerPhase.FAILED]
    notes = [f"worker {w.index}: {w.message}" for w in workers if w.message]
    if failed:
        message = f"{len(failed)} of {len(workers)} worker(s) failed"
        message = "; ".join([message, *notes])
    else:
        message = "; ".join(notes)
    return WorkloadStatus(
        job_id=job_id,
        namespace=namespace,
        phase=phase,
        workers=workers,
        failed_workers=len(failed),
        message=message,
    )


def _worker_status(pod: Manifest) -> WorkerStatus:
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    phase = _POD_PHASES.get(str(status.get("phase", "Pending")), WorkerPhase.UNKNOWN)
    node = spec.get("nodeName") or (metadata.get("annotations") or {}).get(
        manifests.PLANNED_NODE_ANNOTATION, ""
    )
    return WorkerStatus(
        index=_worker_index(pod),
        pod_name=str(metadata.get("name", "")),
        node=str(node),
        phase=phase,
        terminating=_terminating(pod),
        message=_pod_message(status),
        reason=str(status.get("reason") or ""),
        restarts=sum(
            parse_count(container.get("restartCount", 0))
            for container in status.get("containerStatuses") or []
        ),
    )


def _pod_message(status: Manifest) -> str:
    """The most telling reason a pod gives: its own, a waiting or failed container's, or why it
    is not scheduled."""
    if status.get("reason") or status.get("message"):
        return ": ".join(str(s) for s in (status.get("reason"), status.get("message")) if s)
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            detail = state.get(key) or {}
            reason = detail.get("reason")
            if reason and reason not in ("ContainerCreating", "Completed", "PodInitializing"):
                return ": ".join(str(s) for s in (reason, detail.get("message")) if s)
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            reason = condition.get("reason") or "Unschedulable"
            return ": ".join(str(s) for s in (reason, condition.get("message")) if s)
    return ""


def _job_id(obj: Manifest) -> str:
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    return str(annotations.get(manifests.JOB_ID_ANNOTATION) or labels.get(manifests.JOB_LABEL, ""))


def _owned_by_job(obj: Manifest, job_id: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(manifests.MANAGED_BY_KEY) == manifests.MANAGED_BY and _job_id(obj) == job_id


def _worker_index(pod: Manifest) -> int:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    try:
        return int(labels.get(manifests.WORKER_LABEL, -1))
    except (TypeError, ValueError):
        return -1


def _terminating(obj: Manifest) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _node_name(node: NodeInfo) -> str:
    return node.name
