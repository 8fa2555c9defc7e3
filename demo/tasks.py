"""Celery task of the demo: live traffic (beat entry ``demo-traffic``, only with DEMO_TRAFFIC=1)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from demo.traffic import submit_traffic


@shared_task(name="demo.tasks.submit_demo_traffic", ignore_result=True)
def submit_demo_traffic() -> int:
    """Submit one tick of demo work; returns how many jobs (0 when DEMO_TRAFFIC is off)."""
    return len(submit_traffic(timezone.now()))
