"""Price lists: which unit price and which class multiplier are in force at a moment."""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from types import MappingProxyType

from accounting.rating.model import (
    ClassMultiplier,
    FlavorPrice,
    RatingError,
    checked_name,
)
from accounting.rating.money import product


@dataclass(frozen=True)
class PriceInForce:
    """The unit price in force at a moment, and the flavor whose price row it comes from."""

    unit_price: Decimal
    priced_from: str


class History:
    """Values keyed by effective_from; the value in force at t is the latest one <= t."""

    def __init__(self, owner: str, rows: Iterable[tuple[datetime, Decimal]]) -> None:
        ordered = sorted(rows)
        for before, after in itertools.pairwise(ordered):
            if before[0] == after[0]:
                raise RatingError(
                    f"{owner} has two rows effective from {before[0].isoformat()}; "
                    "keep one row per effective date"
                )
        self.starts = [moment for moment, _ in ordered]
        self.values = [value for _, value in ordered]

    def at(self, moment: datetime) -> Decimal | None:
        index = bisect_right(self.starts, moment)
        return self.values[index - 1] if index else None

    def first_start(self) -> datetime | None:
        return self.starts[0] if self.starts else None


@dataclass(frozen=True)
class PriceList:
    """Prices and class multipliers in one currency.

    `mig_parents` maps a MIG flavor to its whole-GPU flavor. A flavor is priced by its own row in
    force; a MIG flavor with no own row in force at a moment is priced at its gpu_equivalent x
    the parent's price in force then. `minor_units` is the number of decimal places of the
    currency (2 for USD/EUR, 0 for JPY, 3 for BHD); all money is rounded to it.
    """

    currency: str
    prices: tuple[FlavorPrice, ...]
    multipliers: tuple[ClassMultiplier, ...] = ()
    mig_parents: Mapping[str, str] = field(default_factory=dict)
    minor_units: int = 2
    _price_history: dict[str, History] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _multiplier_history: dict[str, History] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        checked_name("PriceList", "currency", self.currency)
        if isinstance(self.minor_units, bool) or self.minor_units not in range(0, 7):
            raise RatingError(
                f"PriceList.minor_units must be an integer from 0 to 6, got {self.minor_units!r}"
            )
        object.__setattr__(self, "prices", tuple(self.prices))
        object.__setattr__(self, "multipliers", tuple(self.multipliers))
        object.__setattr__(self, "mig_parents", MappingProxyType(dict(self.mig_parents)))
        for row in self.prices:
            if not isinstance(row, FlavorPrice):
                raise RatingError(f"PriceList.prices must hold FlavorPrice rows, got {row!r}")
            if row.currency != self.currency:
                raise RatingError(
                    f"price of flavor {row.flavor!r} from {row.effective_from.isoformat()} is in "
                    f"{row.currency} but the price list is in {self.currency}; "
                    "one price list holds one currency"
                )
        for multiplier_row in self.multipliers:
            if not isinstance(multiplier_row, ClassMultiplier):
                raise RatingError(
                    f"PriceList.multipliers must hold ClassMultiplier rows, got {multiplier_row!r}"
                )
        for mig, parent in self.mig_parents.items():
            checked_name("PriceList.mig_parents", "key", mig)
            checked_name(f"PriceList.mig_parents[{mig!r}]", "value", parent)
            if parent in self.mig_parents:
                raise RatingError(
                    f"MIG flavor {mig!r} has parent {parent!r}, which is itself a MIG flavor; "
                    "a parent must be a whole-GPU flavor"
                )
        prices: dict[str, list[tuple[datetime, Decimal]]] = {}
        for price in self.prices:
            prices.setdefault(price.flavor, []).append(
                (price.effective_from, price.price_per_unit_hour)
            )
        multipliers: dict[str, list[tuple[datetime, Decimal]]] = {}
        for mult in self.multipliers:
            multipliers.setdefault(mult.service_class, []).append(
                (mult.effective_from, mult.multiplier)
            )
        object.__setattr__(
            self,
            "_price_history",
            {name: History(f"flavor {name!r}", rows) for name, rows in prices.items()},
        )
        object.__setattr__(
            self,
            "_multiplier_history",
            {name: History(f"service class {name!r}", rows) for name, rows in multipliers.items()},
        )

    def _prices(self, flavor: str) -> History | None:
        return self._price_history.get(flavor)

    def _multipliers(self, service_class: str) -> History | None:
        return self._multiplier_history.get(service_class)

    def price_at(self, flavor: str, gpu_equivalent: Decimal, moment: datetime) -> PriceInForce:
        """The unit price of `flavor` in force at `moment`; `RatingError` if there is none."""
        own = self._prices(flavor)
        own_price = own.at(moment) if own else None
        if own_price is not None:
            return PriceInForce(own_price, flavor)
        parent = self.mig_parents.get(flavor)
        parent_history = self._prices(parent) if parent else None
        parent_price = parent_history.at(moment) if parent_history else None
        if parent is not None and parent_price is not None:
            return PriceInForce(product(gpu_equivalent, parent_price), parent)
        raise RatingError(self._no_price_message(flavor, moment))

    def _no_price_message(self, flavor: str, moment: datetime) -> str:
        message = f"no price in force for flavor {flavor!r} at {moment.isoformat()}"
        own = self._prices(flavor)
        first = own.first_start() if own else None
        message += (
            f" (its first price is effective from {first.isoformat()})"
            if first
            else " (it has no price rows)"
        )
        parent = self.mig_parents.get(flavor)
        if parent is not None:
            history = self._prices(parent)
            parent_first = history.first_start() if history else None
            message += f"; nor for its parent flavor {parent!r}" + (
                f" (first price effective from {parent_first.isoformat()})"
                if parent_first
                else " (no price rows)"
            )
        return message

    def multiplier_at(self, service_class: str, moment: datetime) -> Decimal:
        """The multiplier of `service_class` in force at `moment`; 1 when none is."""
        history = self._multipliers(service_class)
        value = history.at(moment) if history else None
        return Decimal(1) if value is None else value

    def price_change_points(self, flavor: str) -> list[datetime]:
        """Every moment at which a price row of `flavor` takes effect."""
        history = self._prices(flavor)
        return list(history.starts) if history else []

    def change_points(self, flavor: str, service_class: str) -> list[datetime]:
        """Every moment at which the price of `flavor` or the multiplier of `service_class` may
        change (own rows, MIG parent rows, class rows)."""
        points: list[datetime] = []
        for history in (
            self._prices(flavor),
            self._prices(self.mig_parents.get(flavor, "")),
            self._multipliers(service_class),
        ):
            if history is not None:
                points.extend(history.starts)
        return points
