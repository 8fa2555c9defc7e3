"""The gang invariant on the live path: all of a job's workers run, or none of them.

The engine admits a gang whole; the cluster may not follow. A create refused or lost half-way
through a launch leaves some pods made and others not; a pod deleted or evicted from a running
gang (by a user, a node drain, the kubelet) leaves the rest running. At every sync
(``observe.py``) each admitted or running job's pods are compared with its planned workers
(``JobRuntime.worker_nodes``), and a gang with fewer live workers than planned is repaired:

- *admitted* (starting): the launch is retried (creates are idempotent: a pod that exists as
  planned is adopted, so a create whose answer was lost is never made twice), at most
  ``GANG_REPAIR_CYCLES`` cycles. A pod still terminating (of a previous run) is waited for
  without counting. Still incomplete after that: an elastic job with at least ``min_workers``
  live workers shrinks to them and starts with them; any other job is stopped whole and
  requeued with backoff.
- *running*: nothing can join a running gang, so lost workers are not recreated. An elastic job
  still at or above ``min_workers`` shrinks to its live workers (a ``scaled`` event, billed
  from then on for those) and does not grow again before its backoff is over; any other job
  is stopped whole and requeued with backoff.

A job only starts (``started``, billing begins) once every planned worker is there and running.
A create the cluster refuses for the job's own sake is handled at once (``effects.py``): a
ResourceQuota with no room stops the gang whole and requeues it with backoff, an admission
webhook's denial fails it; both with the API's message, the cluster staying healthy.

Backoff, as Kueue's ``requeuingStrategy``: the n-th gang requeue (or elastic shrink) of a job
sets ``JobRuntime.requeue_after`` to ``GANG_REQUEUE_BACKOFF * 2**(n-1)`` seconds ahead, at most
``GANG_REQUEUE_BACKOFF_MAX``. Until then the snapshot leaves a pending job out (its pending
reason says until when) and shows a running elastic job as wanting no more workers than it
has; requeues are not limited.
Lost or refused workers are not the job's failures: they do not count towards ``MAX_FAILURES``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from queues.clusters.base import WorkerStatus, WorkloadStatus
from queues.models import Job, JobEvent, JobRuntime
from queues.services import effects as fx
from queues.services import events as job_events
from queues.services import messages
from queues.services.report import CycleReport
from queues.services.snapshot import BACKOFF_REASON
from queues.services.transitions import job_label, move, set_runtime


def repair_cycles() -> int:
    return int(getattr(settings, "GANG_REPAIR_CYCLES", 3))


def backoff(requeues: int) -> timedelta:
    """How long the ``requeues``-th gang requeue keeps a job from being admitted again."""
    base = float(getattr(settings, "GANG_REQUEUE_BACKOFF", 60))
    cap = float(getattr(settings, "GANG_REQUEUE_BACKOFF_MAX", 3600))
    return timedelta(seconds=min(cap, base * 2 ** max(0, requeues - 1)))


@dataclass(frozen=True)
class Gang:
    """A job's planned workers against what the cluster reports."""

    planned: dict[int, str]  # worker index -> planned node
    present: tuple[WorkerStatus, ...]  # planned workers alive (not terminating nor disrupted)
    missing: tuple[str, ...]  # why each other planned worker is not there, by index order
    leaving: bool  # every missing worker's pod is still terminating (a previous run's)

    @property
    def complete(self) -> bool:
        return len(self.present) == len(self.planned)


def inspect(runtime: JobRuntime | None, workload: WorkloadStatus) -> Gang | None:
    """The job's gang, or None when its planned workers were never recorded."""
    return inspect_planned(runtime.worker_nodes if runtime is not None else None, workload)


def inspect_planned(worker_nodes: list[Any] | None, workload: WorkloadStatus) -> Gang | None:
    """``inspect`` from the runtime's ``worker_nodes`` alone (None: the job has no runtime)."""
    if not worker_nodes:
        return None
    planned = {int(index): str(node) for index, node in worker_nodes}
    by_index: dict[int, list[WorkerStatus]] = {}
    for worker in workload.workers:
        by_index.setdefault(worker.index, []).append(worker)
    present: list[WorkerStatus] = []
    missing: list[str] = []
    leaving = True
    for index, node in sorted(planned.items()):
        pods = by_index.get(index, [])
        alive = [w for w in pods if not w.terminating and not w.disrupted]
        if alive:
            present.append(alive[0])
            continue
        missing.append(_why_missing(index, node, pods))
        leaving = leaving and any(w.terminating for w in pods)
    return Gang(planned, tuple(present), tuple(missing), leaving and bool(missing))


def _why_missing(index: int, node: str, pods: list[WorkerStatus]) -> str:
    if not pods:
        return f"worker {index} (planned on {node}) is missing from the cluster"
    pod = pods[0]
    where = f"worker {index} (pod {pod.pod_name} on {pod.node or node})"
    if pod.disrupted:
        detail = pod.message.removeprefix(f"{pod.reason}: ") or pod.reason
        return f"{where} was {pod.reason.lower()}: {detail}"
    return f"{where} is being deleted"


def repair(
    job: Job,
    runtime: JobRuntime,
    gang: Gang,
    now: datetime,
    effects: list[fx.Effect],
    report: CycleReport,
) -> tuple[list[JobEvent], tuple[WorkerStatus, ...] | None]:
    """Deal with an incomplete gang: (its events, the workers it goes on with, or None when
    it does not go on this cycle: retried, waiting, or stopped and requeued)."""
    label = job_label(job)
    have = f"{len(gang.present)} of {len(gang.planned)} workers"
    if job.state == Job.State.ADMITTED:
        if gang.leaving:  # a previous run's pods are still terminating: wait, uncounted
            effects.append(fx.launch(job))
            return [], None
        attempts = runtime.repair_attempts
        if attempts < repair_cycles():
            set_runtime(job.pk, repair_attempts=attempts + 1)
            effects.append(fx.launch(job))
            report.add(
                "repairing",
                f"{label}: {have} created ({'; '.join(gang.missing)}); launch retried "
                f"({attempts + 1} of {repair_cycles()})",
            )
            return [], None
        cause = (
            f"only {have} could be created after {attempts} launch "
            f"retr{'y' if attempts == 1 else 'ies'} ({'; '.join(gang.missing)})"
        )
    else:
        cause = "; ".join(gang.missing)
    minimum = job.min_workers if job.is_elastic else None
    if minimum is not None and len(gang.present) >= minimum:
        return shrink(job, runtime, gang, cause, now, effects, report), gang.present
    if minimum is not None:
        cause += f"; {len(gang.present)} left, below its minimum of {minimum}"
    return requeue(job, runtime, cause, "gang-incomplete", now, effects, report), None


def shrink(
    job: Job,
    runtime: JobRuntime,
    gang: Gang,
    cause: str,
    now: datetime,
    effects: list[fx.Effect],
    report: CycleReport,
) -> list[JobEvent]:
    """An elastic job at or above its minimum goes on with the workers it has; it does not
    grow again before its backoff is over (else the engine would regrow it into the GPUs it
    just lost, and a worker that cannot be created would shrink and grow every cycle)."""
    workers = sorted((w.index, gang.planned[w.index]) for w in gang.present)
    placement = dict(Counter(node for _, node in workers))
    before = job.current_workers
    if not Job.objects.filter(pk=job.pk, state=job.state, current_workers=before).update(
        placement=placement, current_workers=len(workers)
    ):
        return []
    job.placement, job.current_workers = placement, len(workers)
    requeues = runtime.requeues + 1
    delay = int(backoff(requeues).total_seconds())
    until = now + timedelta(seconds=delay)
    set_runtime(
        job.pk,
        worker_nodes=[list(w) for w in workers],
        requeues=requeues,
        requeue_after=until,
    )
    effects.append(fx.scale(job))  # removes what is left of the lost workers' pods
    said = job_events.gang_shrunk(
        cause=cause,
        workers=len(workers),
        requested=job.workers,
        minimum=job.min_workers or 1,
        until=until,
    )
    return [job_events.recorded(job, said, now, report)]


def requeue(
    job: Job,
    runtime: JobRuntime | None,
    cause: str,
    reason: str,
    now: datetime,
    effects: list[fx.Effect] | None,
    report: CycleReport | None,
) -> list[JobEvent]:
    """Stop the gang whole and requeue it with backoff; its timeline says why and until when.

    ``effects`` None: the caller stops the workers itself (after a refused launch)."""
    cluster_id = job.cluster_id
    if not move(job, Job.State.PREEMPTED, now) or not move(job, Job.State.PENDING, now):
        return []
    requeues = (runtime.requeues if runtime is not None else 0) + 1
    delay = int(backoff(requeues).total_seconds())
    until = now + timedelta(seconds=delay)
    set_runtime(
        job.pk,
        requeues=requeues,
        requeue_after=until,
        repair_attempts=0,
        release_at=None,
        stop_reason="",
        stop_by=None,
        worker_nodes=[],
        pending_reason=BACKOFF_REASON,
        pending_message=messages.gang_backoff(until, delay),
        estimated_start=until,
        pending_position=None,  # not ranked while it backs off
        pending_within_nominal=None,
    )
    if effects is not None and cluster_id is not None:
        effects.append(fx.stop(job, 0, cluster_id))
    said = job_events.gang_requeued(
        cause=cause, reason=reason, requeues=requeues, until=until, backoff=delay
    )
    if report is None:
        return [said.row(job, now)]
    return [job_events.recorded(job, said, now, report)]


def refused(job: Job, message: str, now: datetime) -> bool:
    """The cluster refused one of the job's workers for lack of quota (after commit, outside
    the cycle): requeue the gang with backoff. True when the job was requeued."""
    if job.state not in (Job.State.ADMITTED, Job.State.RUNNING):
        return False
    runtime = JobRuntime.objects.filter(job=job).first()
    cause = messages.quota_refused(message)
    with transaction.atomic():
        rows = requeue(job, runtime, cause, "quota-exceeded", now, None, None)
        JobEvent.objects.bulk_create(rows)
    return bool(rows)
