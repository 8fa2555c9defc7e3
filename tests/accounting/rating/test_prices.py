"""Price lists (accounting/rating/prices.py): the price in force, and the price lists refused."""

from __future__ import annotations

import pytest

from accounting.rating import FlavorPrice, PriceList, RatingError, rate
from tests.accounting.rating.builders import H100_AT_3, SEVENTH, T0, D, at, price, price_list, usage


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


def test_price_list_mixing_currencies_is_refused() -> None:
    with pytest.raises(RatingError, match="is in EUR but the price list is in USD"):
        PriceList("USD", (price("h100", "3"), FlavorPrice("a100", D(2), T0, "EUR")))


def test_two_prices_for_one_flavor_from_the_same_moment_are_refused() -> None:
    with pytest.raises(RatingError, match="flavor 'h100' has two rows effective from"):
        price_list(price("h100", "3", since=T0), price("h100", "4", since=T0))


def test_mig_parent_must_be_a_whole_gpu_flavor() -> None:
    with pytest.raises(RatingError, match="which is itself a MIG flavor"):
        price_list(price("h100", "3"), mig_parents={"a": "b", "b": "h100"})
