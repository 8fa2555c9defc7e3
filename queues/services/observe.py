"""First half of a cycle: read every cluster and bring the database up to what happened there.

Per cluster: its nodes (Kubernetes: rewritten from the API; simulated: the rows are the truth),
then each job that holds GPUs on it: started (once every planned worker is there and running),
succeeded, a worker failed (the whole gang is stopped and requeued, or failed after
``MAX_FAILURES``), workers missing or lost (``gang.py``: the launch retried, an elastic job
shrunk, or the gang stopped whole and requeued with backoff). What the cluster lacks (a launch
lost in a crash, a stop that did not arrive) is handed back as effects to retry.

A cluster that cannot be read is marked degraded with the error, and none of its jobs change.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from queues.clusters.base import (
    ClusterState,
    DriverError,
    FlavorDefinition,
    NodeInfo,
    WorkerPhase,
    WorkerStatus,
    WorkloadPhase,
    WorkloadStatus,
    node_flavor_capacity,
    node_flavor_other_usage,
    workload_phase,
)
from queues.clusters.pool import DriverPool
from queues.models import Cluster, Flavor, Job, JobEvent, JobRuntime, Node, catalog
from queues.services import effects as fx
from queues.services import events as job_events
from queues.services import gang, intake, messages
from queues.services.report import CycleReport
from queues.services.snapshot import HOLDING_STATES
from queues.services.transitions import move, set_runtime

logger = logging.getLogger(__name__)

MAX_FAILURES = 3  # a gang whose workers failed this many times is marked failed
CHUNK = 500  # jobs read as model objects per query


def sync_clusters(
    now: datetime, report: CycleReport, drivers: DriverPool | None = None
) -> list[fx.Effect]:
    """Sync every cluster; returns the effects to retry. Never raises a driver error.

    `drivers`: the pool whose drivers live across cycles (a Kubernetes driver then reads only
    what changed since the last cycle); without one, every driver is built for this cycle."""
    if drivers is None:
        pool = DriverPool()
        try:
            return sync_clusters(now, report, pool)
        finally:
            pool.close()
    effects: list[fx.Effect] = []
    clusters = list(Cluster.objects.order_by("name"))
    drivers.retain(c.pk for c in clusters)
    for cluster in clusters:
        try:
            with drivers.driver(cluster, now=now) as driver:
                state = driver.sync()
                in_database = bool(getattr(driver, "nodes_in_database", False))
                listing = intake.list_workloads(driver)  # kubectl-applied Jobs (docs/KUEUE.md)
        except DriverError as error:
            fx.mark_degraded(cluster, str(error))
            report.degraded.append(cluster.name)
            report.add("degraded", f"cluster {cluster.name}: {error}")
            continue
        with transaction.atomic():
            if not in_database:
                update_nodes(cluster, state.nodes)
            effects += observe_workloads(cluster, state, now, report)
            notes = [] if listing is None else intake.take_in(cluster, listing, now, report)
            Cluster.objects.filter(pk=cluster.pk).update(
                status=Cluster.Status.OK, status_message="", last_sync_at=now
            )
        intake.tell(cluster, notes, now)
    return effects


def update_nodes(cluster: Cluster, infos: tuple[NodeInfo, ...]) -> None:
    """Rewrite the cluster's Node rows from what its API reports; vanished nodes turn NotReady."""
    definitions = [
        FlavorDefinition(f.name, f.resource, dict(f.node_selector)) for f in Flavor.objects.all()
    ]
    existing = {node.name: node for node in Node.objects.filter(cluster=cluster)}
    fields = ["labels", "capacity", "other_usage", "ready", "schedulable"]
    changed: list[Node] = []
    new: list[Node] = []
    capacity_changed = False
    for info in infos:
        values = {
            "labels": dict(info.labels),
            "capacity": node_flavor_capacity(info, definitions),
            "other_usage": node_flavor_other_usage(info, definitions),
            "ready": info.ready,
            "schedulable": not info.unschedulable,
        }
        node = existing.pop(info.name, None)
        if node is None:
            new.append(Node(cluster=cluster, name=info.name, **values))
        elif any(getattr(node, key) != value for key, value in values.items()):
            capacity_changed = capacity_changed or node.capacity != values["capacity"]
            for key, value in values.items():
                setattr(node, key, value)
            changed.append(node)
    Node.objects.bulk_create(new)
    Node.objects.bulk_update(changed, fields, batch_size=500)
    if new or capacity_changed:  # bulk writes send no signal: the submission rules' capacity
        catalog.changed()
    gone = [node.pk for node in existing.values() if node.ready]
    Node.objects.filter(pk__in=gone).update(ready=False)  # vanished from the API: NotReady


def _runtime(job: Job) -> JobRuntime | None:
    try:
        return job.runtime
    except JobRuntime.DoesNotExist:
        return None


def observe_workloads(
    cluster: Cluster, state: ClusterState, now: datetime, report: CycleReport
) -> list[fx.Effect]:
    workloads = {w.job_id: w for w in state.workloads}
    effects: list[fx.Effect] = []
    events: list[JobEvent] = []
    holding = Job.objects.filter(cluster=cluster, state__in=HOLDING_STATES)
    watched: set[str] = set()
    changing: list[int] = []  # the jobs this sync may change, in the holding jobs' order
    for pk, job_state, worker_nodes in holding.values_list("pk", "state", "runtime__worker_nodes"):
        watched.add(str(pk))
        if not _runs_on(job_state, worker_nodes, workloads.get(str(pk))):
            changing.append(pk)
    starting: list[tuple[Job, tuple[WorkerStatus, ...]]] = []  # started together, see _start
    for job in _holding_jobs(holding, changing):
        workload = workloads.get(str(job.pk))
        runtime = _runtime(job)
        if job.state == Job.State.PREEMPTED:
            if workload is not None and not _terminating(workload):
                effects.append(fx.stop(job, _left(runtime, now)))
            continue
        if workload is not None and job.state == Job.State.ADMITTED and _terminating(workload):
            workload = None  # pods of its previous run, still going: not this run's workers
        if workload is None:
            start_at = runtime.start_at if runtime is not None else None
            if job.state == Job.State.ADMITTED and (start_at is None or start_at <= now):
                effects.append(fx.launch(job))
            elif job.state == Job.State.RUNNING:
                none = WorkloadStatus(str(job.pk), "", WorkloadPhase.PENDING, (), 0)
                team = gang.inspect(runtime, none)
                if team is None or runtime is None:
                    events += _worker_failure(
                        job, runtime, "its workers are gone from the cluster", now, effects, report
                    )
                else:
                    events += gang.repair(job, runtime, team, now, effects, report)[0]
            continue
        events += _follow(job, runtime, workload, now, effects, report, starting)
    events += _start(starting, now, report)
    for job_id, workload in workloads.items():
        if job_id not in watched and not _terminating(workload):
            effects.append(_orphan_stop(cluster, job_id, workload, now))
    JobEvent.objects.bulk_create(events)
    return effects


def _runs_on(state: str, worker_nodes: list[Any] | None, workload: WorkloadStatus | None) -> bool:
    """A running job whose workers all run as planned: ``_follow`` would change nothing (no
    failed worker, its gang complete, not succeeded), so it is not read as a model object.
    A steady cycle reads one row of three columns per running job, whatever runs."""
    if state != Job.State.RUNNING or workload is None:
        return False
    team = gang.inspect_planned(worker_nodes, workload)
    if any(
        w.phase is WorkerPhase.FAILED and (team is None or not w.disrupted)
        for w in workload.workers
    ):
        return False
    workers = workload.workers
    if team is not None:
        if not team.complete:
            return False
        workers = team.present
    return workload_phase(w.phase for w in workers) != WorkloadPhase.SUCCEEDED


def _holding_jobs(holding: QuerySet[Job], pks: list[int]) -> list[Job]:
    """The jobs ``pks`` as model objects with what the sync reads of them, in that order, less
    any that stopped holding GPUs meanwhile (read in chunks: a cycle may start thousands)."""
    found: dict[int, Job] = {}
    related = holding.select_related("queue__team", "service_class", "runtime")
    for at in range(0, len(pks), CHUNK):
        found.update((job.pk, job) for job in related.filter(pk__in=pks[at : at + CHUNK]))
    return [found[pk] for pk in pks if pk in found]


def _follow(
    job: Job,
    runtime: JobRuntime | None,
    workload: WorkloadStatus,
    now: datetime,
    effects: list[fx.Effect],
    report: CycleReport,
    starting: list[tuple[Job, tuple[WorkerStatus, ...]]] | None = None,
) -> list[JobEvent]:
    # ``_runs_on`` says, from three columns, when all of this changes nothing: keep them agreeing
    team = gang.inspect(runtime, workload)
    failed = [
        w
        for w in workload.workers
        if w.phase is WorkerPhase.FAILED and (team is None or not w.disrupted)
    ]
    if failed:  # a worker failed on its own (an evicted one is lost, see gang.py)
        detail = "; ".join(messages.worker_detail(w.index, w.node, w.message) for w in failed)
        return _worker_failure(job, runtime, detail or workload.message, now, effects, report)
    out: list[JobEvent] = []
    workers: tuple[WorkerStatus, ...] = workload.workers
    if team is not None and runtime is not None:
        workers = team.present
        if not team.complete:
            out, kept = gang.repair(job, runtime, team, now, effects, report)
            if kept is None:
                return out  # retried, waiting, or stopped whole and requeued
            workers = kept  # an elastic job going on with the workers it has
    phase = workload_phase(w.phase for w in workers)
    if phase in (WorkloadPhase.RUNNING, WorkloadPhase.SUCCEEDED) and job.state == "admitted":
        if phase == WorkloadPhase.RUNNING and starting is not None:
            starting.append((job, workers))
            return out
        if not move(job, Job.State.RUNNING, now):
            return out
        nodes = sorted({w.node for w in workers})
        said = job_events.started(workers=len(workers), nodes=nodes)
        out.append(job_events.recorded(job, said, now, report))
    if phase == WorkloadPhase.SUCCEEDED and job.state == Job.State.RUNNING:
        cluster_id = job.cluster_id
        if not move(job, Job.State.SUCCEEDED, now):
            return out
        effects.append(fx.stop(job, 0, cluster_id))  # remove the completed pods
        out.append(job_events.recorded(job, job_events.succeeded(), now, report))
    return out


def _start(
    starting: list[tuple[Job, tuple[WorkerStatus, ...]]], now: datetime, report: CycleReport
) -> list[JobEvent]:
    """Move the admitted jobs whose workers all run to RUNNING: one locking read and one UPDATE
    for all of them. A job that changed meanwhile (cancelled) is left as it is, like `move`."""
    if not starting:
        return []
    with transaction.atomic():
        still = set(
            Job.objects.select_for_update()
            .filter(pk__in=[job.pk for job, _ in starting], state=Job.State.ADMITTED)
            .values_list("pk", flat=True)
        )
        Job.objects.filter(pk__in=still).update(state=Job.State.RUNNING, started_at=now)
    out = []
    for job, workers in starting:
        if job.pk in still:
            job.transition_to(Job.State.RUNNING, now=now)  # what the UPDATE wrote
            nodes = sorted({w.node for w in workers})
            said = job_events.started(workers=len(workers), nodes=nodes)
            out.append(job_events.recorded(job, said, now, report))
    return out


def _worker_failure(
    job: Job,
    runtime: JobRuntime | None,
    detail: str,
    now: datetime,
    effects: list[fx.Effect],
    report: CycleReport,
) -> list[JobEvent]:
    """One worker failed: the gang is stopped whole and requeued, or failed after the limit."""
    failures = (runtime.failures if runtime is not None else 0) + 1
    cluster_id = job.cluster_id
    said = job_events.worker_failed(detail=detail, failures=failures, limit=MAX_FAILURES)
    if said.kind == JobEvent.Kind.FAILED:
        if not move(job, Job.State.FAILED, now):
            return []
    else:
        if not move(job, Job.State.PREEMPTED, now) or not move(job, Job.State.PENDING, now):
            return []
    set_runtime(
        job.pk, failures=failures, release_at=None, stop_reason="", stop_by=None, worker_nodes=[]
    )
    effects.append(fx.stop(job, 0, cluster_id))
    return [job_events.recorded(job, said, now, report)]


def _terminating(workload: WorkloadStatus) -> bool:
    return bool(workload.workers) and all(w.terminating for w in workload.workers)


def _left(runtime: JobRuntime | None, now: datetime) -> float:
    if runtime is None or runtime.release_at is None:
        return 0.0
    return max(0.0, (runtime.release_at - now).total_seconds())


def _orphan_stop(
    cluster: Cluster, job_id: str, workload: WorkloadStatus, now: datetime
) -> fx.Effect:
    """Workers of a job that should not run (cancelled, requeued, unknown): stop them."""
    grace = 0.0
    runtime = JobRuntime.objects.filter(job_id=int(job_id)).first() if job_id.isdigit() else None
    if runtime is not None:
        grace = _left(runtime, now)
    logger.info(
        "job %s runs on %s but should not: stopping it",
        job_id,
        cluster.name,
        extra={"job_id": job_id},
    )
    return fx.Effect(
        "stop",
        int(job_id) if job_id.isdigit() else 0,
        cluster.pk,
        workload.namespace,
        int(grace),
    )


def finish_stops(now: datetime, report: CycleReport) -> None:
    """Preempted jobs whose grace period is over go back to pending, submission time kept."""
    jobs = Job.objects.filter(state=Job.State.PREEMPTED).select_related("runtime")
    events: list[JobEvent] = []
    for job in jobs:
        runtime = _runtime(job)
        if runtime is not None and runtime.release_at is not None and runtime.release_at > now:
            continue
        if not move(job, Job.State.PENDING, now):
            continue
        set_runtime(job.pk, release_at=None, stop_reason="", stop_by=None, worker_nodes=[])
        events.append(
            job_events.recorded(
                job, job_events.back_in_queue(submitted_at=job.submitted_at), now, report
            )
        )
    JobEvent.objects.bulk_create(events)
