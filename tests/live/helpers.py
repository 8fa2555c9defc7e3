"""Shared helpers of the live-cycle tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from queues.models import Job

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def kinds(job: Job) -> list[str]:
    return list(job.events.order_by("at", "pk").values_list("kind", flat=True))


def last_message(job: Job, kind: str) -> str:
    event = job.events.filter(kind=kind).order_by("-at", "-pk").first()
    assert event is not None, f"job {job.pk} has no {kind} event; it has {kinds(job)}"
    return event.message
