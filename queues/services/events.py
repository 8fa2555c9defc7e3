"""Every job event the platform writes, built here: its kind, its sentence and its data.

One builder per happening (a kind may have several: a job is requeued after its grace period,
at once by the engine, or after a worker failure). The live services (submission, cancel,
apply, observe, effects) and the demo's replayed history (``demo.history_rows``) store what
these return, so a replayed month's timeline is byte for byte what the live platform writes for
the same happenings (tests/demo/test_event_payloads.py compares them). The sentences themselves
come from ``queues.services.messages``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from queues.models import Job, JobEvent
from queues.services import messages
from queues.services.report import CycleReport
from queues.services.transitions import job_label

Kind = JobEvent.Kind
logger = logging.getLogger(__name__)

# kind -> the builders that write it (tests check that every kind has one)
BUILDERS: dict[str, list[str]] = {}

_Builder = TypeVar("_Builder", bound=Callable[..., "Said"])


def _builds(*kinds: str) -> Callable[[_Builder], _Builder]:
    def register(builder: _Builder) -> _Builder:
        for kind in kinds:
            BUILDERS.setdefault(kind, []).append(builder.__name__)
        return builder

    return register


@dataclass(frozen=True)
class Said:
    """An event to store: its kind, its sentence (``JobEvent.message``) and its data."""

    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def row(self, job: Job | int, at: datetime) -> JobEvent:
        """The unsaved ``JobEvent`` (callers bulk-create them, or save it)."""
        job_id = job if isinstance(job, int) else job.pk
        return JobEvent(job_id=job_id, at=at, kind=self.kind, message=self.message, data=self.data)


def recorded(job: Job, said: Said, at: datetime, report: CycleReport) -> JobEvent:
    """A cycle's event: the unsaved row, and its line in the cycle's report."""
    report.add(said.kind, f"{job_label(job)}: {said.message}")
    logger.info("%s %s: %s", said.kind, job_label(job), said.message, extra={"job_id": job.pk})
    return said.row(job, at)


# --- submission and cancellation ----------------------------------------------------------------
@_builds(Kind.SUBMITTED)
def submitted(
    *,
    queue: str,
    owner: str,
    workers: int,
    gpus_per_worker: int,
    flavors: Sequence[str],
    service_class: str,
) -> Said:
    text = messages.submitted(queue, owner, workers, gpus_per_worker, flavors, service_class)
    return Said(Kind.SUBMITTED, text)


@_builds(Kind.CANCELLED)
def cancelled(*, by: str, state: str, grace: float = 0, release: datetime | None = None) -> Said:
    """Cancelled by ``by`` while the job was in ``state`` (before the move); a job holding GPUs
    stops with ``grace`` seconds, its GPUs free at ``release``."""
    holding = state in (Job.State.ADMITTED, Job.State.RUNNING)
    text = messages.cancelled(
        by,
        release=release if holding else None,
        grace=grace,
        stopping=state == Job.State.PREEMPTED,
    )
    return Said(Kind.CANCELLED, text)


# --- the engine's decisions (apply) -------------------------------------------------------------
@_builds(Kind.PENDING)
def pending(*, reason: str, message: str) -> Said:
    """Why the job waits (``messages.pending``), written when its reason changes."""
    return Said(Kind.PENDING, message, {"reason": reason})


@_builds(Kind.ADMITTED)
def admitted(
    *,
    cluster: str,
    flavor: str,
    placement: Mapping[str, int],  # node -> units
    workers: int,
    queue: str,
    borrowing: bool,
    cohort: str | None,
    start: datetime,
    now: datetime,
) -> Said:
    text = messages.admitted(
        cluster=cluster,
        flavor=flavor,
        placement=placement,
        workers=workers,
        queue=queue,
        borrowing=borrowing,
        cohort=cohort,
        start=start,
        now=now,
    )
    data = {
        "cluster": cluster,
        "flavor": flavor,
        "placement": dict(placement),
        "workers": workers,
        "borrowing": borrowing,
        "start_at": start.isoformat(),
    }
    return Said(Kind.ADMITTED, text, data)


@_builds(Kind.SCALED)
def scaled(*, before: int, workers: int, by: str, reason: str | None) -> Said:
    """An elastic job grew into idle GPUs or shrank for ``by`` (the preemptor's label)."""
    return Said(Kind.SCALED, messages.scaled(before, workers, by, reason), {"workers": workers})


ENGINE_STOPS = (Kind.PREEMPTED, Kind.REQUEUED, Kind.FAILED)


@_builds(*ENGINE_STOPS)
def stopped(
    kind: str,
    *,
    reason: str,
    by: str | None,
    by_label: str,
    now: datetime,
    release: datetime,
    their_queue: str,
    mine: str,
    preemptor_class: tuple[str, int] | None = None,
    failed_nodes: Sequence[str] = (),
    service_class: str = "",
    max_runtime: int | None = None,
) -> Said:
    """The engine stopped the job: ``preempted`` (stopping within its grace period),
    ``requeued`` (at once) or ``failed`` (not requeued). ``by``: the preemptor's engine name
    (its id), ``by_label`` its label."""
    if kind not in ENGINE_STOPS:
        raise ValueError(f"an engine stop is one of {', '.join(ENGINE_STOPS)}, not {kind!r}")
    text = messages.stopped(
        reason,
        now=now,
        release=release,
        by=by_label,
        their_queue=their_queue,
        mine=mine,
        preemptor_class=preemptor_class,
        failed_nodes=failed_nodes,
        service_class=service_class,
        max_runtime=max_runtime,
    )
    return Said(kind, text, {"reason": reason, "by": by})


# --- what the clusters did (observe, effects) ---------------------------------------------------
@_builds(Kind.STARTED)
def started(*, workers: int, nodes: Sequence[str]) -> Said:
    """Every worker is there and running: ``workers`` is what the ledger bills from now on."""
    return Said(Kind.STARTED, messages.started(workers, nodes), {"workers": workers})


@_builds(Kind.SUCCEEDED)
def succeeded() -> Said:
    return Said(Kind.SUCCEEDED, messages.SUCCEEDED)


@_builds(Kind.REQUEUED, Kind.FAILED)
def worker_failed(*, detail: str, failures: int, limit: int) -> Said:
    """A worker failed: the gang is requeued, or failed once ``failures`` reaches ``limit``."""
    kind = Kind.FAILED if failures >= limit else Kind.REQUEUED
    return Said(kind, messages.worker_failure(detail, failures, limit), {"failures": failures})


@_builds(Kind.REQUEUED)
def back_in_queue(*, submitted_at: datetime) -> Said:
    """A preempted job's grace period is over: back in the queue, submission time kept."""
    return Said(Kind.REQUEUED, messages.back_in_queue(submitted_at))


@_builds(Kind.FAILED)
def rejected(*, reason: str) -> Said:
    """The cluster refused to launch the job (retrying unchanged cannot help)."""
    return Said(Kind.FAILED, messages.rejected(reason))


# --- a gang the cluster did not keep whole (gang.py) --------------------------------------------
@_builds(Kind.REQUEUED)
def gang_requeued(*, cause: str, reason: str, requeues: int, until: datetime, backoff: int) -> Said:
    """Workers missing after the launch retries, lost from a running gang, or refused by a
    ResourceQuota (``cause``): stopped whole and requeued, not admitted again before ``until``."""
    text = messages.gang_requeued(cause, until=until, backoff=backoff, requeues=requeues)
    data = {"reason": reason, "requeues": requeues, "requeue_after": until.isoformat()}
    return Said(Kind.REQUEUED, text, data)


@_builds(Kind.SCALED)
def gang_shrunk(*, cause: str, workers: int, requested: int, minimum: int, until: datetime) -> Said:
    """An elastic job lost workers (``cause``) and goes on with the ``workers`` it has left,
    growing again no sooner than ``until``."""
    text = messages.gang_shrunk(cause, workers, requested, minimum, until)
    data = {"workers": workers, "reason": "lost-workers", "grow_after": until.isoformat()}
    return Said(Kind.SCALED, text, data)


# --- kubectl-applied workloads taken in (intake.py) ---------------------------------------------
@_builds(Kind.WORKLOAD)
def workload_taken_in(*, workload: str, queue_label: str, owner: str, owner_from: str) -> Said:
    """A kubectl-applied Job, JobSet or PyTorchJob became this job."""
    text = messages.workload_taken_in(workload, queue_label, owner, owner_from)
    return Said(Kind.WORKLOAD, text, {"action": "taken-in", "workload": workload})


@_builds(Kind.WORKLOAD)
def workload_unsuspended(*, workload: str, nodes: Sequence[str]) -> Said:
    text = messages.workload_unsuspended(workload, nodes)
    return Said(Kind.WORKLOAD, text, {"action": "unsuspended", "nodes": list(nodes)})


@_builds(Kind.WORKLOAD)
def workload_suspended(*, workload: str) -> Said:
    return Said(Kind.WORKLOAD, messages.workload_suspended(workload), {"action": "suspended"})


@_builds(Kind.WORKLOAD)
def workload_restored(*, workload: str) -> Said:
    return Said(Kind.WORKLOAD, messages.workload_restored(workload), {"action": "restored"})
