"""Celery tasks of the scheduling domain: thin wrappers, the logic lives in services.

``run_scheduling_cycle`` is a PLACEHOLDER until the live cycle (queues/services.py) exists: it
schedules nothing. It records that beat's tick reached a worker (a ``CycleRun`` row and an INFO
log line ``scheduling cycle tick``), so the plumbing (broker, worker, beat, database) is
observable and tested end to end. The live cycle replaces its body with a call to the service.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from queues.models import CycleRun

logger = logging.getLogger(__name__)

PLACEHOLDER_OUTCOME = "placeholder: the live scheduling cycle is not built yet; nothing scheduled"


@shared_task(name="queues.tasks.run_scheduling_cycle", ignore_result=True)
def run_scheduling_cycle() -> int:
    """Record one tick of the scheduling cycle; returns the ``CycleRun`` id."""
    hostname = getattr(run_scheduling_cycle.request, "hostname", None) or ""
    run = CycleRun.objects.create(worker=hostname, outcome=PLACEHOLDER_OUTCOME)
    logger.info("scheduling cycle tick (cycle run %s on %s)", run.pk, hostname or "eager")
    run.finished_at = timezone.now()
    run.save(update_fields=["finished_at"])
    return run.pk
