"""Summaries (accounting/rating/summary.py): charges grouped and totalled."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from accounting.rating import RatingError, rate, summarize
from tests.accounting.rating.builders import H100_AT_3, SEVENTH, D, at, price, price_list, usage


def test_grouping_by_month_refuses_a_line_that_crosses_a_month() -> None:
    job = usage(
        start=datetime(2026, 1, 31, 23, tzinfo=UTC), end=datetime(2026, 2, 1, 1, tzinfo=UTC)
    )

    with pytest.raises(RatingError, match=r"crosses a month boundary.*split_by_month"):
        summarize(rate([job], H100_AT_3), group_by=("month",))


def test_group_by_several_keys_sums_each_group_and_the_total_sums_all() -> None:
    prices = price_list(price("h100", "3.00"), price("a100", "2.00"))
    charges = rate(
        [
            usage("j1", team="vision", flavor="h100", units=2),
            usage("j2", team="vision", flavor="h100", units=1),
            usage("j3", team="vision", flavor="a100", units=1),
            usage("j4", team="nlp", flavor="h100", units=1, end=at(3)),
        ],
        prices,
    )

    summary = summarize(charges, group_by=("team", "flavor"))

    assert [(dict(r.group), r.lines, r.unit_hours, r.cost) for r in summary.rows] == [
        ({"team": "nlp", "flavor": "h100"}, 1, D(3), D("9.00")),
        ({"team": "vision", "flavor": "a100"}, 1, D(1), D("2.00")),
        ({"team": "vision", "flavor": "h100"}, 2, D(3), D("9.00")),
    ]
    assert (summary.total.lines, summary.total.unit_hours, summary.total.cost) == (
        4,
        D(7),
        D("20.00"),
    )
    assert summary.currency == "USD"


def test_summary_reports_gpu_equivalent_hours_comparable_across_mig_and_whole_gpus() -> None:
    prices = price_list(price("h100", "7.00"), mig_parents={"h100-1g.10gb": "h100"})
    charges = rate(
        [usage("j1"), usage("j2", flavor="h100-1g.10gb", units=7, gpu_equivalent=SEVENTH)], prices
    )

    [row] = summarize(charges, group_by=("team",)).rows

    assert row.unit_hours == D(8)  # 1 GPU-hour + 7 slice-hours
    assert row.gpu_equivalent_hours == D(2)
    assert row.cost == D("14.00")


def test_summarize_refuses_an_unknown_group_by_key() -> None:
    with pytest.raises(RatingError, match="unknown group_by key 'project'"):
        summarize([], group_by=("team", "project"))


def test_summarize_refuses_charges_in_several_currencies() -> None:
    [usd] = rate([usage()], H100_AT_3)
    eur = replace(usd, currency="EUR")

    with pytest.raises(RatingError, match=r"several currencies \(EUR, USD\)"):
        summarize([usd, eur])
