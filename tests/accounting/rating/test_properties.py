"""Properties of the pure rating package (Hypothesis); it imports only the standard library."""

from __future__ import annotations

import ast
import sys
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import accounting.rating
from accounting.rating import (
    ClassMultiplier,
    ClusterCapacity,
    FlavorPrice,
    PriceList,
    UsageInterval,
    allocate_largest_remainder,
    idle_costs,
    rate,
    share_idle_cost,
    split_at,
    split_by_month,
    summarize,
)
from tests.accounting.rating.builders import DAY, T0, D, at, price, price_list, total_cost, usage

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
