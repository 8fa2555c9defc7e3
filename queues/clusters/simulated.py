"""The simulated cluster: the embedded default of ``make demo`` (no Kubernetes needed).

Its nodes are the cluster's ``Node`` rows (admins add them, and fail or recover them from the
admin site); its workloads are ``SimulatedWorkload`` rows. A launched job "runs" for its
``duration_hint`` of simulated seconds (else a duration drawn deterministically from its
estimate), in time accelerated ``SIMULATION_SPEED`` times, then succeeds, or fails for a
deterministic ``SIMULATION_FAILURE_RATE`` share of runs (decided per job id and attempt, so a
rerun of the same job can succeed). A stop takes the grace period it is given, which is in
wall-clock seconds already (the live snapshot converted the class's job seconds: clock.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from queues.clusters.base import (
    MAX_LOG_LINES,
    ClusterState,
    DriverError,
    InvalidSpec,
    LaunchSpec,
    NodeInfo,
    WorkerLog,
    WorkerPhase,
    WorkerStatus,
    WorkloadConflict,
    WorkloadStatus,
    workload_phase,
)
from queues.clusters.simulated_logs import SimulatedRun, worker_log
from queues.models import Job, Node, SimulatedWorkload

DEFAULT_RUNTIME_RANGE = (600.0, 7200.0)  # simulated seconds, when a job gives no hint at all


def unit_draw(*parts: object) -> float:
    """A number in [0, 1) that depends only on ``parts`` (stable across processes and runs)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


FAILURE_MESSAGE = "simulated failure: exit code 1"  # what worker 0 of a failing run reports


def run_outcome(
    key: object, attempt: int, duration: float, failure_rate: float
) -> tuple[float, bool]:
    """(simulated seconds until attempt ``attempt`` of the job ``key`` ends, whether it ends
    failed) for a job that runs ``duration`` seconds when nothing goes wrong. The demo's history
    replay (``demo.replay``) draws its runs with it too."""
    fails = unit_draw(key, attempt, "fails") < failure_rate
    if fails:
        duration *= 0.1 + 0.8 * unit_draw(key, attempt, "fails-at")
    return max(duration, 1.0), fails


PLANNED_FROM = ("duration_hint", "estimated_runtime", "preemption_count")
"""The fields of a job ``planned_run`` reads (a launch of 10,000 jobs reads only these)."""


def planned_run(job: Job, failure_rate: float) -> tuple[float, bool]:
    """(simulated seconds until the run ends, whether it ends failed) for this attempt."""
    if job.duration_hint:
        duration = float(job.duration_hint)
    elif job.estimated_runtime:
        # real jobs usually end somewhat before their estimate
        duration = job.estimated_runtime * (0.5 + 0.5 * unit_draw(job.pk, "duration"))
    else:
        low, high = DEFAULT_RUNTIME_RANGE
        duration = low + (high - low) * unit_draw(job.pk, "duration")
    return run_outcome(job.pk, job.preemption_count, duration, failure_rate)


class _Workload(NamedTuple):
    """The columns of a ``SimulatedWorkload`` a sync reads (not a model object per job)."""

    job_id: str
    team: str
    workers: list[list[Any]]
    launched_at: datetime
    run_seconds: float
    fails: bool
    stop_requested_at: datetime | None


class SimulatedDriver:
    """`ClusterDriver` of a simulated cluster; ``now`` is the clock (the cycle's time)."""

    nodes_in_database = True  # the Node rows are the truth: the service must not rewrite them

    def __init__(
        self,
        cluster_id: int,
        *,
        now: Callable[[], datetime] = timezone.now,
        speed: float | None = None,
        failure_rate: float | None = None,
    ) -> None:
        self.cluster_id = cluster_id
        self.now = now
        self.speed = float(settings.SIMULATION_SPEED if speed is None else speed)
        self.failure_rate = float(
            settings.SIMULATION_FAILURE_RATE if failure_rate is None else failure_rate
        )

    def __repr__(self) -> str:
        return f"SimulatedDriver(cluster={self.cluster_id}, speed={self.speed:g})"

    # -- reading -------------------------------------------------------------------------------
    def sync(self) -> ClusterState:
        now = self.now()
        nodes = Node.objects.filter(cluster_id=self.cluster_id).order_by("name")
        infos = [
            NodeInfo(
                name=name,
                allocatable=dict(capacity),  # by flavor name on a simulated cluster
                labels=dict(labels),
                ready=ready,
                unschedulable=not schedulable,
            )
            for name, capacity, labels, ready, schedulable in nodes.values_list(
                "name", "capacity", "labels", "ready", "schedulable"
            )
        ]
        ready = {node.name: node.ready for node in infos}
        SimulatedWorkload.objects.filter(cluster_id=self.cluster_id, gone_at__lte=now).delete()
        rows = SimulatedWorkload.objects.filter(cluster_id=self.cluster_id).order_by("pk")
        workloads = [
            self._status(_Workload(*values), now, ready)
            for values in rows.values_list(*_Workload._fields)
        ]
        return ClusterState(
            nodes=tuple(infos),
            workloads=tuple(workloads),
        )

    def _status(
        self, row: SimulatedWorkload | _Workload, now: datetime, ready: dict[str, bool]
    ) -> WorkloadStatus:
        elapsed = max(0.0, (now - row.launched_at).total_seconds()) * self.speed
        terminating = row.stop_requested_at is not None
        ended = elapsed >= row.run_seconds and not terminating
        workers = []
        for index, node in row.workers:
            phase = WorkerPhase.RUNNING
            message = ""
            if not ready.get(node, False):
                phase, message = WorkerPhase.UNKNOWN, f"node {node} is not ready"
            elif ended and not row.fails:
                phase = WorkerPhase.SUCCEEDED
            elif ended and index == 0:
                phase, message = WorkerPhase.FAILED, FAILURE_MESSAGE
            workers.append(
                WorkerStatus(
                    index=index,
                    pod_name=f"job-{row.job_id}-{index}",
                    node=node,
                    phase=phase,
                    terminating=terminating,
                    message=message,
                )
            )
        phases = [w.phase for w in workers]
        failed = sum(1 for p in phases if p is WorkerPhase.FAILED)
        return WorkloadStatus(
            job_id=row.job_id,
            namespace=row.team,
            phase=workload_phase(phases),
            workers=tuple(workers),
            failed_workers=failed,
            message=next((w.message for w in workers if w.message), ""),
        )

    def worker_logs(
        self, job_id: str, namespace: str, worker_index: int | None, tail_lines: int
    ) -> tuple[WorkerLog, ...]:
        """The workers of the job's run with generated log lines (`simulated_logs`)."""
        if not 0 <= tail_lines <= MAX_LOG_LINES:
            raise InvalidSpec(f"tail_lines: must be 0 to {MAX_LOG_LINES}, got {tail_lines}")
        now = self.now()
        row = (
            SimulatedWorkload.objects.filter(cluster_id=self.cluster_id, job_id=job_id)
            .exclude(gone_at__lte=now)
            .first()
        )
        ready = dict(Node.objects.filter(cluster_id=self.cluster_id).values_list("name", "ready"))
        workers = self._status(row, now, ready).workers if row is not None else ()
        if worker_index is not None:
            workers = tuple(w for w in workers if w.index == worker_index)
            if not workers:
                return (WorkerLog(worker_index, None, note=f"worker {worker_index} has no pod"),)
        if row is None:
            return ()
        elapsed = max(0.0, (now - row.launched_at).total_seconds()) * self.speed
        stopped = row.stop_requested_at
        run = SimulatedRun(
            job_id=job_id,
            launched_at=row.launched_at,
            speed=self.speed,
            run_seconds=row.run_seconds,
            fails=row.fails,
            world_size=len(row.workers),
            stopped_after=None
            if stopped is None
            else max(0.0, (stopped - row.launched_at).total_seconds()) * self.speed,
        )
        return tuple(
            WorkerLog(w.index, w, tuple(worker_log(run, w.index, w.node, elapsed, tail_lines)))
            for w in workers
        )

    # -- writing -------------------------------------------------------------------------------
    def launch(self, spec: LaunchSpec) -> None:
        error = self.launch_many([spec]).get(spec.job_id)
        if error is not None:
            raise error

    def launch_many(self, specs: list[LaunchSpec]) -> dict[str, DriverError]:
        """Launch these jobs: two reads, one insert, one commit. A job refused is left out and
        its error returned (by job id); the others launch. Idempotent like ``launch``."""
        ids = [spec.job_id for spec in specs]
        existing = {
            w.job_id: w
            for w in SimulatedWorkload.objects.filter(cluster_id=self.cluster_id, job_id__in=ids)
        }
        jobs = Job.objects.only(*PLANNED_FROM).in_bulk([int(i) for i in ids if i.isdigit()])
        errors: dict[str, DriverError] = {}
        rows: list[SimulatedWorkload] = []
        for spec in specs:
            if not spec.workers:
                errors[spec.job_id] = InvalidSpec("workers: a launch needs at least one worker")
                continue
            previous = existing.get(spec.job_id)
            if previous is not None:
                if previous.stop_requested_at is not None:
                    errors[spec.job_id] = WorkloadConflict(
                        f"job {spec.job_id}: the workers of its previous run are still terminating"
                    )
                continue  # already launched as asked: launching is idempotent
            job = jobs.get(int(spec.job_id)) if spec.job_id.isdigit() else None
            if job is None:
                errors[spec.job_id] = InvalidSpec(f"job_id: no job {spec.job_id} exists")
                continue
            run_seconds, fails = planned_run(job, self.failure_rate)
            rows.append(
                SimulatedWorkload(
                    cluster_id=self.cluster_id,
                    job_id=spec.job_id,
                    team=spec.team,
                    workers=[[w.index, w.node] for w in sorted(spec.workers, key=_index)],
                    launched_at=self.now(),
                    run_seconds=run_seconds,
                    fails=fails,
                )
            )
        with transaction.atomic():  # a concurrent launch of the same job won: fine
            SimulatedWorkload.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
        return errors

    def stop(self, job_id: str, namespace: str, grace_period_seconds: int) -> None:
        if grace_period_seconds < 0:
            raise InvalidSpec(f"grace_period_seconds: must be >= 0, got {grace_period_seconds}")
        now = self.now()
        gone = now + timedelta(seconds=grace_period_seconds)  # wall seconds (see above)
        SimulatedWorkload.objects.filter(
            cluster_id=self.cluster_id, job_id=job_id, stop_requested_at__isnull=True
        ).update(stop_requested_at=now, gone_at=gone)

    def scale(self, spec: LaunchSpec) -> None:
        SimulatedWorkload.objects.filter(
            cluster_id=self.cluster_id, job_id=spec.job_id, stop_requested_at__isnull=True
        ).update(workers=[[w.index, w.node] for w in sorted(spec.workers, key=_index)])

    def close(self) -> None:
        return None


def _index(worker: object) -> int:
    return int(worker.index)  # type: ignore[attr-defined]
