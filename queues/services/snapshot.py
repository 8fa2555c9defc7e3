"""The engine's snapshot, built from the database in a fixed number of queries.

Engine names: a job is ``str(job.pk)``, a queue ``"<team>/<queue>"``, a cluster, node, flavor
and service class their own unique names. ``LiveSnapshot`` keeps the rows behind those names so
that the decisions can be applied to them.

A job holds GPUs (and is an ``AdmittedJob`` of the snapshot) while it is admitted or running,
and while it is stopping: preempted and waiting for its grace period, or cancelled / failed with
its ``runtime.release_at`` still ahead.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from queues.models import (
    Cluster,
    Flavor,
    Job,
    JobFlavor,
    JobRuntime,
    Node,
    Queue,
    ServiceClass,
)
from queues.scheduling import model as engine
from queues.scheduling.fairshare import DEFAULT_HALF_LIFE

HOLDING_STATES = ("admitted", "running", "preempted")
ACTIVE_STATES = ("pending", *HOLDING_STATES)
# Node label keys that form topology domains, outermost first (jobs may name others too).
TOPOLOGY_LEVELS = ("topology.kubernetes.io/zone", "block", "rack", "kubernetes.io/hostname")
DEFAULT_RUNTIME = 3600.0


def queue_key(queue: Queue) -> str:
    return f"{queue.team.name}/{queue.name}"


def ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


@dataclass
class LiveSnapshot:
    """The engine's snapshot plus the rows behind its names."""

    now: datetime
    snapshot: engine.Snapshot
    jobs: dict[str, Job]  # engine job name -> job (with queue, team, class, runtime loaded)
    flavors: dict[str, Flavor]
    flavor_names: dict[int, str]
    clusters: dict[str, Cluster]
    queues: dict[str, Queue]


def relevant_jobs(now: datetime) -> QuerySet[Job]:
    """Pending jobs and every job that holds GPUs at ``now``."""
    return Job.objects.filter(Q(state__in=ACTIVE_STATES) | Q(runtime__release_at__gt=now))


def build_snapshot(now: datetime) -> LiveSnapshot:
    """Read everything the engine needs: 8 queries, whatever the number of jobs."""
    flavors = {f.name: f for f in Flavor.objects.all()}
    flavor_names = {f.pk: f.name for f in flavors.values()}
    classes = list(ServiceClass.objects.all())
    clusters = {c.name: c for c in Cluster.objects.all()}
    nodes_by_cluster: dict[int, list[Node]] = defaultdict(list)
    for node in Node.objects.all():
        nodes_by_cluster[node.cluster_id].append(node)
    queues = {
        queue_key(q): q
        for q in Queue.objects.select_related("team", "cohort").prefetch_related("quotas")
    }
    jobs_qs = relevant_jobs(now)
    jobs = list(
        jobs_qs.select_related("queue__team", "service_class", "runtime", "cluster").order_by("pk")
    )
    ranked: dict[int, list[str]] = defaultdict(list)
    links = JobFlavor.objects.filter(job__in=jobs_qs.values("pk")).order_by("job_id", "rank")
    for job_id, flavor_id in links.values_list("job_id", "flavor_id"):
        ranked[job_id].append(flavor_names[flavor_id])

    levels = list(TOPOLOGY_LEVELS)
    for job in jobs:
        if job.topology_level and job.topology_level not in levels:
            levels.append(job.topology_level)

    pending: list[engine.PendingJob] = []
    admitted: list[engine.AdmittedJob] = []
    by_name: dict[str, Job] = {}
    for job in jobs:
        name = str(job.pk)
        by_name[name] = job
        if job.state == Job.State.PENDING:
            pending.append(_pending(job, ranked[job.pk]))
        elif job.cluster is not None:
            admitted.append(_admitted(job, ranked[job.pk], flavor_names, now))

    snapshot = engine.Snapshot(
        now=now.timestamp(),
        flavors=tuple(
            engine.Flavor(name=f.name, resource=f.resource, gpu_equivalent=f.gpu_equivalent)
            for f in flavors.values()
        ),
        clusters=tuple(
            engine.Cluster(
                name=c.name,
                nodes=tuple(_node(n, c) for n in nodes_by_cluster.get(c.pk, [])),
            )
            for c in clusters.values()
        ),
        service_classes=tuple(
            engine.ServiceClass(
                name=c.name,
                priority=c.priority,
                preemptible=c.preemptible,
                can_borrow=c.can_borrow,
                min_runtime=float(c.min_runtime),
                grace_period=float(c.grace_period),
                max_runtime=None if c.max_runtime is None else float(c.max_runtime),
            )
            for c in classes
        ),
        queues=tuple(
            engine.Queue(
                name=key,
                team=q.team.name,
                cohort=q.cohort.name if q.cohort is not None else None,
                weight=q.weight,
                decayed_usage=q.decayed_usage,
                quotas={
                    flavor_names[quota.flavor_id]: engine.Quota(
                        nominal=quota.nominal,
                        borrowing_limit=quota.borrowing_limit,
                        lending_limit=quota.lending_limit,
                    )
                    for quota in q.quotas.all()
                },
            )
            for key, q in queues.items()
        ),
        admitted=tuple(admitted),
        pending=tuple(pending),
        topology_levels=tuple(levels),
        default_runtime=DEFAULT_RUNTIME,
        half_life=DEFAULT_HALF_LIFE,
    )
    return LiveSnapshot(
        now=now,
        snapshot=snapshot,
        jobs=by_name,
        flavors=flavors,
        flavor_names=flavor_names,
        clusters=clusters,
        queues=queues,
    )


def _node(node: Node, cluster: Cluster) -> engine.Node:
    """A NotReady node counts as failed; a cordoned one, or any node of a cluster that could
    not be reached this cycle, takes no new work (its running jobs stay)."""
    return engine.Node(
        name=node.name,
        capacity=dict(node.capacity),
        labels=dict(node.labels),
        schedulable=node.schedulable and cluster.status != Cluster.Status.DEGRADED,
        failed=not node.ready,
    )


def _topology(job: Job) -> engine.Topology | None:
    if not job.topology_level:
        return None
    return engine.Topology(level=job.topology_level, required=job.topology_mode == "required")


def _min_workers(job: Job) -> int | None:
    return job.min_workers if job.is_elastic else None


def _runtime(job: Job) -> JobRuntime | None:
    try:
        return job.runtime
    except JobRuntime.DoesNotExist:
        return None


def _pending(job: Job, flavors: list[str]) -> engine.PendingJob:
    return engine.PendingJob(
        name=str(job.pk),
        queue=queue_key(job.queue),
        service_class=job.service_class.name,
        submitted_at=job.submitted_at.timestamp(),
        workers=job.workers,
        gpus_per_worker=job.gpus_per_worker,
        flavors=tuple(flavors),
        min_workers=_min_workers(job),
        topology=_topology(job),
        estimated_runtime=None if job.estimated_runtime is None else float(job.estimated_runtime),
    )


def _admitted(
    job: Job, flavors: list[str], flavor_names: dict[int, str], now: datetime
) -> engine.AdmittedJob:
    runtime = _runtime(job)
    flavor = ""
    if runtime is not None and runtime.flavor_id is not None:
        flavor = flavor_names[runtime.flavor_id]
    elif flavors:
        flavor = flavors[0]
    g = job.gpus_per_worker
    placement = {node: int(count) * g for node, count in sorted(job.placement.items())}
    workers = sum(int(c) for c in job.placement.values())
    release_at = runtime.release_at if runtime is not None else None
    stopping = job.state == Job.State.PREEMPTED or job.is_finished
    return engine.AdmittedJob(
        name=str(job.pk),
        queue=queue_key(job.queue),
        service_class=job.service_class.name,
        submitted_at=job.submitted_at.timestamp(),
        cluster=job.cluster.name if job.cluster is not None else "",
        flavor=flavor,
        gpus_per_worker=g,
        workers=workers,
        placement=placement,
        started_at=ts(job.started_at),
        requested_workers=job.workers if job.is_elastic else None,
        min_workers=_min_workers(job),
        topology=_topology(job),
        estimated_runtime=None if job.estimated_runtime is None else float(job.estimated_runtime),
        start_at=ts(runtime.start_at) if runtime is not None and not stopping else None,
        stopping=stopping,
        release_at=ts(release_at if release_at is not None else now) if stopping else None,
        held_for=(
            str(runtime.stop_by_id)
            if stopping and runtime is not None and runtime.stop_by_id is not None
            else None
        ),
    )
