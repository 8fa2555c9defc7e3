"""Side effects on clusters (launch, stop, scale), run after the cycle's transaction commits.

The database says what should run; these calls make the clusters match. Each is idempotent and
each failure is safe: the next cycle compares the clusters with the database again and retries
what is missing (a launch that never happened, a stop that did not reach the cluster).
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from gpuplatform.logs import job_context
from queues.clusters.base import (
    ClusterDriver,
    ClusterUnavailable,
    DriverError,
    LaunchSpec,
    QuotaExceeded,
    WorkerPlacement,
    WorkloadConflict,
)
from queues.clusters.factory import get_driver
from queues.clusters.manifests import team_namespace
from queues.models import Cluster, Job, JobRuntime, WorkloadReference, job_spec
from queues.services import counters
from queues.services import events as job_events
from queues.services.transitions import move

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Effect:
    """``action`` is launch, stop or scale; ``namespace`` and ``grace`` apply to stop."""

    action: str
    job_id: int
    cluster_id: int
    namespace: str = ""
    grace: int = 0


def launch(job: Job) -> Effect:
    assert job.cluster_id is not None
    return Effect("launch", job.pk, job.cluster_id)


def stop(job: Job, grace: float, cluster_id: int | None = None) -> Effect:
    """Stop the job's workers, with ``grace`` seconds to checkpoint (rounded up)."""
    cluster = cluster_id if cluster_id is not None else job.cluster_id
    assert cluster is not None
    seconds = max(0, math.ceil(grace))
    return Effect("stop", job.pk, cluster, team_namespace(job.queue.team.name), seconds)


def scale(job: Job) -> Effect:
    assert job.cluster_id is not None
    return Effect("scale", job.pk, job.cluster_id)


def worker_layout(
    previous: Iterable[tuple[int, str]], placement: Mapping[str, int]
) -> list[tuple[int, str]]:
    """Worker indexes per node for ``placement`` (node -> workers), keeping the indexes that
    already run where they are and giving new workers the smallest free indexes."""
    wanted = dict(placement)
    kept: list[tuple[int, str]] = []
    for index, node in sorted(previous):
        if wanted.get(node, 0) > 0:
            kept.append((index, node))
            wanted[node] -= 1
    used = {index for index, _ in kept}
    free = (i for i in range(10**6) if i not in used)
    for node in sorted(wanted):
        kept.extend((next(free), node) for _ in range(wanted[node]))
    return sorted(kept)


def launch_spec(job: Job, runtime: JobRuntime) -> LaunchSpec:
    flavor = runtime.flavor
    assert flavor is not None
    workers = tuple(WorkerPlacement(index=int(i), node=str(n)) for i, n in runtime.worker_nodes)
    return LaunchSpec(
        job_id=str(job.pk),
        job_name=job.name,
        team=job.queue.team.name,
        queue=job.queue.name,
        service_class=job.service_class.name,
        image=job.image,
        resource_name=flavor.resource,
        gpus_per_worker=job.gpus_per_worker,
        workers=workers,
        gang_size=job.workers,
        grace_period_seconds=job.service_class.grace_period,
        min_workers=job.min_workers if job.is_elastic else None,
        command=tuple(job.command),
        flavor=flavor.name,
        array=(str(job.array_id), job.array_index or 0) if job.array_id else None,
        **job_spec.launch_fields(job.spec),
    )


def run_effects(effects: list[Effect], now: datetime | None = None) -> None:
    """Carry the effects out, one driver per cluster; errors are recorded, never raised."""
    by_cluster: dict[int, list[Effect]] = defaultdict(list)
    for effect in effects:
        by_cluster[effect.cluster_id].append(effect)
    for cluster in Cluster.objects.filter(pk__in=list(by_cluster)):
        _run_on_cluster(cluster, by_cluster[cluster.pk], now)


def _run_on_cluster(cluster: Cluster, effects: list[Effect], now: datetime | None) -> None:
    try:
        driver = get_driver(cluster, now=now)
    except DriverError as error:
        mark_degraded(cluster, f"cannot build the driver: {error}")
        return
    try:
        jobs = {
            j.pk: j
            for j in Job.objects.filter(pk__in=[e.job_id for e in effects]).select_related(
                "queue__team", "service_class", "runtime__flavor", "workload_ref"
            )
        }
        batched = getattr(driver, "launch_many", None) is not None
        launches: list[Effect] = []  # consecutive launches, carried out as one batch
        for effect in [*effects, None]:
            if batched and effect is not None and effect.action == "launch":
                launches.append(effect)
                continue
            if launches and not _launch_batch(driver, cluster, launches, jobs, now):
                return
            launches = []
            if effect is None:
                break
            with job_context(effect.job_id):  # in the log lines of the driver's calls too
                try:
                    _run_one(driver, effect, jobs.get(effect.job_id), now)
                except DriverError as error:
                    if not _failed(driver, cluster, effect, jobs.get(effect.job_id), error, now):
                        return
    finally:
        driver.close()


def _failed(
    driver: ClusterDriver,
    cluster: Cluster,
    effect: Effect,
    job: Job | None,
    error: DriverError,
    now: datetime | None,
) -> bool:
    """Deal with one effect's error; False when the cluster is unreachable (the rest would
    fail the same way; the next cycle retries)."""
    if isinstance(error, ClusterUnavailable):
        mark_degraded(cluster, f"{effect.action} of job {effect.job_id}: {error}")
        return False
    if isinstance(error, WorkloadConflict):
        logger.info("%s of job %s waits: %s", effect.action, effect.job_id, error)
    elif isinstance(error, QuotaExceeded):  # the job's, not the cluster's: it stays healthy
        if _requeue(effect, job, str(error), now) and job is not None:
            _remove_workers(driver, cluster, job)
    elif _reject(effect, job, str(error), now) and job is not None:
        _remove_workers(driver, cluster, job)
    return True


def _launch_batch(
    driver: ClusterDriver,
    cluster: Cluster,
    effects: list[Effect],
    jobs: dict[int, Job],
    now: datetime | None,
) -> bool:
    """Launch these jobs with one call of the driver's ``launch_many`` (its reads, inserts and
    commit done once); a job it refuses fails alone, as if launched by itself. False when the
    cluster is unreachable."""
    specs = [spec for e in effects if (spec := _spec(jobs.get(e.job_id))) is not None]
    if not specs:
        return True
    try:
        errors = driver.launch_many(specs)  # type: ignore[attr-defined]
    except ClusterUnavailable as error:
        mark_degraded(cluster, f"launch of {len(specs)} jobs: {error}")
        return False
    for effect in effects:
        error = errors.get(str(effect.job_id))
        if error is None:
            continue
        with job_context(effect.job_id):
            if not _failed(driver, cluster, effect, jobs.get(effect.job_id), error, now):
                return False
    return True


def _spec(job: Job | None) -> LaunchSpec | None:
    """What to launch for the job, read with it (None: nothing to start)."""
    if job is None or job.state not in (Job.State.ADMITTED, Job.State.RUNNING):
        return None  # it ended or was stopped meanwhile: nothing to start
    try:
        runtime = job.runtime
    except JobRuntime.DoesNotExist:
        return None
    if runtime.flavor is None or not runtime.worker_nodes:
        return None
    return launch_spec(job, runtime)


def _workload(job: Job | None) -> WorkloadReference | None:
    """The kubectl-applied object the job was taken in from (docs/KUEUE.md), if any."""
    try:
        return None if job is None else job.workload_ref
    except WorkloadReference.DoesNotExist:
        return None


def _run_one(
    driver: ClusterDriver, effect: Effect, job: Job | None, now: datetime | None = None
) -> None:
    workload = _workload(job)
    if workload is not None and job is not None:  # its controller makes and removes the pods
        from queues.services import intake  # intake submits jobs, which build effects

        intake.carry_out(driver, effect.action, job, workload, now or timezone.now())
        return
    if effect.action == "stop":
        driver.stop(str(effect.job_id), effect.namespace, effect.grace)
        return
    spec = _spec(job)
    if spec is None:
        return
    if effect.action == "launch":
        driver.launch(spec)
    else:
        driver.scale(spec)


def _reject(effect: Effect, job: Job | None, message: str, now: datetime | None) -> bool:
    """The cluster refused the job itself (invalid, or denied by an admission webhook):
    retrying unchanged cannot help, so it fails. True when it did."""
    logger.warning("%s of job %s rejected: %s", effect.action, effect.job_id, message)
    if job is None or effect.action != "launch":
        return False  # a refused scale: the next sync sees the workers it has (gang.py)
    now = now or timezone.now()  # the cycle's clock when it has one
    old = job.state
    if old not in (Job.State.ADMITTED, Job.State.RUNNING):
        return False
    with transaction.atomic():
        if move(job, Job.State.FAILED, now):
            job_events.rejected(reason=message).row(job, now).save()
            return True
    return False


def _requeue(effect: Effect, job: Job | None, message: str, now: datetime | None) -> bool:
    """A ResourceQuota had no room for one of the job's workers: the gang is requeued whole,
    with backoff (gang.py). True when it was."""
    logger.warning("%s of job %s refused for quota: %s", effect.action, effect.job_id, message)
    if job is None or effect.action != "launch":
        return False  # a refused scale: the next sync sees the workers it has (gang.py)
    from queues.services import gang  # gang builds effects with this module

    return gang.refused(job, message, now or timezone.now())


def _remove_workers(driver: ClusterDriver, cluster: Cluster, job: Job) -> None:
    """Delete the workers a refused launch did create: none may run without the others. A
    failure here is left to the next sync (they belong to no running job then: orphans)."""
    try:
        _run_one(driver, stop(job, 0, cluster.pk), job)
    except ClusterUnavailable as error:
        mark_degraded(cluster, f"stop of job {job.pk}: {error}")
    except DriverError as error:
        logger.warning("stop of job %s failed: %s", job.pk, error)


def mark_degraded(cluster: Cluster, message: str) -> None:
    """The cluster could not be reached: say so on its row and count the error."""
    logger.warning("cluster %s degraded: %s", cluster.name, message)
    Cluster.objects.filter(pk=cluster.pk).update(
        status=Cluster.Status.DEGRADED, status_message=message[:2000]
    )
    cluster.status, cluster.status_message = Cluster.Status.DEGRADED, message
    counters.increment("gpuplatform_cluster_sync_errors_total", cluster=cluster.name)
