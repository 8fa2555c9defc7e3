"""Rating inputs (accounting/rating/model.py): bad values refused before any arithmetic."""

from __future__ import annotations

from datetime import datetime

import pytest

from accounting.rating import FlavorPrice, RatingError
from tests.accounting.rating.builders import T0, D, at, usage


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(RatingError, match=r"UsageInterval\(job_id='j1'\)\.start must be .*aware"):
        usage(start=datetime(2026, 3, 1), end=at(1))
    with pytest.raises(RatingError, match=r"FlavorPrice\(flavor='h100'\)\.effective_from"):
        FlavorPrice("h100", D(1), datetime(2026, 3, 1), "USD")


def test_end_before_start_is_refused() -> None:
    with pytest.raises(RatingError, match=r"\.end \(2026-03-01T00:00:00\+00:00\) is before start"):
        usage(start=at(1), end=T0)


def test_negative_units_are_refused() -> None:
    with pytest.raises(RatingError, match=r"\.units must be zero or more, got -1"):
        usage(units=-1)


def test_float_prices_are_refused() -> None:
    with pytest.raises(RatingError, match=r"price_per_unit_hour must be a Decimal, got float"):
        FlavorPrice("h100", 3.0, T0, "USD")  # type: ignore[arg-type]


def test_negative_price_is_refused() -> None:
    with pytest.raises(RatingError, match=r"price_per_unit_hour must be zero or more"):
        FlavorPrice("h100", D("-1"), T0, "USD")
