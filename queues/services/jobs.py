"""What users do to jobs: submit and cancel. The UI and the REST API call these, nothing else.

Both check the caller's rights (gpuplatform/access.py), validate with field-named errors, record a
``JobEvent`` and queue a scheduling cycle once the transaction has committed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from gpuplatform import access
from queues.models import (
    Flavor,
    IllegalTransition,
    Job,
    JobEvent,
    JobFlavor,
    JobRuntime,
    Queue,
    ServiceClass,
)
from queues.models.job_rules import (
    Checked,
    Submission,
    check_flavor_list,
    check_submission,
    resolved,
)
from queues.services import clock, job_insert
from queues.services import effects as fx
from queues.services import events as job_events
from queues.services.transitions import move, set_runtime

logger = logging.getLogger(__name__)


_cycles_deferred: ContextVar[bool] = ContextVar("cycles_deferred", default=False)


@contextmanager
def cycles_run_by_caller() -> Iterator[None]:
    """Inside this block, submissions and cancellations queue no cycle: the caller queues or
    runs the cycle itself (the demo's live traffic queues one for a whole tick)."""
    token = _cycles_deferred.set(True)
    try:
        yield
    finally:
        _cycles_deferred.reset(token)


# Set while a cycle is queued and not yet started: a burst of submissions queues one cycle.
CYCLE_QUEUED_KEY = "gpuplatform:cycle-queued"


def queue_cycle() -> None:
    """Ask a worker for a scheduling cycle once the current transaction commits.

    Debounced: while a queued cycle has not started yet, no other is queued (``cycle_started``
    clears the mark; it also expires after ``CYCLE_INTERVAL``, so a lost message delays nothing
    beyond the periodic cycle, which stays the floor). A broker that cannot be reached is
    logged, not raised: the change is committed already and the periodic cycle picks it up.
    """
    if _cycles_deferred.get():
        return
    transaction.on_commit(_send_cycle)


def cycle_started() -> None:
    """Called by a cycle once it holds the lease (queues/tasks.py; a task skipped because
    another cycle runs does not call it): changes from now on need a cycle of their own."""
    cache.delete(CYCLE_QUEUED_KEY)


def _send_cycle() -> None:
    from queues.tasks import run_scheduling_cycle

    if not cache.add(CYCLE_QUEUED_KEY, 1, timeout=settings.CYCLE_INTERVAL):
        return  # one is queued already and will see this change
    try:
        run_scheduling_cycle.delay()
    except Exception:  # any broker failure: beat's next tick covers it
        cache.delete(CYCLE_QUEUED_KEY)
        logger.warning(
            "could not queue a scheduling cycle; the periodic one will run", exc_info=True
        )


def submit_job(**fields: Any) -> Job:
    """Create a pending job (``prepare_job``'s keyword arguments); raises ValidationError by
    field when the submission breaks a rule of queues/models/job_rules.py (a queue ``owner``
    may not submit to included). The job comes back with its flavor links, runtime and queue in
    hand, as ``JobSerializer`` shows it (no need to read it again)."""
    return write_jobs([prepare_job(**fields)])[0]


@dataclass(frozen=True)
class NewJob:
    """A checked submission, ready to be written by ``write_jobs``."""

    job: Job
    flavors: list[Flavor]
    said: job_events.Said


def prepare_job(
    *,
    owner: Any,
    queue: Queue,
    service_class: ServiceClass,
    name: str,
    image: str,
    flavors: Sequence[Flavor],
    workers: int = 1,
    gpus_per_worker: int = 1,
    command: Sequence[str] = (),
    min_workers: int | None = None,
    topology_level: str = "",
    topology_mode: str = "",
    estimated_runtime: int | None = None,
    checkpoint_interval: int | None = None,
    duration_hint: int | None = None,
    spec: Mapping[str, Any] | None = None,
    pod_template: Any = None,
    now: datetime | None = None,
    checked: Checked | None = None,
) -> NewJob:
    """Check a submission and build its unsaved job and "submitted" event; raises
    ValidationError by field. ``spec`` holds the job's env, volumes, shm_size, cpu...
    (queues/models/job_spec.py); ``pod_template`` a Kubernetes pod template (YAML text or an
    object) that gives the image, command and spec instead (queues/models/pod_template.py).
    ``checked``: what ``check_submission`` answered the caller for this owner and submission
    (the API's serializer): the rules are not checked twice."""
    submission = Submission(
        queue=queue,
        service_class=service_class,
        flavors=list(flavors),
        name=name,
        image=image,
        command=list(command),
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        min_workers=min_workers,
        topology_level=topology_level,
        topology_mode=topology_mode,
        estimated_runtime=estimated_runtime,
        checkpoint_interval=checkpoint_interval,
        duration_hint=duration_hint,
        spec=spec,
        pod_template=pod_template,
    )
    if checked is None or not checked.covers(owner, submission):
        check_submission(owner, submission)
    check_flavor_list(submission.flavors)
    submission = resolved(submission)
    job = Job(
        owner=owner,
        queue=queue,
        service_class=service_class,
        name=name,
        image=submission.image or "",
        command=list(submission.command or ()),
        spec=dict(submission.spec or {}),
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        min_workers=min_workers,
        topology_level=topology_level,
        topology_mode=topology_mode,
        estimated_runtime=estimated_runtime,
        checkpoint_interval=checkpoint_interval,
        duration_hint=duration_hint,
        submitted_at=now or timezone.now(),
    )
    said = job_events.submitted(
        queue=str(queue),
        owner=str(owner),
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        flavors=[f.name for f in submission.flavors],
        service_class=str(service_class),
    )
    return NewJob(job, submission.flavors, said)


WRITE_BATCH = 500
"""Rows per INSERT when jobs are written together (an array): far under PostgreSQL's 65,535
parameters a statement."""


def write_jobs(new: Sequence[NewJob], *, array: bool = False) -> list[Job]:
    """Insert prepared jobs with their flavor links, runtime rows and "submitted" events, all or
    none: four INSERTs per ``WRITE_BATCH`` jobs, and one cycle queued for them all. ``array``:
    the jobs are one array (Slurm's ``--array``): each job's ``array_id`` is the first job's id
    and ``array_index`` its place (one more INSERT and an UPDATE of the first job)."""
    jobs = [n.job for n in new]
    if len(new) == 1 and not array and job_insert.usable():
        return [_write_one(new[0])]
    with transaction.atomic():
        if array and jobs:
            head = jobs[0]
            head.array_index = 0
            Job.objects.bulk_create([head])  # its id names the array
            Job.objects.filter(pk=head.pk).update(array_id=head.pk)
            for index, job in enumerate(jobs):
                job.array_id, job.array_index = head.pk, index
            Job.objects.bulk_create(jobs[1:], batch_size=WRITE_BATCH)
        else:
            Job.objects.bulk_create(jobs, batch_size=WRITE_BATCH)
        held = [
            [
                JobFlavor(job=n.job, flavor=flavor, rank=rank)
                for rank, flavor in enumerate(n.flavors)
            ]
            for n in new
        ]
        JobFlavor.objects.bulk_create(
            (link for links in held for link in links), batch_size=WRITE_BATCH
        )
        JobRuntime.objects.bulk_create(
            (JobRuntime(job=job) for job in jobs), batch_size=WRITE_BATCH
        )
        JobEvent.objects.bulk_create(
            (n.said.row(n.job, n.job.submitted_at) for n in new), batch_size=WRITE_BATCH
        )
        queue_cycle()
    for job, links in zip(jobs, held, strict=True):
        job.keep_flavor_links(links)
    return jobs


def _write_one(new: NewJob) -> Job:
    """``write_jobs`` of one job on PostgreSQL: the same rows in one statement
    (queues/services/job_insert.py), atomic on its own: no BEGIN and COMMIT around it."""
    job = new.job
    links = [
        JobFlavor(job=job, flavor=flavor, rank=rank) for rank, flavor in enumerate(new.flavors)
    ]
    event = new.said.row(job, job.submitted_at)
    if transaction.get_connection().in_atomic_block:  # the caller's: a savepoint, as before
        with transaction.atomic():
            job_insert.insert_job(job, links, JobRuntime(job=job), event)
    else:
        job_insert.insert_job(job, links, JobRuntime(job=job), event)
    queue_cycle()  # once committed: at once outside a transaction
    job.keep_flavor_links(links)
    return job


def cancel_job(job: Job, by_user: Any, *, now: datetime | None = None, by: str = "") -> Job:
    """Cancel ``job``: a pending job at once; a job holding GPUs stops gracefully, its GPUs
    counted until the class grace period ends. Raises PermissionDenied, or IllegalTransition
    for a job that has already ended. ``by``: who or what cancelled it, in the timeline's
    words (default: ``by_user``)."""
    if not access.can_cancel_job(by_user, job):
        raise PermissionDenied("You may not cancel this job.")
    moment = now or timezone.now()
    for _ in range(3):  # the row may change under us (a cycle admits it): look again
        job = Job.objects.select_related("queue__team", "service_class").get(pk=job.pk)
        if job.is_finished:
            raise IllegalTransition(f"Job {job} has already ended ({job.state}).")
        with transaction.atomic():
            if _cancel(job, by or str(by_user), moment):
                queue_cycle()
                return job
    raise IllegalTransition(f"Job {job} changed while being cancelled; try again.")


def _cancel(job: Job, by: str, now: datetime) -> bool:
    state, cluster_id, placement = job.state, job.cluster_id, dict(job.placement)
    grace = clock.wall_seconds(job.service_class.grace_period, clock.class_scale()) or 0.0
    try:
        runtime = job.runtime
        release = runtime.release_at
    except JobRuntime.DoesNotExist:
        release = None
    if state == Job.State.PENDING:
        if not move(job, Job.State.CANCELLED, now):
            return False
        said = job_events.cancelled(by=by, state=state)
    elif state in (Job.State.ADMITTED, Job.State.RUNNING):
        if not move(job, Job.State.CANCELLED, now):
            return False
        release = now + timedelta(seconds=grace)
        set_runtime(job.pk, stop_reason="cancelled", release_at=release, stop_by=None)
        effect = fx.stop(job, grace, cluster_id)
        transaction.on_commit(lambda: fx.run_effects([effect]))
        said = job_events.cancelled(by=by, state=state, grace=grace, release=release)
    else:  # preempted, already stopping: keep its GPUs counted until its release time
        if not move(job, Job.State.PENDING, now):
            return False
        move(job, Job.State.CANCELLED, now, cluster_id=cluster_id, placement=placement)
        set_runtime(job.pk, stop_reason="cancelled", stop_by=None)
        said = job_events.cancelled(by=by, state=state)
    said.row(job, now).save()
    return True
