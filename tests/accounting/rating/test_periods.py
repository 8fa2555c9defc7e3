"""Months and statement periods (accounting/rating/periods.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from accounting.rating import clip_to_period, rate, split_by_month, summarize
from tests.accounting.rating.builders import H100_AT_3, T0, D, at, usage


def test_month_boundary_split_gives_one_line_per_month() -> None:
    job = usage(
        start=datetime(2026, 1, 31, 22, tzinfo=UTC), end=datetime(2026, 3, 1, 1, tzinfo=UTC)
    )

    pieces = split_by_month([job])

    assert [(p.start, p.end) for p in pieces] == [
        (datetime(2026, 1, 31, 22, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)),
        (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
        (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 1, 1, tzinfo=UTC)),
    ]
    summary = summarize(rate(pieces, H100_AT_3), group_by=("month",))
    assert [(row.group["month"], row.unit_hours) for row in summary.rows] == [
        ("2026-01", D(2)),
        ("2026-02", D(28 * 24)),
        ("2026-03", D(1)),
    ]


def test_month_split_crosses_the_year_end() -> None:
    job = usage(
        start=datetime(2025, 12, 31, 23, tzinfo=UTC), end=datetime(2026, 1, 1, 1, tzinfo=UTC)
    )

    assert [p.start.year for p in split_by_month([job])] == [2025, 2026]


def test_clip_to_period_keeps_only_the_part_inside_the_statement_period() -> None:
    jobs = [
        usage("inside", end=at(2)),
        usage("before", start=at(-5), end=at(-1)),
        usage("across", start=at(-1), end=at(1)),
    ]

    clipped = clip_to_period(jobs, T0, at(24))

    assert [(c.job_id, c.start, c.end) for c in clipped] == [
        ("inside", T0, at(2)),
        ("across", T0, at(1)),
    ]
