"""Rating (accounting/rating/rate.py): usage + price history -> charges. No Django, no database."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from accounting.rating import ClassMultiplier, rate
from tests.accounting.rating.builders import H100_AT_3, SEVENTH, T0, D, at, price, price_list, usage


def test_one_gpu_for_one_hour_costs_the_hourly_price() -> None:
    [charge] = rate([usage()], H100_AT_3)

    assert (charge.start, charge.end) == (T0, at(1))
    assert charge.seconds == 3600
    assert charge.unit_hours == D("1.000000")
    assert charge.gpu_equivalent_hours == D("1.000000")
    assert charge.unit_price == D("3.00")
    assert charge.multiplier == 1
    assert charge.cost == D("3.00")
    assert charge.currency == "USD"
    assert (charge.team, charge.queue, charge.user, charge.cluster) == (
        "vision",
        "vision-main",
        "ada",
        "c1",
    )


def test_four_gpus_for_ninety_minutes_cost_six_gpu_hours() -> None:
    [charge] = rate([usage(units=4, end=at(1.5))], H100_AT_3)

    assert charge.unit_hours == D("6")
    assert charge.cost == D("18.00")


def test_price_change_in_the_middle_of_a_job_splits_the_line_exactly_at_the_change() -> None:
    change = at(hours=1, days=0) + timedelta(minutes=30)
    prices = price_list(price("h100", "3.00"), price("h100", "4.00", since=change))

    first, second = rate([usage(units=2, end=at(3))], prices)

    assert (first.start, first.end, first.unit_price) == (T0, change, D("3.00"))
    assert (second.start, second.end, second.unit_price) == (change, at(3), D("4.00"))
    assert first.cost == D("9.00")  # 2 GPUs x 1.5 h x 3.00
    assert second.cost == D("12.00")  # 2 GPUs x 1.5 h x 4.00
    assert first.seconds + second.seconds == 3 * 3600


def test_a_price_row_restating_the_same_price_does_not_split_the_line() -> None:
    prices = price_list(price("h100", "3.00"), price("h100", "3.00", since=at(0.5)))

    [charge] = rate([usage()], prices)

    assert charge.cost == D("3.00")


def test_a_price_effective_after_the_job_does_not_apply_to_it() -> None:
    prices = price_list(price("h100", "3.00"), price("h100", "9.00", since=at(1)))

    [charge] = rate([usage()], prices)

    assert charge.unit_price == D("3.00")


def test_spot_class_is_cheaper_than_standard_for_the_same_usage() -> None:
    prices = price_list(
        price("h100", "3.00"),
        multipliers=(
            ClassMultiplier("spot", D("0.4"), at(days=-30)),
            ClassMultiplier("standard", D("1"), at(days=-30)),
        ),
    )

    [standard] = rate([usage(service_class="standard")], prices)
    [spot] = rate([usage(service_class="spot")], prices)

    assert standard.cost == D("3.00")
    assert (spot.multiplier, spot.cost) == (D("0.4"), D("1.20"))


def test_class_multiplier_change_mid_job_splits_the_line() -> None:
    prices = price_list(
        price("h100", "3.00"),
        multipliers=(
            ClassMultiplier("spot", D("0.5"), at(days=-30)),
            ClassMultiplier("spot", D("0.25"), at(2)),
        ),
    )

    first, second = rate([usage(service_class="spot", end=at(4))], prices)

    assert (first.end, first.multiplier, first.cost) == (at(2), D("0.5"), D("3.00"))
    assert (second.start, second.multiplier, second.cost) == (at(2), D("0.25"), D("1.50"))


def test_class_without_a_multiplier_row_is_rated_at_one() -> None:
    [charge] = rate([usage(service_class="research")], H100_AT_3)

    assert charge.multiplier == 1
    assert charge.cost == D("3.00")


def test_mig_slice_with_its_own_price_row_is_priced_by_it() -> None:
    prices = price_list(
        price("h100", "3.00"),
        price("h100-1g.10gb", "0.50"),
        mig_parents={"h100-1g.10gb": "h100"},
    )

    [charge] = rate([usage(flavor="h100-1g.10gb", units=2, gpu_equivalent=SEVENTH)], prices)

    assert (charge.unit_price, charge.priced_from) == (D("0.50"), "h100-1g.10gb")
    assert charge.cost == D("1.00")
    assert charge.unit_hours == D("2")
    assert charge.gpu_equivalent_hours == D("0.285714")  # 2/7 rounded to 0.000001 h


def test_mig_slice_without_own_row_is_priced_at_gpu_equivalent_times_parent_price() -> None:
    prices = price_list(price("h100", "3.50"), mig_parents={"h100-3g.40gb": "h100"})

    [charge] = rate([usage(flavor="h100-3g.40gb", gpu_equivalent=D(3) / D(7))], prices)

    assert charge.priced_from == "h100"
    assert charge.cost == D("1.50")  # 3/7 x 3.50


def test_mig_slice_priced_from_parent_follows_the_parent_price_change() -> None:
    prices = price_list(
        price("h100", "7.00"),
        price("h100", "14.00", since=at(1)),
        mig_parents={"h100-1g.10gb": "h100"},
    )

    first, second = rate([usage(flavor="h100-1g.10gb", gpu_equivalent=SEVENTH, end=at(2))], prices)

    assert (first.cost, second.cost) == (D("1.00"), D("2.00"))
    assert second.start == at(1)


def test_mig_slice_uses_parent_price_until_its_own_row_takes_effect() -> None:
    prices = price_list(
        price("h100", "7.00"),
        price("h100-1g.10gb", "0.50", since=at(1)),
        mig_parents={"h100-1g.10gb": "h100"},
    )

    first, second = rate([usage(flavor="h100-1g.10gb", gpu_equivalent=SEVENTH, end=at(2))], prices)

    assert (first.priced_from, first.cost) == ("h100", D("1.00"))
    assert (second.priced_from, second.cost) == ("h100-1g.10gb", D("0.50"))


def test_zero_length_interval_gives_no_charge() -> None:
    assert rate([usage(end=T0)], H100_AT_3) == []


def test_non_utc_aware_times_are_normalised_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    interval = usage(
        start=datetime(2026, 3, 1, 2, tzinfo=plus_two), end=datetime(2026, 3, 1, 3, tzinfo=plus_two)
    )

    [charge] = rate([interval], H100_AT_3)

    assert charge.start == T0
    assert charge.start.utcoffset() == timedelta(0)


def test_one_second_is_rated_exactly_and_hours_are_quantized_to_a_millionth() -> None:
    [charge] = rate([usage(end=T0 + timedelta(seconds=1))], price_list(price("h100", "3600")))

    assert charge.seconds == 1
    assert charge.unit_hours == D("0.000278")
    assert charge.cost == D("1.00")
