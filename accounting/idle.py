"""Idle-cost sharing for statements and the allocation API (OpenCost's shareIdle), on top of
`accounting.rating.idle`.

Capacity is the recorded history: the dashboards' hourly `CapacitySample`s (written every cycle
by `dashboards.rollup.sample_capacity`, the largest capacity seen in the hour), per cluster and
whole-GPU flavor (MIG flavors counted as gpu_equivalent of their parent flavor). Each hour's
sample is in force for that hour; a cluster/flavor with no sample in an hour where others were
sampled had no capacity then; before the first sample of a period there is no capacity. Only a
period with no sample at all (before the platform recorded any) falls back to today's nodes'
capacity for the whole period. Idle GPU-equivalent-hours are priced at the whole-GPU price and
split over the teams in proportion to their cost on that cluster.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from accounting import rating
from accounting.chargeback import Period, overlapping
from accounting.models import UsageRecord
from accounting.pricing import (
    GPU_EQUIVALENT_QUANTUM,
    Related,
    gpu_equivalent_of,
    interval_of,
    load_price_list,
)
from dashboards.models import ONE_HOUR, CapacitySample
from queues.models import Flavor, Node


def capacities(period: Period, price_list: rating.PriceList) -> list[rating.ClusterCapacity]:
    """The capacity history over the period (recorded samples; today's nodes without any)."""
    recorded = recorded_capacities(period, price_list)
    return recorded if recorded is not None else current_capacities(period, price_list)


def recorded_capacities(
    period: Period, price_list: rating.PriceList
) -> list[rating.ClusterCapacity] | None:
    """Hourly samples overlapping the period as capacity rows (one at each change), or None
    when there is no sample at all in it."""
    samples = (
        CapacitySample.objects.filter(
            bucket_seconds=ONE_HOUR,
            bucket_start__gt=period.start - timedelta(seconds=ONE_HOUR),
            bucket_start__lt=period.end,
        )
        .values_list(
            "bucket_start",
            "cluster__name",
            "flavor__name",
            "capacity_gpu_equivalent",
            "other_gpu_equivalent",
        )
        .order_by("bucket_start")
    )
    by_hour: dict[datetime, dict[tuple[str, str], Decimal]] = {}
    for start, cluster, flavor, amount, others in samples:
        parent = price_list.mig_parents.get(flavor, flavor)
        hour = by_hour.setdefault(max(start, period.start), {})
        platform = max(0.0, amount - others)  # other workloads' GPUs are not the platform's idle
        value = Decimal(repr(platform)).quantize(GPU_EQUIVALENT_QUANTUM)
        hour[(cluster, parent)] = hour.get((cluster, parent), Decimal(0)) + value
    if not by_hour:
        return None
    keys = sorted({key for hour in by_hour.values() for key in hour})
    rows: list[rating.ClusterCapacity] = []
    last: dict[tuple[str, str], Decimal] = {}
    for moment in sorted(by_hour):
        for key in keys:
            value = by_hour[moment].get(key, Decimal(0))
            if last.get(key) != value:
                rows.append(rating.ClusterCapacity(key[0], key[1], value, moment))
                last[key] = value
    return rows


def current_capacities(
    period: Period, price_list: rating.PriceList
) -> list[rating.ClusterCapacity]:
    """Today's nodes' capacity (less what other workloads hold), taken as in force over the
    whole period."""
    flavors = {f.name: f for f in Flavor.objects.all()}
    totals: dict[tuple[str, str], Decimal] = {}
    for node in Node.objects.select_related("cluster"):
        for name, count in node.usable_capacity().items():
            flavor = flavors.get(name)
            if flavor is None:
                continue
            parent = price_list.mig_parents.get(name, None if flavor.is_mig else name)
            if parent is None:
                continue
            key = (node.cluster.name, parent)
            totals[key] = totals.get(key, Decimal(0)) + count * gpu_equivalent_of(flavor)
    return [
        rating.ClusterCapacity(cluster, flavor, amount, period.start)
        for (cluster, flavor), amount in sorted(totals.items())
    ]


def _rated(period: Period) -> tuple[list[rating.Charge], rating.PriceList]:
    """Every ledger row's charge inside the period, and the price list it was rated with."""
    price_list = load_price_list()
    records = overlapping(UsageRecord.objects.all(), period)
    related = Related()
    charges = rating.rate(
        (
            interval_of(related.attach(r), period.start, period.end)
            for r in records.iterator(chunk_size=2000)
        ),
        price_list,
    )
    return charges, price_list


def idle_lines(period: Period) -> list[rating.ClusterIdle]:
    """Idle GPU-equivalent-hours and cost per cluster and whole-GPU flavor over the period."""
    if period.end <= period.start:
        return []
    charges, price_list = _rated(period)
    return rating.idle_costs(
        charges, capacities(period, price_list), price_list, period.start, period.end
    )


def idle_shares(period: Period) -> list[rating.IdleShare]:
    """Every team's share of every cluster's idle cost over the period."""
    if period.end <= period.start:
        return []
    charges, price_list = _rated(period)
    return rating.share_idle_cost(
        charges, capacities(period, price_list), price_list, period.start, period.end
    )
