"""Celery tasks of the dashboards: thin wrappers over dashboards.rollup."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from dashboards.rollup import record_cycle


@shared_task(name="dashboards.tasks.roll_up", ignore_result=True)
def roll_up() -> None:
    """Roll up the usage ledger and sample capacity now (idempotent; safe on any schedule)."""
    record_cycle(timezone.now())
