"""Shared helpers of the accounting tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from accounting.models import UsageRecord

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    """T0 plus `hours`."""
    return T0 + timedelta(hours=hours)


def rows(job_id: int | None = None) -> list[tuple[datetime, datetime, int, bool, Decimal | None]]:
    """(start, end, units, closed, cost) of the ledger rows, in time order."""
    records = UsageRecord.objects.order_by("start", "pk")
    if job_id is not None:
        records = records.filter(job_id=job_id)
    return [(r.start, r.end, r.units, r.closed, r.cost) for r in records]
