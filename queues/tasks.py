"""Celery tasks of the scheduling domain: thin wrappers, the logic lives in queues/services/.

``run_scheduling_cycle`` runs on Celery beat every ``CYCLE_INTERVAL`` seconds and is queued on
each submission, cancellation and node change. It is single-flight (the service takes a lease),
so extra ticks that find a cycle already running simply return.
"""

from __future__ import annotations

import logging

from celery import shared_task

from queues.services import run_cycle

logger = logging.getLogger(__name__)


@shared_task(name="queues.tasks.run_scheduling_cycle", ignore_result=True)
def run_scheduling_cycle() -> str:
    """Run one scheduling cycle; returns its one-line summary."""
    hostname = getattr(run_scheduling_cycle.request, "hostname", None) or ""
    report = run_cycle(worker=hostname)
    return report.summary()
