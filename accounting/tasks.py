"""Celery tasks of accounting: thin wrappers over the services."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from accounting.statements import close_month, first_day


@shared_task(name="accounting.tasks.close_last_month", ignore_result=True)
def close_last_month() -> int:
    """Finalize last month's statements (beat: early on the 1st of each month, UTC). Safe to
    re-run: final statements never change."""
    from datetime import timedelta

    now = timezone.now()
    month = (first_day(now) - timedelta(days=1)).replace(day=1)
    return len(close_month(month, now))
