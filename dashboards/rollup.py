"""Fill the dashboards' time series: usage from the accounting ledger, capacity from Node rows.

The hook: `record_cycle(now)`, called at the end of each scheduling cycle (after
`accounting.services.accrue_usage(now)`); `manage.py rollup_usage --rebuild` catches up.

Usage (`roll_up_usage`): hourly and 5-minute buckets are RECOMPUTED from the ledger from the
earliest hour that may have changed since the last run -- the previous run's time, or the start
of any ledger row added since (a run recorded late) -- onward. Recomputing instead of adding
makes a re-run (or a crash half-way) harmless. 5-minute buckets are kept for the last
`FIVE_MINUTE_RETENTION` only (the hour and day views); hourly buckets are kept.

Capacity (`sample_capacity`): per cluster and flavor, GPU-equivalents on all nodes, on nodes
that are not Ready, and held on Ready nodes by other workloads (pods the platform did not
create), stored as the largest value seen in each bucket. `sample_capacity_between`
fills every bucket of a span at once (the demo's history replay).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, DateTimeField, Min, Value
from django.db.models.functions import Greatest

from accounting.models import UsageRecord
from dashboards.models import FIVE_MINUTES, ONE_HOUR, CapacitySample, RollupMark, UsageRollup
from queues.models import Flavor, Node
from queues.models.resources import usable_capacity

USAGE_MARK = "usage"
FIVE_MINUTE_RETENTION = timedelta(days=3)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Key = tuple[datetime, int, int, int]  # bucket start, team, flavor, cluster


def floor_to(moment: datetime, seconds: int) -> datetime:
    """The start of the `seconds`-long UTC bucket holding `moment`."""
    offset = int((moment - EPOCH).total_seconds()) // seconds * seconds
    return EPOCH + timedelta(seconds=offset)


def split_into_buckets(
    start: datetime, end: datetime, seconds: int, lower: datetime | None = None
) -> list[tuple[datetime, float]]:
    """(bucket start, seconds of [start, end) inside it), from `lower` on when given."""
    begin = max(start, lower) if lower is not None else start
    out: list[tuple[datetime, float]] = []
    bucket = floor_to(begin, seconds)
    step = timedelta(seconds=seconds)
    while bucket < end:
        overlap = (min(end, bucket + step) - max(begin, bucket)).total_seconds()
        if overlap > 0:
            out.append((bucket, overlap))
        bucket += step
    return out


def roll_up_usage(now: datetime) -> int:
    """Bring the usage rollups up to date with the ledger; returns the rollup rows written."""
    with transaction.atomic():
        mark, _ = RollupMark.objects.select_for_update().get_or_create(name=USAGE_MARK)
        newest = UsageRecord.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        added = UsageRecord.objects.filter(pk__gt=mark.last_record_id)
        earliest_added = added.aggregate(first=Min("start"))["first"]
        candidates = [m for m in (mark.at, earliest_added) if m is not None]
        if not candidates:
            return 0  # an empty ledger
        since = floor_to(min(candidates), ONE_HOUR)  # whole hours: both sizes start together
        written = _recompute(since, keep_five_minutes_from=now - FIVE_MINUTE_RETENTION)
        UsageRollup.objects.filter(
            bucket_seconds=FIVE_MINUTES, bucket_start__lt=now - FIVE_MINUTE_RETENTION
        ).delete()
        mark.at = max(now, mark.at) if mark.at is not None else now
        mark.last_record_id = max(newest, mark.last_record_id)
        mark.save()
    return written


def rebuild_usage_rollups(now: datetime) -> int:
    """Forget the mark and roll up the whole ledger again (after an import or a repair)."""
    RollupMark.objects.filter(name=USAGE_MARK).delete()
    UsageRollup.objects.all().delete()
    return roll_up_usage(now)


def _recompute(since: datetime, keep_five_minutes_from: datetime) -> int:
    """Recompute every bucket from `since` on from the ledger rows that reach past it: hourly
    buckets always, 5-minute buckets only where they are kept."""
    five_from = max(since, floor_to(keep_five_minutes_from, FIVE_MINUTES))
    totals: dict[int, dict[Key, float]] = {FIVE_MINUTES: defaultdict(float), ONE_HOUR: {}}
    hours: dict[Key, float] = defaultdict(float)
    for team, flavor, cluster, units, geq, start, end, count in _ledger_since(since):
        rate = units * float(geq)
        for bucket, seconds in split_into_buckets(start, end, ONE_HOUR, since):
            _add(hours, (bucket, team, flavor, cluster), rate * seconds, count)
        if end > five_from:
            five = totals[FIVE_MINUTES]
            for bucket, seconds in split_into_buckets(start, end, FIVE_MINUTES, five_from):
                _add(five, (bucket, team, flavor, cluster), rate * seconds, count)
    totals[ONE_HOUR] = hours
    UsageRollup.objects.filter(bucket_seconds=ONE_HOUR, bucket_start__gte=since).delete()
    UsageRollup.objects.filter(bucket_seconds=FIVE_MINUTES, bucket_start__gte=five_from).delete()
    new = [
        UsageRollup(
            bucket_start=bucket,
            bucket_seconds=size,
            team_id=team,
            flavor_id=flavor,
            cluster_id=cluster,
            gpu_equivalent_seconds=value,
        )
        for size, values in totals.items()
        for (bucket, team, flavor, cluster), value in values.items()
        if value > 0
    ]
    UsageRollup.objects.bulk_create(new, batch_size=2000)
    return len(new)


def _ledger_since(
    since: datetime,
) -> Iterator[tuple[int, int, int, int, Any, datetime, datetime, int]]:
    """The ledger rows that reach past `since`, those alike from `since` on counted together:
    (team, flavor, cluster, units, GPU-equivalent, start or `since` if later, end, rows).
    The open rows of a steady ledger all end at the last accrual: each bucket's share is worked
    out once per team, flavor, cluster and size of job, not once per running job."""
    return (
        UsageRecord.objects.filter(end__gt=since)
        .annotate(begin=Greatest("start", Value(since, output_field=DateTimeField())))
        .values_list(
            "team_id", "flavor_id", "cluster_id", "units", "gpu_equivalent", "begin", "end"
        )
        .annotate(rows=Count("pk"))
        .order_by()
        .iterator(chunk_size=2000)
    )


def _add(totals: dict[Key, float], key: Key, value: float, times: int) -> None:
    """Add `value` to ``totals[key]`` `times` times, one row at a time as the rows were."""
    for _ in range(times):
        totals[key] += value


def sample_capacity(now: datetime) -> int:
    """Record the nodes' capacity and failed capacity now; returns the samples touched."""
    return _store_capacity({size: [floor_to(now, size)] for size in (FIVE_MINUTES, ONE_HOUR)})


def sample_capacity_between(start: datetime, now: datetime) -> int:
    """Record the nodes' capacity as it is now in every bucket from `start` to `now` (hourly;
    5-minute buckets over the usage rollups' retention): the demo's history replay, whose nodes
    stay as they are, samples its month at once. Returns the samples touched."""
    buckets: dict[int, list[datetime]] = {}
    for size, since in ((FIVE_MINUTES, now - FIVE_MINUTE_RETENTION), (ONE_HOUR, start)):
        step = timedelta(seconds=size)
        bucket, last = floor_to(max(start, since), size), floor_to(now, size)
        buckets[size] = []
        while bucket <= last:
            buckets[size].append(bucket)
            bucket += step
    return _store_capacity(buckets)


def _store_capacity(buckets: dict[int, list[datetime]]) -> int:
    """Store the nodes' capacity in the given buckets per size, keeping the largest value seen
    in a bucket."""
    geq = dict(Flavor.objects.values_list("pk", "gpu_equivalent"))
    flavor_ids = dict(Flavor.objects.values_list("name", "pk"))
    capacity: dict[tuple[int, int], float] = defaultdict(float)
    failed: dict[tuple[int, int], float] = defaultdict(float)
    other: dict[tuple[int, int], float] = defaultdict(float)
    for cluster_id, units_by_flavor, held_by_others, ready in Node.objects.values_list(
        "cluster_id", "capacity", "other_usage", "ready"
    ):
        usable = usable_capacity(units_by_flavor, held_by_others)
        for name, units in (units_by_flavor or {}).items():
            flavor_id = flavor_ids.get(name)
            if flavor_id is None:
                continue
            key = (cluster_id, flavor_id)
            capacity[key] += units * geq[flavor_id]
            if not ready:
                failed[key] += units * geq[flavor_id]
            else:
                other[key] += (units - usable[name]) * geq[flavor_id]
    touched = 0
    with transaction.atomic():
        for size, starts in buckets.items():
            if not starts:
                continue
            existing = {
                (s.bucket_start, s.cluster_id, s.flavor_id): s
                for s in CapacitySample.objects.select_for_update().filter(
                    bucket_seconds=size, bucket_start__gte=starts[0], bucket_start__lte=starts[-1]
                )
            }
            new, changed = [], []
            for bucket in starts:
                for key, total in capacity.items():
                    sample = existing.get((bucket, *key))
                    if sample is None:
                        new.append(
                            CapacitySample(
                                bucket_start=bucket,
                                bucket_seconds=size,
                                cluster_id=key[0],
                                flavor_id=key[1],
                                capacity_gpu_equivalent=total,
                                failed_gpu_equivalent=failed[key],
                                other_gpu_equivalent=other[key],
                            )
                        )
                    elif (
                        total > sample.capacity_gpu_equivalent
                        or failed[key] > sample.failed_gpu_equivalent
                        or other[key] > sample.other_gpu_equivalent
                    ):
                        sample.capacity_gpu_equivalent = max(total, sample.capacity_gpu_equivalent)
                        sample.failed_gpu_equivalent = max(
                            failed[key], sample.failed_gpu_equivalent
                        )
                        sample.other_gpu_equivalent = max(other[key], sample.other_gpu_equivalent)
                        changed.append(sample)
            CapacitySample.objects.bulk_create(new, batch_size=2000)
            CapacitySample.objects.bulk_update(
                changed,
                ["capacity_gpu_equivalent", "failed_gpu_equivalent", "other_gpu_equivalent"],
                batch_size=500,
            )
            touched += len(new) + len(changed)
    return touched


def record_cycle(now: datetime) -> None:
    """The cycle hook: roll up the ledger and sample capacity at `now`. Callers (the cycle and
    `manage.py rollup_usage`) take turns on the mark's row lock, so they never interleave."""
    with transaction.atomic():
        RollupMark.objects.select_for_update().get_or_create(name=USAGE_MARK)
        roll_up_usage(now)
        sample_capacity(now)
