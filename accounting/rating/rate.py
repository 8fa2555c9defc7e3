"""Rating: usage intervals + a price list -> charge lines."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from accounting.rating.model import Charge, UsageInterval
from accounting.rating.money import (
    exact_seconds,
    hours_of,
    product,
    quantize_hours,
    quantize_money,
)
from accounting.rating.periods import split_at
from accounting.rating.prices import PriceList


@dataclass(frozen=True)
class _Piece:
    start: datetime
    end: datetime
    unit_price: Decimal
    priced_from: str
    multiplier: Decimal


def rate(usage: Iterable[UsageInterval], price_list: PriceList) -> list[Charge]:
    """Charge lines for `usage`, in input order and then time order.

    Each interval is cut exactly where its flavor's price (own or MIG parent) or its service
    class's multiplier changes value, so that every line has one unit price and one multiplier.
    Zero-length intervals give no line. Raises `RatingError` when no price is in force.
    """
    charges: list[Charge] = []
    for interval in usage:
        for piece in _pieces(interval, price_list):
            charges.append(_charge(interval, piece, price_list))
    return charges


def _pieces(interval: UsageInterval, price_list: PriceList) -> list[_Piece]:
    """The interval cut at every change point, adjacent pieces with equal terms merged."""
    points = price_list.change_points(interval.flavor, interval.service_class)
    pieces: list[_Piece] = []
    for part in split_at(interval, points):
        if part.start == part.end:
            continue
        price = price_list.price_at(part.flavor, part.gpu_equivalent, part.start)
        multiplier = price_list.multiplier_at(part.service_class, part.start)
        previous = pieces[-1] if pieces else None
        if (
            previous is not None
            and previous.unit_price == price.unit_price
            and previous.priced_from == price.priced_from
            and previous.multiplier == multiplier
        ):
            pieces[-1] = _Piece(
                previous.start, part.end, price.unit_price, price.priced_from, multiplier
            )
        else:
            pieces.append(
                _Piece(part.start, part.end, price.unit_price, price.priced_from, multiplier)
            )
    return pieces


def _charge(interval: UsageInterval, piece: _Piece, price_list: PriceList) -> Charge:
    seconds = exact_seconds(piece.end - piece.start)
    units = Decimal(interval.units)
    raw_cost = hours_of(product(units, piece.unit_price, piece.multiplier), seconds)
    return Charge(
        job_id=interval.job_id,
        team=interval.team,
        queue=interval.queue,
        user=interval.user,
        cluster=interval.cluster,
        flavor=interval.flavor,
        service_class=interval.service_class,
        units=interval.units,
        gpu_equivalent=interval.gpu_equivalent,
        start=piece.start,
        end=piece.end,
        seconds=seconds,
        unit_hours=quantize_hours(hours_of(units, seconds)),
        gpu_equivalent_hours=quantize_hours(
            hours_of(product(units, interval.gpu_equivalent), seconds)
        ),
        unit_price=piece.unit_price,
        multiplier=piece.multiplier,
        cost=quantize_money(raw_cost, price_list.minor_units),
        currency=price_list.currency,
        priced_from=piece.priced_from,
    )
