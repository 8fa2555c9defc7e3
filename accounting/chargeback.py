"""Chargeback: GPU-hours, GPU-equivalent hours and cost per group over a period, from the ledger.

Pricing rule (fast and exact): a ledger row is priced ONCE when it closes (cost stored on the
row). For a period [start, end), every closed, priced row that lies wholly inside it is summed
by the database (one GROUP BY on the ledger). The few other rows that overlap the period -- still
open, cut by the period's edges, or unpriced at closing -- are clipped to the period and priced
now with `accounting.rating.rate`, then added to their group. Open rows count up to the latest
accrual (at most one cycle behind). Money is summed from rounded lines, never re-rounded.

`stepped_totals` gives the same numbers for each of consecutive steps of a window in two reads
(the allocation API's `step`). Group keys (department, label:<key>...): accounting/grouping.py.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet, Sum
from django.utils.dateparse import parse_date, parse_datetime

from accounting import rating
from accounting.grouping import (
    GROUP_KEYS,
    UNALLOCATED,
    ParameterError,
    expressions,
    parse_keys,
    step_of,
)
from accounting.models import UsageRecord
from accounting.pricing import VALUE_FIELDS, Related, currency, load_price_list
from gpuplatform import fast_rows
from queues.models import Cluster, Cohort, Flavor, Queue, ServiceClass, Team

ZERO = Decimal(0)


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime


@dataclass
class Totals:
    gpu_hours: Decimal = ZERO
    gpu_equivalent_hours: Decimal = ZERO
    cost: Decimal = ZERO

    def add(self, gpu_hours: Decimal, gpu_equivalent_hours: Decimal, cost: Decimal) -> None:
        self.gpu_hours += gpu_hours
        self.gpu_equivalent_hours += gpu_equivalent_hours
        self.cost += cost


@dataclass(frozen=True)
class Row:
    group: dict[str, str]
    totals: Totals


def parse_moment(parameter: str, value: str) -> datetime:
    """An ISO date (midnight UTC) or an ISO datetime (naive means UTC)."""
    text = value.strip()
    try:
        moment = parse_datetime(text)
        if moment is None:
            day = parse_date(text)
            moment = datetime.combine(day, time.min) if day is not None else None
    except ValueError:
        moment = None
    if moment is None:
        raise ParameterError(
            parameter,
            f"{parameter}={value!r} is not a date: use YYYY-MM-DD or an ISO 8601 date-time.",
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ParameterError(
            parameter, f"{parameter}={value!r} is outside the years 1 to 9999 in UTC."
        ) from None


def parse_period(start: str | None, end: str | None, now: datetime) -> Period:
    """[start, end): defaults to the current UTC month."""
    lower = parse_moment("start", start) if start else rating.month_start(now)
    upper = parse_moment("end", end) if end else rating.next_month_start(now)
    if lower > upper:
        raise ParameterError(
            "start", f"start ({lower.isoformat()}) is after end ({upper.isoformat()})."
        )
    return Period(lower, upper)


def parse_group_by(values: Sequence[str]) -> tuple[str, ...]:
    """Keys from repeated and/or comma-separated group_by values; default ("team",)."""
    return parse_keys("group_by", values, GROUP_KEYS)


def overlapping(records: QuerySet[UsageRecord], period: Period) -> QuerySet[UsageRecord]:
    return records.filter(start__lt=period.end, end__gt=period.start)


def _inside(period: Period) -> Q:
    """Closed, priced rows wholly inside the period. The bound on start that end <= period.end
    implies keeps the read to one range of the (start, end) index."""
    return Q(
        start__gte=period.start,
        start__lte=period.end,
        end__lte=period.end,
        closed=True,
        cost__isnull=False,
    )


def _overlapping_rows(records: QuerySet[UsageRecord], period: Period) -> QuerySet[UsageRecord]:
    """`overlapping`, bounded below: a row overlapping the period starts in the month of the
    period's start or later (rows never cross a UTC month boundary; an open row is cut at one
    by the accrual), so the read is one range of the (start, end) index, not the ledger's past."""
    return overlapping(records, period).filter(start__gte=rating.month_start(period.start))


def _edge(period: Period) -> Q:
    """Overlapping rows the database cannot sum: open or unpriced ones, and closed ones cut by
    the period's start or end. Rows never cross a UTC month boundary, so a row cut by a moment
    starts in that moment's month: the bounds keep these lookups to narrow index ranges."""
    return (
        Q(closed=False)
        | Q(cost__isnull=True)
        | Q(start__lt=period.start, start__gte=rating.month_start(period.start))
        | Q(end__gt=period.end, start__gte=rating.month_start(period.end))
    )


Ids = tuple[Any, ...]


def sort_key(ids: Ids) -> tuple[tuple[bool, Any], ...]:
    """Orders group ids whose values may be NULL (no department, no such label)."""
    return tuple((value is not None, value) for value in ids)


def _edge_totals(
    records: QuerySet[UsageRecord], period: Period, keys: Sequence[str], stream: bool = False
) -> dict[Ids, Totals]:
    """Rows overlapping the period that the database cannot sum: priced here, clipped.

    Counted by the database per group and rating inputs (flavor, class, units, GPU-equivalent,
    start and end: the running jobs started by one cycle share them), read as plain values
    without model instances, and each set of inputs rated once, its sums taken as many times as
    rows have it. A charge's numbers depend on those inputs alone, so the interval rated carries
    placeholders for the job, team, queue, user and cluster."""
    aliases = expressions(keys)
    edges = (
        _overlapping_rows(records, period)
        .filter(_edge(period))
        .annotate(**aliases)
        .values(*aliases, *EDGE_COLUMNS)
        .annotate(rows=Count("pk"))
        .order_by()  # no ORDER BY: it would steer a server-side cursor to a full index walk
        .values_list(*aliases, *EDGE_COLUMNS, "rows")
    )
    width = len(aliases)
    out: dict[Ids, Totals] = {}
    rated: dict[tuple[Any, ...], tuple[Decimal, Decimal, Decimal]] = {}
    names: _Names | None = None
    kept = _Rated()
    # Streaming (CSV) reads them through a server-side cursor (memory stays flat); otherwise one
    # plain query: a cursor's DECLARE, FETCH and CLOSE are three round trips for a few rows.
    for row in edges.iterator(chunk_size=2000) if stream else fast_rows.fetched(edges):
        flavor, service_class, units, geq, start, end, count = row[width:]
        lower, upper = max(start, period.start), min(end, period.end)
        inputs = (flavor, service_class, units, geq, lower, upper)
        sums = rated.get(inputs)
        if sums is None:
            if names is None:
                names = _Names()
                kept = RATED.sums_under(names.price_list)
            named = (names.flavor[flavor], names.service_class[service_class], *inputs[2:])
            sums = rated[inputs] = kept.get(named) or kept.put(named, names.price_list)
        hours, equivalent_hours, cost = sums
        out.setdefault(tuple(row[:width]), Totals()).add(
            hours * count, equivalent_hours * count, cost * count
        )
    return out


UNNAMED = "-"  # what an edge row's interval carries for its labels (they do not price it)
Sums = tuple[Decimal, Decimal, Decimal]  # unit-hours, GPU-equivalent hours, cost


class _Rated(dict[tuple[Any, ...], Sums]):
    """Rated sums of one interval by its inputs (flavor and class names, units, GPU-equivalent,
    start, end) under one price list: a charge's numbers depend on nothing else."""

    def put(self, inputs: tuple[Any, ...], price_list: rating.PriceList) -> Sums:
        flavor, service_class, units, geq, lower, upper = inputs
        interval = rating.UsageInterval(
            job_id=UNNAMED, team=UNNAMED, queue=UNNAMED, user=UNNAMED, cluster=UNNAMED,
            flavor=flavor, service_class=service_class, units=units, gpu_equivalent=geq,
            start=lower, end=max(lower, upper),
        )  # fmt: skip
        charges = rating.rate([interval], price_list)
        sums = self[inputs] = (
            sum((c.unit_hours for c in charges), ZERO),
            sum((c.gpu_equivalent_hours for c in charges), ZERO),
            sum((c.cost for c in charges), ZERO),
        )
        return sums


class RatedKeep:
    """The edge rows' rated sums kept between requests in this process, for as long as the
    price list read is the same (compared by content: every price and multiplier row, the MIG
    parents, the currency): open rows are re-read each request, but their inputs change only
    when an accrual moves their end, so most requests between two accruals rate nothing. A
    request finding more than ``LIMIT`` inputs kept starts again (an entry is about 0.7 KB:
    the keep holds the last request's inputs and those of the accruals before, up to LIMIT)."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._state: tuple[Any, _Rated] = (None, _Rated())  # one attribute: swapped at once

    def sums_under(self, price_list: rating.PriceList) -> _Rated:
        key = (
            price_list.currency,
            price_list.minor_units,
            price_list.prices,
            price_list.multipliers,
            tuple(sorted(price_list.mig_parents.items())),
        )
        kept_key, sums = self._state
        if kept_key != key or len(sums) > self.LIMIT:
            sums = _Rated()
            self._state = (key, sums)
        return sums


RATED = RatedKeep()
EDGE_COLUMNS = (
    "flavor_id",
    "service_class_id",
    "units",
    "gpu_equivalent",
    "start",
    "end",
)


class _Names:
    """What rating edge rows needs besides their numbers: the price list and the names of the
    flavors and classes (read once, when the first edge row comes)."""

    def __init__(self) -> None:
        flavors, classes = list(Flavor.objects.all()), list(ServiceClass.objects.all())
        self.price_list = load_price_list(flavors, classes)
        self.flavor = {flavor.pk: flavor.name for flavor in flavors}
        self.service_class = {service_class.pk: service_class.name for service_class in classes}


class Labels:
    """Readable names of the values a group holds: names of ids (queues as team/queue,
    departments as their cohort's name), jobs by id, labels as they are; no department or no
    such label is ``__unallocated__``."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.names: dict[str, dict[Any, str]] = {}
        for key in keys:
            if key == "team":
                self.names[key] = dict(Team.objects.values_list("pk", "name"))
            elif key == "queue":
                self.names[key] = {
                    q.pk: f"{q.team.name}/{q.name}" for q in Queue.objects.select_related("team")
                }
            elif key == "user":
                model = get_user_model()
                self.names[key] = dict(model.objects.values_list("pk", model.USERNAME_FIELD))
            elif key == "flavor":
                self.names[key] = dict(Flavor.objects.values_list("pk", "name"))
            elif key == "service_class":
                self.names[key] = dict(ServiceClass.objects.values_list("pk", "name"))
            elif key == "cluster":
                self.names[key] = dict(Cluster.objects.values_list("pk", "name"))
            elif key == "department":
                self.names[key] = dict(Cohort.objects.values_list("pk", "name"))

    def name(self, key: str, value: Any) -> str:
        if value is None:
            return UNALLOCATED
        return self.names.get(key, {}).get(value, str(value))

    def group(self, keys: Sequence[str], ids: Sequence[Any]) -> dict[str, str]:
        return {key: self.name(key, value) for key, value in zip(keys, ids, strict=True)}


def grouped_totals(
    records: QuerySet[UsageRecord], period: Period, keys: Sequence[str], *, stream: bool = False
) -> Iterator[tuple[Ids, Totals]]:
    """(group ids, totals) per group, streamed from a database aggregation (ordered by the ids),
    with the edge rows' charges merged in. Raises `rating.RatingError` when an open or edge
    row's flavor has no price in force -- before the first row, so a stream never breaks off."""
    edges = _edge_totals(records, period, keys, stream)
    return _merged(records, period, keys, edges, stream)


def _sums(records: QuerySet[UsageRecord], aliases: dict[str, Any], *extra: str) -> Any:
    return (
        records.values(*extra, **aliases)
        .annotate(
            gpu_hours=Sum("unit_hours"),
            gpu_equivalent_hours=Sum("gpu_equivalent_hours"),
            cost=Sum("cost"),
        )
        .order_by(*extra, *aliases)
    )


def _merged(
    records: QuerySet[UsageRecord],
    period: Period,
    keys: Sequence[str],
    edges: dict[Ids, Totals],
    stream: bool,
) -> Iterator[tuple[Ids, Totals]]:
    aliases = expressions(keys)
    aggregated = _sums(records.filter(_inside(period)), aliases)
    # Streaming reads the groups through a server-side cursor (memory stays flat however many
    # groups); otherwise one plain query, which PostgreSQL may run in parallel.
    for item in aggregated.iterator(chunk_size=2000) if stream else list(aggregated):
        ids = tuple(item[alias] for alias in aliases)
        totals = edges.pop(ids, None) or Totals()
        totals.add(item["gpu_hours"], item["gpu_equivalent_hours"], item["cost"])
        yield ids, totals
    for ids in sorted(edges, key=sort_key):
        yield ids, edges[ids]


def stepped_totals(
    records: QuerySet[UsageRecord], parts: Sequence[Period], keys: Sequence[str]
) -> list[dict[Ids, Totals]]:
    """`grouped_totals` of each of consecutive periods (steps: each starts where the previous
    ends), with the same numbers, in two reads whatever the number of steps: one GROUP BY of the
    closed, priced rows lying wholly inside one step (grouped by step and keys), and one read
    of the others (open, unpriced, or crossing a step's or the window's bounds), each priced in
    every step it overlaps, clipped to it."""
    if len(parts) == 1:  # the chargeback's own reads: the edge rows from narrow index ranges
        return [dict(grouped_totals(records, parts[0], keys))]
    if not parts:
        return []
    window = Period(parts[0].start, parts[-1].end)
    ends = [part.end for part in parts]
    step = step_of(ends)
    aliases = expressions(keys)
    out: list[dict[Ids, Totals]] = [{} for _ in parts]
    edges = (
        _overlapping_rows(records, window)
        .alias(step=step)
        .filter(_edge(window) | Q(step__isnull=True))
        .values(*VALUE_FIELDS, **aliases)
        .order_by()
    )
    price_list: rating.PriceList | None = None
    related: Related | None = None
    for row in edges.iterator(chunk_size=2000):
        price_list = price_list or load_price_list()
        related = related or Related()
        ids = tuple(row[alias] for alias in aliases)
        first = bisect_right(ends, row["start"])
        last = min(bisect_left(ends, row["end"]), len(parts) - 1)
        for index in range(first, last + 1):
            part = parts[index]
            interval = related.interval(row, part.start, part.end)
            totals = out[index].setdefault(ids, Totals())
            for charge in rating.rate([interval], price_list):
                totals.add(charge.unit_hours, charge.gpu_equivalent_hours, charge.cost)
    inside = records.filter(_inside(window)).annotate(step_index=step)
    for item in _sums(inside.filter(step_index__isnull=False), aliases, "step_index"):
        ids = tuple(item[alias] for alias in aliases)
        out[item["step_index"]].setdefault(ids, Totals()).add(
            item["gpu_hours"], item["gpu_equivalent_hours"], item["cost"]
        )
    return out


def chargeback_rows(
    records: QuerySet[UsageRecord], period: Period, keys: Sequence[str], *, stream: bool = False
) -> Iterator[Row]:
    """`grouped_totals` with readable group names (prices checked before the first row)."""
    groups = grouped_totals(records, period, keys, stream=stream)
    labels = Labels(keys)
    return (Row(labels.group(keys, ids), totals) for ids, totals in groups)


@dataclass(frozen=True)
class Report:
    period: Period
    group_by: tuple[str, ...]
    currency: str
    rows: list[Row]
    total: Totals


def chargeback_report(
    records: QuerySet[UsageRecord], period: Period, keys: Sequence[str]
) -> Report:
    """All rows (sorted by their names) and the total, for JSON and the finance page."""
    rows = sorted(
        chargeback_rows(records, period, keys),
        key=lambda row: tuple(row.group[key] for key in keys),
    )
    total = Totals()
    for row in rows:
        total.add(row.totals.gpu_hours, row.totals.gpu_equivalent_hours, row.totals.cost)
    return Report(period, tuple(keys), currency(), rows, total)


def row_values(group: Mapping[str, str], totals: Totals) -> dict[str, str]:
    """A row as strings (money and hours as Decimal strings)."""
    return dict(group) | {
        "gpu_hours": str(rating.quantize_hours(totals.gpu_hours)),
        "gpu_equivalent_hours": str(rating.quantize_hours(totals.gpu_equivalent_hours)),
        "cost": str(rating.quantize_money(totals.cost)),
    }


def month_of(day: date) -> Period:
    start = datetime(day.year, day.month, 1, tzinfo=UTC)
    return Period(start, rating.next_month_start(start))
