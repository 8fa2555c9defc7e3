"""Celery tasks of the scheduling domain: thin wrappers, the logic lives in queues/services/.

``run_scheduling_cycle`` runs on Celery beat every ``CYCLE_INTERVAL`` seconds and is queued on
each submission, cancellation and node change (at most one queued at a time: a burst of
submissions queues one; queues/services/jobs.py ``queue_cycle``). It is single-flight (the
service takes a lease), so extra ticks that find a cycle already running simply return.
"""

from __future__ import annotations

import logging

from celery import shared_task

from queues.services import run_cycle
from queues.services.jobs import cycle_started

logger = logging.getLogger(__name__)


@shared_task(name="queues.tasks.run_scheduling_cycle", ignore_result=True)
def run_scheduling_cycle() -> int | None:
    """Run one scheduling cycle; returns its ``CycleRun`` id (None: skipped, lease taken)."""
    hostname = getattr(run_scheduling_cycle.request, "hostname", None) or ""
    cycle_started()
    report = run_cycle(worker=hostname)
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
