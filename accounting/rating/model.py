"""Input and output types of rating, with their validation.

Every input type validates itself on construction and raises `RatingError` naming the field, so
bad data never reaches the arithmetic. Datetimes must be timezone-aware; they are normalised to
UTC. Amounts, prices, multipliers and GPU-equivalents must be `Decimal` (never float).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal


class RatingError(ValueError):
    """Rating cannot go on: bad input or no price in force. The message names what is wrong."""


def aware_utc(owner: str, field_name: str, value: object) -> datetime:
    """Return `value` as an aware UTC datetime, or raise naming `owner.field_name`."""
    if not isinstance(value, datetime):
        raise RatingError(f"{owner}.{field_name} must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise RatingError(
            f"{owner}.{field_name} must be a timezone-aware datetime (UTC), got naive {value}"
        )
    return value.astimezone(UTC)


def checked_decimal(
    owner: str, field_name: str, value: object, *, positive: bool = False
) -> Decimal:
    """Return `value` if it is a finite, non-negative (or positive) Decimal; raise otherwise."""
    if not isinstance(value, Decimal):
        raise RatingError(
            f"{owner}.{field_name} must be a Decimal, got {type(value).__name__} {value!r}"
        )
    if not value.is_finite():
        raise RatingError(f"{owner}.{field_name} must be finite, got {value}")
    if value < 0 or (positive and value == 0):
        bound = "positive" if positive else "zero or more"
        raise RatingError(f"{owner}.{field_name} must be {bound}, got {value}")
    return value


def checked_name(owner: str, field_name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise RatingError(f"{owner}.{field_name} must be a non-empty string, got {value!r}")
    return value


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # normalising a frozen dataclass in __post_init__


@dataclass(frozen=True)
class UsageInterval:
    """One job's use of `units` of one flavor during [start, end).

    `units` counts whole GPUs or MIG slices of `flavor`; `gpu_equivalent` is how much of a whole
    GPU one unit is (1 for a whole GPU, k/7 for a MIG slice with k of 7 compute slices).
    """

    job_id: str
    team: str
    queue: str
    user: str
    cluster: str
    flavor: str
    service_class: str
    units: int
    gpu_equivalent: Decimal
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        owner = f"UsageInterval(job_id={self.job_id!r})"
        for name in ("job_id", "team", "queue", "user", "cluster", "flavor", "service_class"):
            checked_name(owner, name, getattr(self, name))
        if isinstance(self.units, bool) or not isinstance(self.units, int):
            raise RatingError(f"{owner}.units must be an integer, got {self.units!r}")
        if self.units < 0:
            raise RatingError(f"{owner}.units must be zero or more, got {self.units}")
        checked_decimal(owner, "gpu_equivalent", self.gpu_equivalent, positive=True)
        _set(self, "start", aware_utc(owner, "start", self.start))
        _set(self, "end", aware_utc(owner, "end", self.end))
        if self.end < self.start:
            raise RatingError(
                f"{owner}.end ({self.end.isoformat()}) is before start ({self.start.isoformat()})"
            )


@dataclass(frozen=True)
class FlavorPrice:
    """Price of one unit of `flavor` for one hour, in force from `effective_from` until the
    flavor's next row (price history: a new row never rewrites the time before it)."""

    flavor: str
    price_per_unit_hour: Decimal
    effective_from: datetime
    currency: str

    def __post_init__(self) -> None:
        owner = f"FlavorPrice(flavor={self.flavor!r})"
        checked_name(owner, "flavor", self.flavor)
        checked_decimal(owner, "price_per_unit_hour", self.price_per_unit_hour)
        _set(self, "effective_from", aware_utc(owner, "effective_from", self.effective_from))
        checked_name(owner, "currency", self.currency)


@dataclass(frozen=True)
class ClassMultiplier:
    """Factor applied to the flavor price for jobs of `service_class` (spot < 1, premium > 1),
    in force from `effective_from` until the class's next row. A class with no row in force is
    rated at 1."""

    service_class: str
    multiplier: Decimal
    effective_from: datetime

    def __post_init__(self) -> None:
        owner = f"ClassMultiplier(service_class={self.service_class!r})"
        checked_name(owner, "service_class", self.service_class)
        checked_decimal(owner, "multiplier", self.multiplier)
        _set(self, "effective_from", aware_utc(owner, "effective_from", self.effective_from))


@dataclass(frozen=True)
class Charge:
    """One rated line: a sub-interval [start, end) of one usage interval with ONE unit price and
    ONE multiplier in force.

    `seconds` is exact (microsecond resolution). `unit_hours` (GPU-hours for whole-GPU flavors,
    slice-hours for MIG flavors) and `gpu_equivalent_hours` are quantized to `HOURS_QUANTUM`.
    `cost` = units x unit_price x multiplier x seconds / 3600, computed exactly and rounded ONCE
    to the currency's minor unit. `priced_from` names the flavor whose price row was used (the
    flavor itself, or the parent whole-GPU flavor of a MIG flavor with no price of its own).
    """

    job_id: str
    team: str
    queue: str
    user: str
    cluster: str
    flavor: str
    service_class: str
    units: int
    gpu_equivalent: Decimal
    start: datetime
    end: datetime
    seconds: Decimal
    unit_hours: Decimal
    gpu_equivalent_hours: Decimal
    unit_price: Decimal
    multiplier: Decimal
    cost: Decimal
    currency: str
    priced_from: str


@dataclass(frozen=True)
class ClusterCapacity:
    """From `effective_from` on, `cluster` has `gpu_equivalents` of whole-GPU `flavor` (MIG
    slices of that GPU count towards it through the price list's MIG parents). Before a
    cluster/flavor's first row its capacity is unknown and counts as zero."""

    cluster: str
    flavor: str
    gpu_equivalents: Decimal
    effective_from: datetime

    def __post_init__(self) -> None:
        owner = f"ClusterCapacity(cluster={self.cluster!r}, flavor={self.flavor!r})"
        checked_name(owner, "cluster", self.cluster)
        checked_name(owner, "flavor", self.flavor)
        checked_decimal(owner, "gpu_equivalents", self.gpu_equivalents)
        _set(self, "effective_from", aware_utc(owner, "effective_from", self.effective_from))
