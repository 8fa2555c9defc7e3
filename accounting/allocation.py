"""OpenCost-shaped allocation (GET /api/v1/allocation/): windows, steps, aggregation and idle.

Parameters and meanings follow OpenCost's allocation API (opencost/core window.go):

- ``window``: ``today`` / ``yesterday`` (the UTC day), ``week`` / ``lastweek`` (weeks start on
  Sunday, UTC), ``month`` / ``lastmonth`` (UTC calendar months), durations ``30m``, ``12h``,
  ``7d`` (back from now; day durations are the whole of today plus the X-1 days before it,
  midnight to midnight UTC), or a pair ``start,end`` of RFC 3339 date-times or unix seconds.
  The part of a window after now is left out (nothing is known about it yet).
- ``step``: ``hour``, ``day``, ``week``, ``month`` or a duration (``1h``, ``1d``, ``7d``); one
  allocation set per step from the window's start (``month``: calendar months). Default: the
  window (one set).
- ``accumulate=true``: the sets summed into one over the whole window.
- ``aggregate``: team, queue, user, flavor, service_class, cluster, department (the queue's
  cohort), job, ``label:<key>`` (the job's label; accounting/grouping.py), a comma list; a
  value that is missing (no cohort, no such label) is ``__unallocated__``.
- ``includeIdle=true``: an ``__idle__`` allocation per set (idle GPU capacity priced at the
  whole-GPU price, accounting.rating.idle_costs); ``shareIdle=true``: that idle cost shared over
  the allocations in proportion to their cost on each cluster (largest remainder, exact).

Every number comes from `accounting.chargeback.stepped_totals` (grouped_totals' numbers for
every step of the window in two reads: the ledger's stored costs, the edge rows priced by
`accounting.rating.rate`) and the rating package's idle code: no second pricing path.

No ``efficiency``: the platform records which GPUs a job holds, not how busy they are (no
DCGM or other utilisation samples), so OpenCost's used/requested ratio is not known.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import QuerySet

from accounting import rating
from accounting.chargeback import (
    GROUP_KEYS,
    Ids,
    Labels,
    ParameterError,
    Period,
    Totals,
    sort_key,
    stepped_totals,
)
from accounting.grouping import parse_keys
from accounting.idle import idle_lines
from accounting.models import UsageRecord
from accounting.pricing import load_price_list

AGGREGATE_KEYS = (*GROUP_KEYS, "job")
IDLE = "__idle__"
MAX_SETS = 1000
ZERO = Decimal(0)
DAY = timedelta(days=1)
DURATION = re.compile(r"^(\d+)(m|h|d)$")
UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": DAY}
STEP_NAMES = {"hour": timedelta(hours=1), "day": DAY, "week": timedelta(days=7)}
PARAMETERS = (
    "window",
    "aggregate",
    "step",
    "accumulate",
    "includeIdle",
    "shareIdle",
    "idleByNode",
    "format",
)


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _week_start(moment: datetime) -> datetime:
    day = _midnight(moment)
    return day - timedelta(days=(day.weekday() + 1) % 7)  # Sunday, as OpenCost


def _moment(text: str) -> datetime:
    text = text.strip()
    if text.isdigit():
        return datetime.fromtimestamp(int(text), UTC)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("no offset")
    return moment.astimezone(UTC)


def parse_window(value: str | None, now: datetime) -> Period:
    """OpenCost's window as [start, end) (not yet clipped to now)."""
    if not value:
        raise ParameterError("window", "window is required (e.g. today, 7d, lastmonth).")
    text = value.strip()
    today = _midnight(now)
    named = {
        "today": (today, today + DAY),
        "yesterday": (today - DAY, today),
        "week": (_week_start(now), _week_start(now) + timedelta(days=7)),
        "lastweek": (_week_start(now) - timedelta(days=7), _week_start(now)),
        "month": (rating.month_start(now), rating.next_month_start(now)),
        "lastmonth": (rating.month_start(rating.month_start(now) - DAY), rating.month_start(now)),
    }
    if text in named:
        return Period(*named[text])
    match = DURATION.match(text)
    if match:
        length = int(match[1]) * UNITS[match[2]]
        if match[2] == "d":
            return Period(_midnight(now - length) + DAY, today + DAY)
        return Period(now - length, now)
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError("not a pair")
        start, end = _moment(parts[0]), _moment(parts[1])
    except (ValueError, OverflowError, OSError):
        raise ParameterError(
            "window",
            f"window={value!r}: use today, yesterday, week, lastweek, month, lastmonth, a "
            "duration (30m, 12h, 7d) or start,end as RFC 3339 date-times or unix seconds.",
        ) from None
    if end < start:
        raise ParameterError("window", f"window={value!r}: end is before start.")
    return Period(start, end)


def parse_step(value: str | None) -> timedelta | str | None:
    """A fixed length, "month" (calendar months), or None (the whole window)."""
    if not value:
        return None
    if value == "month":
        return "month"
    if value in STEP_NAMES:
        return STEP_NAMES[value]
    match = DURATION.match(value)
    if match and int(match[1]) > 0:
        return int(match[1]) * UNITS[match[2]]
    raise ParameterError(
        "step", f"step={value!r}: use hour, day, week, month or a duration (1h, 1d, 7d)."
    )


def parse_aggregate(value: str | None) -> tuple[str, ...]:
    return parse_keys("aggregate", [value or ""], AGGREGATE_KEYS)


def parse_flag(parameter: str, value: str | None) -> bool:
    if value is None or value.lower() in ("", "false", "0"):
        return False
    if value.lower() in ("true", "1"):
        return True
    raise ParameterError(parameter, f"{parameter}={value!r}: use true or false.")


def steps(period: Period, step: timedelta | str | None) -> list[Period]:
    """The window cut into sets; at most MAX_SETS."""
    if step is None or period.end <= period.start:
        return [period]
    out: list[Period] = []
    start = period.start
    while start < period.end:
        if step == "month":
            end = rating.next_month_start(start)
        else:
            assert isinstance(step, timedelta)
            end = start + step
        out.append(Period(start, min(end, period.end)))
        start = end
        if len(out) > MAX_SETS:
            raise ParameterError("step", f"step gives more than {MAX_SETS} sets; use a longer one.")
    return out


@dataclass
class Allocation:
    name: str
    properties: dict[str, str]
    period: Period
    totals: Totals = field(default_factory=Totals)
    shared_cost: Decimal = Decimal(0)

    @property
    def total_cost(self) -> Decimal:
        return self.totals.cost + self.shared_cost


def _name(keys: Sequence[str], group: dict[str, str]) -> str:
    return "/".join(group[key] for key in keys)


def allocation_sets(
    records: QuerySet[UsageRecord],
    everything: QuerySet[UsageRecord],
    window: Period,
    step: timedelta | str | None,
    keys: Sequence[str],
    *,
    accumulate: bool,
    include_idle: bool,
    share_idle: bool,
) -> list[dict[str, Allocation]]:
    """A set per step: an Allocation per group of the visible `records`, with the idle
    allocation or idle shares computed over `everything` (all teams' usage). The usage of every
    step is read at once (`chargeback.stepped_totals`), not step by step."""
    parts = steps(window, step)
    fine = tuple(keys) if not share_idle else tuple(dict.fromkeys([*keys, "cluster"]))
    share_keys = tuple(dict.fromkeys([*keys, "team", "user", "cluster"]))
    labels = Labels([*fine, *share_keys] if share_idle else fine)
    per_step = stepped_totals(records, parts, fine)
    if share_idle:
        shares = _shares(records, everything, parts, share_keys)
    sets = []
    for index, (part, rows) in enumerate(zip(parts, per_step, strict=True)):
        out: dict[str, Allocation] = {}
        for ids, totals in rows.items():
            group = labels.group(fine, ids)
            name = _name(keys, group)
            item = out.setdefault(name, Allocation(name, {key: group[key] for key in keys}, part))
            item.totals.add(totals.gpu_hours, totals.gpu_equivalent_hours, totals.cost)
        if include_idle or share_idle:
            lines = idle_lines(part)
            if share_idle:
                _share(out, shares[index], labels, part, keys, share_keys, lines)
            elif lines:
                idle = Allocation(IDLE, {}, part)
                for line in lines:
                    idle.totals.add(ZERO, line.idle_gpu_equivalent_hours, line.cost)
                idle.totals.gpu_hours = idle.totals.gpu_equivalent_hours
                out[IDLE] = idle
        sets.append(out)
    if not accumulate or len(sets) <= 1:
        return sets
    total: dict[str, Allocation] = {}
    for one in sets:
        for name, item in one.items():
            into = total.setdefault(name, Allocation(name, item.properties, window))
            into.totals.add(
                item.totals.gpu_hours, item.totals.gpu_equivalent_hours, item.totals.cost
            )
            into.shared_cost += item.shared_cost
    return [total]


@dataclass(frozen=True)
class _StepShares:
    rows: dict[Ids, Totals]
    visible: set[Ids]


def _shares(
    records: QuerySet[UsageRecord],
    everything: QuerySet[UsageRecord],
    parts: Sequence[Period],
    share_keys: Sequence[str],
) -> list[_StepShares]:
    """All usage per step at the sharing grain, and which of its groups the caller sees."""
    every = stepped_totals(everything, parts, share_keys)
    seen = stepped_totals(records, parts, share_keys)
    return [_StepShares(rows, set(mine)) for rows, mine in zip(every, seen, strict=True)]


def _share(
    out: dict[str, Allocation],
    shares: _StepShares,
    labels: Labels,
    period: Period,
    keys: Sequence[str],
    share_keys: Sequence[str],
    lines: list[rating.ClusterIdle],
) -> None:
    """Each cluster's idle cost split over all usage there by cost, at the grain of the
    aggregate plus team, user and cluster (so a caller who sees part of a group gets the share
    of that part), then the visible parts' shares added to their allocations."""
    idle_by_cluster: dict[str, Decimal] = {}
    for line in lines:
        idle_by_cluster[line.cluster] = idle_by_cluster.get(line.cluster, ZERO) + line.cost
    rows = sorted(shares.rows.items(), key=lambda row: sort_key(row[0]))
    groups = [labels.group(share_keys, ids) for ids, _ in rows]
    minor = load_price_list().minor_units
    for cluster, idle in sorted(idle_by_cluster.items()):
        members = [
            (ids, group, totals)
            for (ids, totals), group in zip(rows, groups, strict=True)
            if group["cluster"] == cluster and totals.cost > 0
        ]
        if not members or not idle:
            continue
        amounts = rating.allocate_largest_remainder(idle, [t.cost for _, _, t in members], minor)
        for (ids, group, _), amount in zip(members, amounts, strict=True):
            if ids in shares.visible:
                name = _name(keys, group)
                item = out.setdefault(
                    name, Allocation(name, {key: group[key] for key in keys}, period)
                )
                item.shared_cost += amount


def clip_to_now(window: Period, now: datetime) -> Period:
    end = min(window.end, max(now, window.start))
    return Period(window.start, end)
