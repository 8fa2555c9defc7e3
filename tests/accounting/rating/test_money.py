"""Money (accounting/rating/money.py): rounding; totals are the sums of the rounded lines."""

from __future__ import annotations

from datetime import timedelta

from accounting.rating import FlavorPrice, PriceList, quantize_money, rate, summarize
from tests.accounting.rating.builders import T0, D, at, price, price_list, total_cost, usage


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
