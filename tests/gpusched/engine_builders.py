"""Small builders for engine snapshots and scenarios used by the engine tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpusched.engine.model import (
    AdmittedJob,
    Cluster,
    Flavor,
    Node,
    PendingJob,
    Queue,
    Quota,
    ServiceClass,
    Snapshot,
    Topology,
)
from gpusched.sim.scenario import Scenario, parse_scenario

STD = ServiceClass("std", priority=100, preemptible=True, can_borrow=True)
LOW = ServiceClass("low", priority=10, preemptible=True, can_borrow=True)
HIGH = ServiceClass("high", priority=500, preemptible=True, can_borrow=True)
PROD = ServiceClass("prod", priority=1000, preemptible=False, can_borrow=False)
CLASSES = (STD, LOW, HIGH, PROD)


def nodes(prefix: str, count: int, gpus: Mapping[str, int], **labels: str) -> list[Node]:
    return [Node(f"{prefix}{i}", dict(gpus), dict(labels)) for i in range(count)]


def queue(
    name: str,
    nominal: int | Mapping[str, int],
    cohort: str | None = None,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
    weight: float = 1.0,
    decayed_usage: float = 0.0,
) -> Queue:
    nominals = {"h100": nominal} if isinstance(nominal, int) else dict(nominal)
    quotas = {
        f: Quota(n, borrowing_limit=borrowing_limit, lending_limit=lending_limit)
        for f, n in nominals.items()
    }
    return Queue(name, quotas, team=name, cohort=cohort, weight=weight, decayed_usage=decayed_usage)


def pending(
    name: str,
    queue: str,
    gpus: int = 1,
    workers: int = 1,
    cls: str = "std",
    submitted_at: float = 0.0,
    flavors: tuple[str, ...] = ("h100",),
    min_workers: int | None = None,
    topology: Topology | None = None,
    estimated_runtime: float | None = None,
    stops: int = 0,
) -> PendingJob:
    return PendingJob(
        name=name,
        queue=queue,
        service_class=cls,
        submitted_at=submitted_at,
        workers=workers,
        gpus_per_worker=gpus,
        flavors=flavors,
        min_workers=min_workers,
        topology=topology,
        estimated_runtime=estimated_runtime,
        stops=stops,
    )


def running(
    name: str,
    queue: str,
    placement: Mapping[str, int],
    gpus: int = 1,
    cls: str = "std",
    started_at: float = 0.0,
    flavor: str = "h100",
    cluster: str = "c",
    min_workers: int | None = None,
    requested_workers: int | None = None,
    estimated_runtime: float | None = None,
    **extra: Any,
) -> AdmittedJob:
    workers = sum(placement.values()) // gpus
    return AdmittedJob(
        name=name,
        queue=queue,
        service_class=cls,
        submitted_at=started_at,
        cluster=cluster,
        flavor=flavor,
        gpus_per_worker=gpus,
        workers=workers,
        placement=dict(placement),
        started_at=started_at,
        requested_workers=requested_workers,
        min_workers=min_workers,
        estimated_runtime=estimated_runtime,
        **extra,
    )


def snapshot(
    node_list: Iterable[Node],
    queues: Iterable[Queue],
    admitted: Iterable[AdmittedJob] = (),
    pending_jobs: Iterable[PendingJob] = (),
    now: float = 1000.0,
    classes: Iterable[ServiceClass] = CLASSES,
    flavors: Iterable[Flavor] = (Flavor("h100"),),
    clusters: Iterable[Cluster] | None = None,
    topology_levels: tuple[str, ...] = (),
) -> Snapshot:
    return Snapshot(
        now=now,
        flavors=tuple(flavors),
        clusters=tuple(clusters) if clusters is not None else (Cluster("c", tuple(node_list)),),
        service_classes=tuple(classes),
        queues=tuple(queues),
        admitted=tuple(admitted),
        pending=tuple(pending_jobs),
        topology_levels=topology_levels,
    )


def scenario(jobs: list[dict[str, Any]], **overrides: Any) -> Scenario:
    """One cluster of two 8-GPU h100 nodes, one queue q (nominal 16), classes std/low/prod."""
    data: dict[str, Any] = {
        "name": "test",
        "cycle_interval": 10,
        "flavors": [{"name": "h100", "resource": "nvidia.com/gpu"}],
        "clusters": [
            {"name": "main", "nodes": [{"name_prefix": "n", "count": 2, "gpus": {"h100": 8}}]}
        ],
        "service_classes": [
            {"name": "std", "priority": 100, "preemptible": True, "can_borrow": True},
            {"name": "low", "priority": 10, "preemptible": True, "can_borrow": True},
            {"name": "prod", "priority": 1000, "preemptible": False, "can_borrow": False},
        ],
        "queues": [{"name": "q", "quotas": {"h100": {"nominal": 16}}}],
        "jobs": [
            {
                "queue": "q",
                "class": "std",
                "workers": 1,
                "gpus_per_worker": 1,
                "flavor": "h100",
                "duration": 100,
                **j,
            }
            for j in jobs
        ],
    }
    data.update(overrides)
    return parse_scenario(data, source="test")
