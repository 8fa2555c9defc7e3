"""Pure rating: usage intervals + price history -> charges. No Django, no database."""

from __future__ import annotations

import ast
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting.rating
from accounting.rating import (
    UNSHARED_IDLE_TEAM,
    Charge,
    ClassMultiplier,
    ClusterCapacity,
    FlavorPrice,
    PriceList,
    RatingError,
    UsageInterval,
    allocate_largest_remainder,
    clip_to_period,
    idle_costs,
    quantize_money,
    rate,
    share_idle_cost,
    split_at,
    split_by_month,
    summarize,
)

D = Decimal
T0 = datetime(2026, 3, 1, tzinfo=UTC)
SEVENTH = D(1) / D(7)
ONE = D(1)
A_MONTH_BEFORE = T0 - timedelta(days=30)


def at(hours: float = 0, days: int = 0) -> datetime:
    return T0 + timedelta(days=days, hours=hours)


def usage(
    job_id: str = "j1",
    *,
    team: str = "vision",
    queue: str = "vision-main",
    user: str = "ada",
    cluster: str = "c1",
    flavor: str = "h100",
    service_class: str = "standard",
    units: int = 1,
    gpu_equivalent: Decimal = ONE,
    start: datetime = T0,
    end: datetime | None = None,
) -> UsageInterval:
    return UsageInterval(
        job_id=job_id,
        team=team,
        queue=queue,
        user=user,
        cluster=cluster,
        flavor=flavor,
        service_class=service_class,
        units=units,
        gpu_equivalent=gpu_equivalent,
        start=start,
        end=end if end is not None else start + timedelta(hours=1),
    )


def price(flavor: str, amount: str, since: datetime = A_MONTH_BEFORE) -> FlavorPrice:
    return FlavorPrice(flavor, D(amount), since, "USD")


def price_list(*prices: FlavorPrice, **options: object) -> PriceList:
    return PriceList("USD", prices, **options)  # type: ignore[arg-type]


H100_AT_3 = price_list(price("h100", "3.00"))


def total_cost(charges: list[Charge]) -> Decimal:
    return sum((charge.cost for charge in charges), D(0))


# --- rating ---------------------------------------------------------------------------------


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


# --- money and totals -----------------------------------------------------------------------


def test_quantize_money_rounds_half_to_even() -> None:
    assert quantize_money(D("0.125")) == D("0.12")
    assert quantize_money(D("0.135")) == D("0.14")
    assert quantize_money(D("2.5"), minor_units=0) == D("2")


def test_lines_are_rounded_then_summed_so_totals_equal_the_sum_of_job_charges() -> None:
    # Three 20-minute jobs at 1.00/h: each line is 0.333... and rounds to 0.33; the statement
    # total is the sum of the lines (0.99), never a re-rounding of the unrounded 1.00.
    jobs = [usage(f"j{i}", team=f"t{i}", end=T0 + timedelta(minutes=20)) for i in range(3)]
    charges = rate(jobs, price_list(price("h100", "1.00")))

    summary = summarize(charges, group_by=("team",))

    assert [charge.cost for charge in charges] == [D("0.33")] * 3
    assert [row.cost for row in summary.rows] == [D("0.33")] * 3
    assert summary.total.cost == D("0.99") == total_cost(charges)


def test_currency_without_minor_units_rounds_to_whole_units() -> None:
    yen = PriceList("JPY", (FlavorPrice("h100", D("450"), at(days=-1), "JPY"),), minor_units=0)

    [charge] = rate([usage(end=T0 + timedelta(minutes=20))], yen)

    assert (charge.cost, charge.currency) == (D("150"), "JPY")
    assert charge.cost.as_tuple().exponent == 0


# --- months and periods ---------------------------------------------------------------------


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


def test_grouping_by_month_refuses_a_line_that_crosses_a_month() -> None:
    job = usage(
        start=datetime(2026, 1, 31, 23, tzinfo=UTC), end=datetime(2026, 2, 1, 1, tzinfo=UTC)
    )

    with pytest.raises(RatingError, match=r"crosses a month boundary.*split_by_month"):
        summarize(rate([job], H100_AT_3), group_by=("month",))


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


# --- summaries ------------------------------------------------------------------------------


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


# --- errors ---------------------------------------------------------------------------------


def test_usage_before_the_first_price_names_the_flavor_and_the_time() -> None:
    prices = price_list(price("h100", "3.00", since=at(1)))

    with pytest.raises(RatingError) as error:
        rate([usage(end=at(2))], prices)

    message = str(error.value)
    assert "no price in force for flavor 'h100' at 2026-03-01T00:00:00+00:00" in message
    assert "first price is effective from 2026-03-01T01:00:00+00:00" in message


def test_flavor_without_any_price_is_refused() -> None:
    with pytest.raises(RatingError, match=r"flavor 'b200' .* no price rows"):
        rate([usage(flavor="b200")], H100_AT_3)


def test_mig_flavor_whose_parent_has_no_price_yet_is_refused_naming_both() -> None:
    prices = price_list(price("h100", "3.00", since=at(1)), mig_parents={"h100-1g.10gb": "h100"})

    with pytest.raises(RatingError, match=r"'h100-1g.10gb'.*parent flavor 'h100'"):
        rate([usage(flavor="h100-1g.10gb", gpu_equivalent=SEVENTH)], prices)


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


def test_price_list_mixing_currencies_is_refused() -> None:
    with pytest.raises(RatingError, match="is in EUR but the price list is in USD"):
        PriceList("USD", (price("h100", "3"), FlavorPrice("a100", D(2), T0, "EUR")))


def test_two_prices_for_one_flavor_from_the_same_moment_are_refused() -> None:
    with pytest.raises(RatingError, match="flavor 'h100' has two rows effective from"):
        price_list(price("h100", "3", since=T0), price("h100", "4", since=T0))


def test_mig_parent_must_be_a_whole_gpu_flavor() -> None:
    with pytest.raises(RatingError, match="which is itself a MIG flavor"):
        price_list(price("h100", "3"), mig_parents={"a": "b", "b": "h100"})


# --- idle-cost sharing ----------------------------------------------------------------------


DAY = (T0, at(days=1))


def test_idle_capacity_is_priced_and_shared_in_proportion_to_allocated_cost() -> None:
    charges = rate(
        [
            usage("j1", team="vision", units=2, end=at(days=1)),
            usage("j2", team="nlp", units=1, end=at(days=1)),
        ],
        H100_AT_3,
    )
    capacity = [ClusterCapacity("c1", "h100", D(8), at(days=-10))]

    [idle] = idle_costs(charges, capacity, H100_AT_3, *DAY)
    shares = share_idle_cost(charges, capacity, H100_AT_3, *DAY)

    assert idle.capacity_gpu_equivalent_hours == D(8 * 24)
    assert idle.allocated_gpu_equivalent_hours == D(3 * 24)
    assert idle.idle_gpu_equivalent_hours == D(5 * 24)
    assert idle.cost == D("360.00")  # 5 idle GPUs x 24 h x 3.00
    assert [(s.team, s.allocated_cost, s.cost) for s in shares] == [
        ("nlp", D("72.00"), D("120.00")),
        ("vision", D("144.00"), D("240.00")),
    ]


def test_idle_shares_sum_exactly_to_the_idle_cost_by_largest_remainder() -> None:
    # Three teams with equal cost share an idle cost of 1.00: 0.34 + 0.33 + 0.33.
    prices = price_list(price("h100", "1.00"))
    charges = rate(
        [usage(f"j{i}", team=team, end=at(0.25)) for i, team in enumerate(["a", "b", "c"])], prices
    )
    capacity = [ClusterCapacity("c1", "h100", D(7), at(days=-1))]
    window = (T0, at(0.25))  # 7 - 3 = 4 idle GPUs x 0.25 h x 1.00 = 1.00

    shares = share_idle_cost(charges, capacity, prices, *window)

    assert [(s.team, s.cost) for s in shares] == [
        ("a", D("0.34")),
        ("b", D("0.33")),
        ("c", D("0.33")),
    ]
    assert sum(s.cost for s in shares) == D("1.00")


def test_idle_follows_capacity_changes_and_counts_mig_slices_towards_their_gpu() -> None:
    prices = price_list(price("h100", "7.00"), mig_parents={"h100-1g.10gb": "h100"})
    charges = rate(
        [usage("j1", flavor="h100-1g.10gb", units=7, gpu_equivalent=SEVENTH, end=at(2))], prices
    )
    capacity = [
        ClusterCapacity("c1", "h100", D(2), at(days=-1)),
        ClusterCapacity("c1", "h100", D(4), at(1)),
    ]

    [idle] = idle_costs(charges, capacity, prices, T0, at(2))

    # hour 1: 2 - 1 = 1 idle GPU; hour 2: 4 - 1 = 3 idle GPUs
    assert idle.idle_gpu_equivalent_hours == D(4)
    assert idle.cost == D("28.00")


def test_idle_of_a_cluster_nobody_used_stays_unshared() -> None:
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    [share] = share_idle_cost([], capacity, H100_AT_3, T0, at(1))

    assert (share.team, share.cost) == (UNSHARED_IDLE_TEAM, D("6.00"))


def test_over_allocated_capacity_leaves_no_idle() -> None:
    charges = rate([usage(units=4)], H100_AT_3)
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    [idle] = idle_costs(charges, capacity, H100_AT_3, T0, at(1))

    assert (idle.idle_gpu_equivalent_hours, idle.cost) == (D(0), D("0.00"))


def test_idle_sharing_refuses_a_charge_straddling_the_window() -> None:
    charges = rate([usage(end=at(3))], H100_AT_3)
    capacity = [ClusterCapacity("c1", "h100", D(2), at(days=-1))]

    with pytest.raises(RatingError, match=r"straddles the idle window.*clip_to_period"):
        share_idle_cost(charges, capacity, H100_AT_3, T0, at(1))


def test_capacity_given_in_a_mig_flavor_is_refused() -> None:
    prices = price_list(price("h100", "7.00"), mig_parents={"h100-1g.10gb": "h100"})
    capacity = [ClusterCapacity("c1", "h100-1g.10gb", D(7), at(days=-1))]

    with pytest.raises(RatingError, match="give it in its whole-GPU flavor 'h100'"):
        idle_costs([], capacity, prices, T0, at(1))


# --- properties -----------------------------------------------------------------------------

MICROSECOND = timedelta(microseconds=1)
offsets = st.integers(min_value=0, max_value=90 * 86_400 * 10**6).map(lambda us: us * MICROSECOND)
money_amounts = st.decimals(min_value=D("0"), max_value=D("50"), places=3)


@st.composite
def rated_setups(draw: st.DrawFn) -> tuple[UsageInterval, PriceList, datetime]:
    """A job of whole GPUs or MIG slices (priced by own rows, by its parent, or both) under a
    random price and multiplier history, and a cut point anywhere inside it."""
    start = T0 + draw(offsets)
    end = start + draw(offsets)
    cut = start + draw(st.integers(0, (end - start) // MICROSECOND)) * MICROSECOND
    flavor = draw(st.sampled_from(["h100", "h100-2g.20gb"]))
    history = [FlavorPrice("h100", draw(money_amounts), T0 - timedelta(days=1), "USD")]
    for name in ("h100", "h100-2g.20gb"):
        for moment in draw(st.lists(offsets, max_size=3, unique=True)):
            history.append(FlavorPrice(name, draw(money_amounts), T0 + moment, "USD"))
    multipliers = [
        ClassMultiplier("spot", draw(st.decimals(min_value=0, max_value=2, places=2)), T0 + moment)
        for moment in draw(st.lists(offsets, max_size=3, unique=True))
    ]
    prices = PriceList(
        "USD", tuple(history), tuple(multipliers), mig_parents={"h100-2g.20gb": "h100"}
    )
    interval = usage(
        flavor=flavor,
        gpu_equivalent=D(1) if flavor == "h100" else D(2) / D(7),
        service_class="spot",
        units=draw(st.integers(0, 64)),
        start=start,
        end=end,
    )
    return interval, prices, cut


@settings(max_examples=300, deadline=None)
@given(rated_setups())
def test_splitting_an_interval_keeps_its_seconds_and_its_cost_within_rounding(
    setup: tuple[UsageInterval, PriceList, datetime],
) -> None:
    interval, prices, cut = setup
    whole = rate([interval], prices)
    parts = rate(split_at(interval, [cut]), prices)

    assert sum(c.seconds for c in whole) == sum(c.seconds for c in parts)
    assert sum(c.seconds for c in whole) * 10**6 == (interval.end - interval.start) // MICROSECOND
    # Each line is rounded once, by at most half a cent: the totals differ by no more than that.
    half_cent_per_line = D("0.005") * (len(whole) + len(parts))
    assert abs(total_cost(whole) - total_cost(parts)) <= half_cent_per_line
    for charge in whole + parts:  # one price and one multiplier in force on each line
        last = charge.end - MICROSECOND
        for moment in (charge.start, last):
            in_force = prices.price_at(interval.flavor, interval.gpu_equivalent, moment)
            assert (in_force.unit_price, in_force.priced_from) == (
                charge.unit_price,
                charge.priced_from,
            )
            assert prices.multiplier_at("spot", moment) == charge.multiplier


@settings(max_examples=200, deadline=None)
@given(offsets, offsets)
def test_month_split_keeps_total_seconds_and_no_piece_crosses_a_month(
    start_offset: timedelta, length: timedelta
) -> None:
    interval = usage(start=T0 - timedelta(days=45) + start_offset, end=None)
    interval = replace(interval, end=interval.start + length)

    pieces = split_by_month([interval])

    assert sum((p.end - p.start for p in pieces), timedelta(0)) == length
    assert all(
        (p.start.year, p.start.month) == ((p.end - MICROSECOND).year, (p.end - MICROSECOND).month)
        for p in pieces
        if p.end > p.start
    )
    assert all(a.end == b.start for a, b in pairwise(pieces))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**7).map(lambda cents: D(cents).scaleb(-2)),
    st.lists(st.decimals(min_value=0, max_value=10**4, places=2), min_size=1, max_size=8).filter(
        lambda weights: sum(weights) > 0
    ),
)
def test_largest_remainder_shares_sum_exactly_and_stay_within_a_cent_of_proportion(
    total: Decimal, weights: list[Decimal]
) -> None:
    shares = allocate_largest_remainder(total, weights)

    assert sum(shares) == total
    weight_sum = sum(Fraction(w) for w in weights)
    for share, weight in zip(shares, weights, strict=True):
        assert abs(Fraction(share) - Fraction(total) * Fraction(weight) / weight_sum) < Fraction(
            1, 100
        )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["h100", "a100"]), offsets),
        max_size=12,
    ),
    st.lists(st.sampled_from(["team", "flavor", "job_id", "queue"]), unique=True, max_size=3),
)
def test_every_grouping_has_rows_summing_to_the_total_and_the_total_to_the_lines(
    jobs: list[tuple[str, str, timedelta]], group_by: list[str]
) -> None:
    prices = price_list(price("h100", "3.17"), price("a100", "1.09"))
    charges = rate(
        [
            usage(f"j{i}", team=team, flavor=flavor, end=T0 + length)
            for i, (team, flavor, length) in enumerate(jobs)
        ],
        prices,
    )

    summary = summarize(charges, group_by=group_by)

    assert summary.total.cost == total_cost(charges)
    assert sum((row.cost for row in summary.rows), D(0)) == summary.total.cost
    assert sum((row.unit_hours for row in summary.rows), D(0)) == summary.total.unit_hours


def test_rating_imports_only_the_standard_library() -> None:
    package = Path(accounting.rating.__file__).parent
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top == "accounting" or top in sys.stdlib_module_names, (module.name, name)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d"]),
            st.integers(0, 8),
            st.integers(0, 24 * 3600),
            st.integers(0, 24 * 3600),
        ),
        max_size=10,
    ),
    st.integers(0, 64),
)
def test_idle_shares_of_a_cluster_always_add_up_to_its_idle_cost(
    jobs: list[tuple[str, int, int, int]], gpus: int
) -> None:
    prices = price_list(price("h100", "2.37"))
    usage_in_day = [
        usage(
            f"j{i}",
            team=team,
            units=units,
            start=T0 + timedelta(seconds=min(a, b)),
            end=T0 + timedelta(seconds=max(a, b)),
        )
        for i, (team, units, a, b) in enumerate(jobs)
    ]
    charges = rate(usage_in_day, prices)
    capacity = [ClusterCapacity("c1", "h100", D(gpus), at(days=-1))]

    [idle] = idle_costs(charges, capacity, prices, *DAY)
    shares = share_idle_cost(charges, capacity, prices, *DAY)

    assert sum((s.cost for s in shares), D(0)) == idle.cost
    assert all(s.cost >= 0 for s in shares)
    assert idle.idle_gpu_equivalent_hours <= idle.capacity_gpu_equivalent_hours
