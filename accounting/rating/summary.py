"""Grouping charge lines into statement rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from accounting.rating.model import Charge, RatingError
from accounting.rating.periods import next_month_start

GROUP_KEYS = ("job_id", "team", "queue", "user", "cluster", "flavor", "service_class", "month")


@dataclass(frozen=True)
class SummaryRow:
    """Sums over the charge lines of one group. `group` maps each group_by key to its value
    (`month` as "YYYY-MM", UTC). `unit_hours` are GPU-hours for whole-GPU flavors and
    slice-hours for MIG flavors; `gpu_equivalent_hours` is comparable across flavors."""

    group: Mapping[str, str]
    lines: int
    unit_hours: Decimal
    gpu_equivalent_hours: Decimal
    cost: Decimal


@dataclass(frozen=True)
class Summary:
    group_by: tuple[str, ...]
    currency: str | None  # None only when there are no charges
    rows: tuple[SummaryRow, ...]
    total: SummaryRow


def month_of(charge: Charge) -> str:
    """The UTC month "YYYY-MM" of a charge line that lies within one month."""
    if charge.end > next_month_start(charge.start):
        raise RatingError(
            f"charge of job {charge.job_id!r} [{charge.start.isoformat()}, "
            f"{charge.end.isoformat()}) crosses a month boundary; rate split_by_month(usage) "
            "to group by month"
        )
    return f"{charge.start.year:04d}-{charge.start.month:02d}"


def _value(charge: Charge, key: str) -> str:
    if key == "month":
        return month_of(charge)
    value = getattr(charge, key)
    assert isinstance(value, str)
    return value


def summarize(charges: Iterable[Charge], group_by: Sequence[str] = ("team",)) -> Summary:
    """Rows of unit-hours, GPU-equivalent hours and cost per group (sorted by group values),
    and the total. Costs are plain sums of the lines' rounded costs, so each row equals the sum
    of its lines and the total equals the sum of the rows, exactly.
    Raises `RatingError` for an unknown group_by key or charges in more than one currency."""
    keys = tuple(group_by)
    for key in keys:
        if key not in GROUP_KEYS:
            raise RatingError(f"unknown group_by key {key!r}; choose from {', '.join(GROUP_KEYS)}")
    if len(set(keys)) != len(keys):
        raise RatingError(f"group_by repeats a key: {list(keys)}")
    lines = list(charges)
    currencies = sorted({charge.currency for charge in lines})
    if len(currencies) > 1:
        raise RatingError(
            f"charges in several currencies ({', '.join(currencies)}) cannot be summed"
        )
    groups: dict[tuple[str, ...], list[Charge]] = {}
    for charge in lines:
        groups.setdefault(tuple(_value(charge, key) for key in keys), []).append(charge)
    rows = tuple(
        _row(dict(zip(keys, values, strict=True)), members)
        for values, members in sorted(groups.items())
    )
    return Summary(
        group_by=keys,
        currency=currencies[0] if currencies else None,
        rows=rows,
        total=_row({}, lines),
    )


def _row(group: Mapping[str, str], lines: Sequence[Charge]) -> SummaryRow:
    return SummaryRow(
        group=group,
        lines=len(lines),
        unit_hours=sum((line.unit_hours for line in lines), Decimal(0)),
        gpu_equivalent_hours=sum((line.gpu_equivalent_hours for line in lines), Decimal(0)),
        cost=sum((line.cost for line in lines), Decimal(0)),
    )
