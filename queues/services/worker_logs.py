"""A job's workers as their pods are now, with the last lines of their logs: what the job page
and ``GET /api/v1/jobs/{id}/logs/`` show (one home for the rules of both).

Only a job that holds GPUs on a cluster (admitted, running, preempted and stopping), or that
ended while its pods may still be there, has workers to show; a pending job has none, and the
answer says why instead. The cluster is read through its driver (`ClusterDriver.worker_logs`),
at the moment of the request: nothing is stored. A cluster that cannot be read raises
`LogsUnavailable` with its error; the callers show it (the API: 503), never a server error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError

from queues.clusters.base import MAX_LOG_LINES, DriverError, WorkerLog
from queues.clusters.factory import get_driver
from queues.clusters.manifests import team_namespace
from queues.models import Job, JobRuntime

DEFAULT_TAIL = 100
MAX_TAIL = MAX_LOG_LINES  # 5000
HOLDING = frozenset({Job.State.ADMITTED, Job.State.RUNNING, Job.State.PREEMPTED})
MISSING = "missing"  # the phase of a planned worker that has no pod


class LogsUnavailable(Exception):
    """The job's cluster cannot be read now; the message says which and why."""


@dataclass(frozen=True)
class WorkerView:
    """One worker as the page and the API show it."""

    index: int
    pod: str
    node: str
    phase: str  # pending, running, succeeded, failed, unknown; "missing": no pod
    reason: str
    message: str
    restarts: int
    lines: list[str]


@dataclass(frozen=True)
class JobLogs:
    job: int
    cluster: str
    workers: list[WorkerView]
    detail: str = ""  # why there are no workers to show (empty when there are)

    def as_dict(self) -> dict[str, Any]:
        """The API's JSON: ``detail`` only when there is something to say."""
        data = asdict(self)
        if not self.detail:
            del data["detail"]
        return data


@dataclass(frozen=True)
class LogQuery:
    worker: int | None  # None: every worker
    tail: int


def parse_log_query(params: Mapping[str, Any], job: Job) -> LogQuery:
    """``worker`` (a worker index of the job, 0 to workers - 1; absent or empty: every worker)
    and ``tail`` (1 to 5000 lines, default 100) from a query string; `ValidationError` naming
    the parameter."""
    errors: dict[str, str] = {}
    worker: int | None = None
    raw_worker = str(params.get("worker") or "").strip()
    if raw_worker:
        if raw_worker.isdigit() and int(raw_worker) < job.workers:
            worker = int(raw_worker)
        else:
            last = job.workers - 1
            errors["worker"] = (
                f"A worker index of this job: 0 to {last}." if last else "This job has worker 0."
            )
    tail = DEFAULT_TAIL
    raw_tail = str(params.get("tail") or "").strip()
    if raw_tail:
        if raw_tail.isdigit() and 1 <= int(raw_tail) <= MAX_TAIL:
            tail = int(raw_tail)
        else:
            errors["tail"] = f"A whole number of lines from 1 to {MAX_TAIL}."
    if errors:
        raise ValidationError(errors)
    return LogQuery(worker, tail)


def has_workers(job: Job) -> bool:
    """Whether the job may have pods on a cluster now (holding GPUs, or ended on one)."""
    if job.cluster_id is None:
        return False
    return job.state in HOLDING or job.is_finished


def job_logs(
    job: Job, worker: int | None = None, tail: int = DEFAULT_TAIL, now: datetime | None = None
) -> JobLogs:
    """The job's workers (every one, or worker `worker` only) with the last `tail` lines of
    each log (`tail` 0: the status only). Raises `LogsUnavailable` when the cluster cannot be
    read (unreachable, refusing, or its connection settings are unusable). `now`: a simulated
    cluster's clock (default: real time)."""
    if not has_workers(job):
        return JobLogs(job.pk, "", [], _why_none(job))
    cluster = job.cluster
    assert cluster is not None  # has_workers
    try:
        driver = get_driver(cluster, now=now)
        try:
            namespace = team_namespace(job.queue.team.name)
            found = driver.worker_logs(str(job.pk), namespace, worker, tail)
        finally:
            driver.close()
    except DriverError as error:
        raise LogsUnavailable(f"Cluster {cluster.name} cannot be read now: {error}") from error
    planned = _planned(job) if job.state in HOLDING else {}
    views = {log.index: _view(log, planned.get(log.index, "")) for log in found}
    if worker is None:
        for index, node in planned.items():
            if index not in views:  # planned, but its pod is not (or no longer) there
                views[index] = _view(WorkerLog(index, None), node)
    if not views:
        state = job.get_state_display().lower()
        detail = f"Job {job.pk} {state} and its workers' pods are gone from {cluster.name}."
        if job.state in HOLDING:
            detail = f"Job {job.pk} has no pods on {cluster.name} at the moment."
        return JobLogs(job.pk, cluster.name, [], detail)
    return JobLogs(job.pk, cluster.name, [views[index] for index in sorted(views)])


def _view(log: WorkerLog, node: str = "") -> WorkerView:
    status = log.worker
    if status is None:
        message = log.note or f"worker {log.index} has no pod"
        return WorkerView(log.index, "", node, MISSING, "", message, 0, [])
    message = "; ".join(part for part in (status.message, log.note) if part)
    return WorkerView(
        index=log.index,
        pod=status.pod_name,
        node=status.node,
        phase=status.phase.value,
        reason=status.reason,
        message=message,
        restarts=status.restarts,
        lines=list(log.lines),
    )


def _planned(job: Job) -> dict[int, str]:
    """The workers the scheduler planned for the job's admission: index -> node."""
    pairs = JobRuntime.objects.filter(job=job).values_list("worker_nodes", flat=True).first()
    return {int(index): str(node) for index, node in pairs or []}


def _why_none(job: Job) -> str:
    if job.state == Job.State.PENDING:
        return (
            f"Job {job.pk} is pending: it holds no GPUs on a cluster yet, so it has no workers "
            "and no logs. Its page says why it waits."
        )
    return f"Job {job.pk} never ran on a cluster: it has no workers and no logs."
