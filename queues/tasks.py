"""Celery tasks of the scheduling domain: thin wrappers, the logic lives in queues/services/.

``run_scheduling_cycle`` runs on Celery beat every ``CYCLE_INTERVAL`` seconds and is queued on
each submission, cancellation and node change (at most one queued at a time: a burst of
submissions queues one; queues/services/jobs.py ``queue_cycle``). It is single-flight (the
service takes a lease), so extra ticks that find a cycle already running simply return.

Celery makes one instance of a task class per worker process; `CycleTask` holds the process's
`DriverPool` there, so the Kubernetes drivers (and the watches they follow their clusters with)
live from one cycle to the next in that process, and its `SnapshotKeep`, so the engine reuses
what it learned about the jobs and nodes that did not change (gpusched/engine/snapshot_keep.py).
Both are made on the first cycle the process runs, after the prefork pool has forked: no
connection is ever shared between processes.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task

from gpusched.engine.snapshot_keep import SnapshotKeep
from queues.clusters.pool import DriverPool
from queues.services import run_cycle
from queues.services.jobs import cycle_started

logger = logging.getLogger(__name__)


class CycleTask(Task):  # type: ignore[misc]
    """The cycle task's class: its one instance per worker process keeps the drivers and the
    engine's state."""

    _drivers: DriverPool | None = None
    _keep: SnapshotKeep | None = None

    @property
    def drivers(self) -> DriverPool:
        if self._drivers is None:
            self._drivers = DriverPool()
        return self._drivers

    @property
    def keep(self) -> SnapshotKeep:
        if self._keep is None:
            self._keep = SnapshotKeep()
        return self._keep


@shared_task(
    name="queues.tasks.run_scheduling_cycle", ignore_result=True, base=CycleTask, bind=True
)
def run_scheduling_cycle(self: CycleTask) -> int | None:
    """Run one scheduling cycle; returns its ``CycleRun`` id (None: skipped, lease taken)."""
    hostname = getattr(self.request, "hostname", None) or ""
    # the queued-cycle mark is cleared by the cycle that takes the lease: a task skipped while
    # another cycle runs (a second worker process) leaves it, so submissions meanwhile do not
    # queue one more skipped task each (issue 27: one per two or three POSTs before)
    report = run_cycle(worker=hostname, drivers=self.drivers, keep=self.keep, started=cycle_started)
    logger.info(
        "scheduling cycle tick (cycle run %s on %s): %s",
        report.cycle_run_id,
        hostname or "eager",
        report.summary(),
        extra={"cycle_id": report.cycle_id},
    )
    return report.cycle_run_id


@shared_task(name="queues.tasks.run_what_if", ignore_result=True)
def run_what_if(run_id: str) -> None:
    """Replay a what-if run (queues/services/whatif/runs.py); its row holds progress and result."""
    from queues.services.whatif.runs import execute

    execute(run_id)
