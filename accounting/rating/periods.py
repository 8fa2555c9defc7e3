"""Cutting usage intervals at moments: month boundaries (UTC) and statement periods."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime

from accounting.rating.model import RatingError, UsageInterval, aware_utc


def month_start(moment: datetime) -> datetime:
    """00:00 UTC on the first day of `moment`'s month (UTC)."""
    moment = aware_utc("month_start", "moment", moment)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC)


def next_month_start(moment: datetime) -> datetime:
    """00:00 UTC on the first day of the month after `moment`'s month (UTC)."""
    first = month_start(moment)
    if first.month == 12:
        return first.replace(year=first.year + 1, month=1)
    return first.replace(month=first.month + 1)


def split_at(interval: UsageInterval, moments: Iterable[datetime]) -> list[UsageInterval]:
    """Cut `interval` at each of `moments` that falls strictly inside it; the pieces are
    contiguous, in time order, and together cover exactly [start, end)."""
    cuts = sorted(
        {
            cut
            for cut in (aware_utc("split_at", "moments", moment) for moment in moments)
            if interval.start < cut < interval.end
        }
    )
    bounds = [interval.start, *cuts, interval.end]
    if not cuts:
        return [interval]
    return [replace(interval, start=a, end=b) for a, b in itertools.pairwise(bounds)]


def split_by_month(intervals: Iterable[UsageInterval]) -> list[UsageInterval]:
    """Cut every interval at the UTC month boundaries it crosses (for monthly statements)."""
    pieces: list[UsageInterval] = []
    for interval in intervals:
        boundaries: list[datetime] = []
        boundary = next_month_start(interval.start)
        while boundary < interval.end:
            boundaries.append(boundary)
            boundary = next_month_start(boundary)
        pieces.extend(split_at(interval, boundaries))
    return pieces


def clip_to_period(
    intervals: Iterable[UsageInterval], start: datetime, end: datetime
) -> list[UsageInterval]:
    """The parts of `intervals` inside the statement period [start, end); intervals that do not
    overlap it are dropped."""
    start = aware_utc("clip_to_period", "start", start)
    end = aware_utc("clip_to_period", "end", end)
    if end < start:
        raise RatingError(
            f"clip_to_period: end ({end.isoformat()}) is before start ({start.isoformat()})"
        )
    clipped: list[UsageInterval] = []
    for interval in intervals:
        lower, upper = max(interval.start, start), min(interval.end, end)
        if lower < upper:
            clipped.append(replace(interval, start=lower, end=upper))
    return clipped
