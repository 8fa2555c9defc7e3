"""The engine's snapshot, built from the database in a fixed number of queries.

Engine names: a job is ``str(job.pk)``, a queue ``"<team>/<queue>"``, a cluster, node, flavor
and service class their own unique names. ``LiveSnapshot`` keeps the rows behind those names so
that the decisions can be applied to them.

A job holds GPUs (and is an ``AdmittedJob`` of the snapshot) while it is admitted or running,
and while it is stopping: preempted and waiting for its grace period, or cancelled / failed with
its ``runtime.release_at`` still ahead. A pending job whose gang was requeued with backoff
(``runtime.requeue_after`` ahead, queues/services/gang.py) is left out until then.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from operator import itemgetter
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Q, QuerySet

from gpuplatform.fast_rows import fetched, json_value
from gpusched.engine import model as engine
from gpusched.engine.fairshare import DEFAULT_HALF_LIFE
from gpusched.engine.snapshot_keep import SnapshotKeep
from queues.models import (
    Cluster,
    Cohort,
    Flavor,
    Job,
    JobFlavor,
    JobRuntime,
    Node,
    Queue,
    ServiceClass,
)
from queues.services import clock

HOLDING_STATES = ("admitted", "running", "preempted")
ACTIVE_STATES = ("pending", *HOLDING_STATES)
# Node label keys that form topology domains, outermost first (jobs may name others too).
TOPOLOGY_LEVELS = ("topology.kubernetes.io/zone", "block", "rack", "kubernetes.io/hostname")
DEFAULT_RUNTIME = 3600.0
BACKOFF_REASON = "backoff"  # the pending reason of a gang waiting out its requeue backoff
JOB_COLUMNS = (
    "pk",
    "name",
    "state",
    "queue_id",
    "service_class_id",
    "workers",
    "min_workers",
    "gpus_per_worker",
    "topology_level",
    "topology_mode",
    "estimated_runtime",
    "submitted_at",
    "started_at",
    "cluster_id",
    "placement",
    "runtime__flavor_id",
    "runtime__start_at",
    "runtime__release_at",
    "runtime__stop_by_id",
    "runtime__pending_reason",
    "runtime__pending_message",
    "runtime__requeue_after",
    "runtime__pending_position",
    "runtime__pending_within_nominal",
    "workload_ref__cluster_id",
    "preemption_count",
    "checkpoint_interval",
)
PLACEMENT = JOB_COLUMNS.index("placement")


def queue_key(queue: Queue) -> str:
    return f"{queue.team.name}/{queue.name}"


def ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


class JobRow(NamedTuple):
    """The columns of one job the cycle reads (model instances are too slow for 5,000 jobs)."""

    pk: int
    name: str
    state: str
    queue_id: int
    service_class_id: int
    workers: int
    min_workers: int | None
    gpus_per_worker: int
    topology_level: str
    topology_mode: str
    estimated_runtime: int | None
    submitted_at: datetime
    started_at: datetime | None
    cluster_id: int | None
    placement: dict[str, int]
    flavor_id: int | None  # runtime: the admitted flavor
    start_at: datetime | None  # runtime
    release_at: datetime | None  # runtime
    stop_by_id: int | None  # runtime
    pending_reason: str | None  # runtime (None: the job has no runtime row yet)
    pending_message: str | None
    requeue_after: datetime | None  # runtime: a requeued gang's backoff (queues/services/gang.py)
    pending_position: int | None  # runtime: its rank in its queue at the last cycle
    pending_within_nominal: bool | None  # runtime: ranked within nominal at the last cycle
    applied_to: int | None  # taken in from a kubectl-applied workload on this cluster
    preemption_count: int  # times stopped and requeued so far
    checkpoint_interval: int | None

    @property
    def label(self) -> str:
        return f"{self.name} (#{self.pk})"

    def requeue_after_is_ahead(self, now: datetime) -> bool:
        return self.requeue_after is not None and self.requeue_after > now

    @property
    def elastic_min(self) -> int | None:
        if self.min_workers is not None and self.min_workers < self.workers:
            return self.min_workers
        return None

    @property
    def topology(self) -> engine.Topology | None:
        if not self.topology_level:
            return None
        return engine.Topology(self.topology_level, required=self.topology_mode == "required")


# The columns a pending job's engine object is made from (``SnapshotKeep.made``'s inputs): all
# but its last explanation, which the cycle rewrites and ``_pending`` does not read. A column
# added to ``JobRow`` counts unless it is listed here.
NOT_PENDING_INPUTS = frozenset(
    {"pending_reason", "pending_message", "pending_position", "pending_within_nominal"}
)
PENDING_INPUTS = itemgetter(
    *(i for i, name in enumerate(JobRow._fields) if name not in NOT_PENDING_INPUTS)
)


@dataclass
class LiveSnapshot:
    """The engine's snapshot plus the rows behind its names."""

    now: datetime
    snapshot: engine.Snapshot
    jobs: dict[str, JobRow]  # engine job name -> its row
    flavors: dict[str, Flavor]
    flavor_names: dict[int, str]
    clusters: dict[str, Cluster]
    queues: dict[str, Queue]


def relevant_jobs(now: datetime) -> QuerySet[Job]:
    """Pending jobs and every job that holds GPUs at ``now`` (both parts use an index)."""
    releasing = JobRuntime.objects.filter(release_at__gt=now).values("job_id")
    return Job.objects.filter(Q(state__in=ACTIVE_STATES) | Q(pk__in=releasing))


def topology_levels(requested: Iterable[str], labelled: Collection[str]) -> tuple[str, ...]:
    """The topology levels that take part in placement: the standard ones and those jobs ask
    for, in that order, less any level no node is labelled with. Domains nest (a rack inside a
    block inside a zone): a level no node carries would blank every level below it, so a job
    asking for it is placed as if it had asked for no topology."""
    levels = list(TOPOLOGY_LEVELS)
    for level in requested:
        if level and level not in levels:
            levels.append(level)
    return tuple(level for level in levels if level in labelled)


def cohort_tree(flavor_names: dict[int, str]) -> tuple[engine.Cohort, ...]:
    """Every cohort with its parent and own quotas (docs/SCHEDULING.md section 2a); cohorts
    with neither mean what flat cohorts always did."""
    return tuple(
        engine.Cohort(
            name=c.name,
            parent=c.parent.name if c.parent is not None else None,
            weight=c.weight,
            quotas={
                flavor_names[quota.flavor_id]: engine.Quota(
                    nominal=quota.nominal,
                    borrowing_limit=quota.borrowing_limit,
                    lending_limit=quota.lending_limit,
                )
                for quota in c.quotas.all()
            },
        )
        for c in Cohort.objects.select_related("parent").prefetch_related("quotas").order_by("name")
    )


def build_snapshot(now: datetime, keep: SnapshotKeep | None = None) -> LiveSnapshot:
    """Read everything the engine needs: 10 queries, whatever the number of jobs.

    ``keep``: the caller's ``SnapshotKeep`` (the live cycle's); a pending job whose inputs are
    the same as last cycle's is not built again."""
    flavors = {f.name: f for f in Flavor.objects.all()}
    flavor_names = {f.pk: f.name for f in flavors.values()}
    classes = {c.pk: c for c in ServiceClass.objects.all()}
    # a class's empty preemption_protection: the platform default
    protection = int(getattr(settings, "PREEMPTION_PROTECTION_SECONDS", 0))
    clusters = {c.name: c for c in Cluster.objects.all()}
    cluster_names = {c.pk: c.name for c in clusters.values()}
    nodes_by_cluster: dict[int, list[Node]] = defaultdict(list)
    for node in Node.objects.all():
        nodes_by_cluster[node.cluster_id].append(node)
    queues = {
        queue_key(q): q
        for q in Queue.objects.select_related("team", "cohort").prefetch_related("quotas")
    }
    queue_names = {q.pk: key for key, q in queues.items()}
    jobs_qs = relevant_jobs(now)
    rows = [
        _job_row(values) for values in fetched(jobs_qs.order_by("pk").values_list(*JOB_COLUMNS))
    ]
    ranked: dict[int, list[str]] = defaultdict(list)
    links = JobFlavor.objects.filter(job__in=jobs_qs.values("pk")).order_by("job_id", "rank")
    for job_id, flavor_id in links.values_list("job_id", "flavor_id"):
        ranked[job_id].append(flavor_names[flavor_id])

    labelled = {key for nodes in nodes_by_cluster.values() for n in nodes for key in n.labels}
    # runtimes in wall seconds: a simulated cluster runs jobs SIMULATION_SPEED times faster
    scale = clock.pending_scale(c.driver for c in clusters.values())
    cluster_scale = {c.pk: clock.cluster_scale(c.driver) for c in clusters.values()}
    levels = topology_levels([row.topology_level for row in rows], labelled)

    pending: list[engine.PendingJob] = []
    admitted: list[engine.AdmittedJob] = []
    by_name: dict[str, JobRow] = {}
    for row in rows:
        by_name[str(row.pk)] = row
        queue = queue_names[row.queue_id]
        cls = classes[row.service_class_id].name
        if row.state == Job.State.PENDING:
            if row.pending_reason == BACKOFF_REASON and row.requeue_after_is_ahead(now):
                continue  # backing off after a gang requeue: not a candidate yet
            only = () if row.applied_to is None else (cluster_names[row.applied_to],)
            acceptable = ranked[row.pk]
            if keep is None:
                pending.append(_pending(row, queue, cls, acceptable, scale, only))
            else:
                inputs = (PENDING_INPUTS(row), queue, cls, tuple(acceptable), scale, only)
                make = partial(_pending, row, queue, cls, acceptable, scale, only)
                pending.append(keep.made(str(row.pk), inputs, make))
        elif row.cluster_id is not None:
            cluster = cluster_names[row.cluster_id]
            admitted.append(
                _admitted(
                    row, queue, cls, cluster, ranked[row.pk], flavor_names, now,
                    cluster_scale[row.cluster_id],
                )
            )  # fmt: skip

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
                min_runtime=clock.wall_seconds(c.min_runtime, scale) or 0.0,
                grace_period=clock.wall_seconds(c.grace_period, scale) or 0.0,
                max_runtime=clock.wall_seconds(c.max_runtime, scale),
                preemption_protection=float(
                    protection if c.preemption_protection is None else c.preemption_protection
                )
                * scale,
            )
            for c in classes.values()
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
        cohorts=cohort_tree(flavor_names),
        topology_levels=levels,
        default_runtime=float(getattr(settings, "DEFAULT_JOB_RUNTIME", DEFAULT_RUNTIME)) * scale,
        half_life=float(getattr(settings, "FAIRSHARE_HALF_LIFE", DEFAULT_HALF_LIFE)),
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


def _job_row(values: tuple[Any, ...]) -> JobRow:
    """A job's row from ``fast_rows.fetched``: its placement decoded here (on PostgreSQL it comes
    as text; most rows are pending jobs' empty ones)."""
    placement = values[PLACEMENT]
    if isinstance(placement, str):
        values = (*values[:PLACEMENT], json_value(placement), *values[PLACEMENT + 1 :])
    return JobRow(*values)


def _node(node: Node, cluster: Cluster) -> engine.Node:
    """A NotReady node counts as failed; a drained one stops its jobs; a cordoned one (by the
    cluster or by a platform admin), or any node of a cluster that could not be reached this
    cycle, takes no new work (its running jobs stay)."""
    return engine.Node(
        name=node.name,
        capacity=node.usable_capacity(),  # less what other workloads hold
        labels=dict(node.labels),
        schedulable=(
            node.schedulable and not node.cordoned and cluster.status != Cluster.Status.DEGRADED
        ),
        failed=not node.ready,
        draining=node.draining,
    )


def _pending(
    row: JobRow, queue: str, cls: str, flavors: list[str], scale: float, clusters: tuple[str, ...]
) -> engine.PendingJob:
    return engine.PendingJob(
        name=str(row.pk),
        queue=queue,
        service_class=cls,
        submitted_at=row.submitted_at.timestamp(),
        workers=row.workers,
        gpus_per_worker=row.gpus_per_worker,
        flavors=tuple(flavors),
        min_workers=row.elastic_min,
        topology=row.topology,
        estimated_runtime=clock.wall_seconds(row.estimated_runtime, scale),
        clusters=clusters,
        stops=row.preemption_count,
    )


def _admitted(
    row: JobRow,
    queue: str,
    cls: str,
    cluster: str,
    flavors: list[str],
    flavor_names: dict[int, str],
    now: datetime,
    scale: float,
) -> engine.AdmittedJob:
    flavor = flavor_names[row.flavor_id] if row.flavor_id is not None else ""
    if not flavor and flavors:
        flavor = flavors[0]
    g = row.gpus_per_worker
    placement = {node: int(count) * g for node, count in sorted(row.placement.items())}
    stopping = row.state not in ("admitted", "running")  # preempted, or ended and releasing
    release_at = row.release_at if row.release_at is not None else now
    return engine.AdmittedJob(
        name=str(row.pk),
        queue=queue,
        service_class=cls,
        submitted_at=row.submitted_at.timestamp(),
        cluster=cluster,
        flavor=flavor,
        gpus_per_worker=g,
        workers=sum(int(c) for c in row.placement.values()),
        placement=placement,
        started_at=ts(row.started_at),
        requested_workers=_requested(row, now),
        min_workers=row.elastic_min,
        topology=row.topology,
        estimated_runtime=clock.wall_seconds(row.estimated_runtime, scale),
        start_at=None if stopping else ts(row.start_at),
        stopping=stopping,
        stops=row.preemption_count,
        checkpoint_interval=clock.wall_seconds(row.checkpoint_interval, scale),
        release_at=ts(release_at) if stopping else None,
        held_for=str(row.stop_by_id) if stopping and row.stop_by_id is not None else None,
    )


def _requested(row: JobRow, now: datetime) -> int | None:
    """The workers an elastic job may grow to: all it asked for, or none beyond those it has
    while it backs off after losing workers (queues/services/gang.py)."""
    if row.elastic_min is None:
        return None
    if row.requeue_after_is_ahead(now):
        return max(row.elastic_min, sum(int(c) for c in row.placement.values()))
    return row.workers
