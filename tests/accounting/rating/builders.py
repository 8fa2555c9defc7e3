"""Shared builders of the pure rating tests: times, usage intervals and price lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from accounting.rating import Charge, FlavorPrice, PriceList, UsageInterval

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


DAY = (T0, at(days=1))
