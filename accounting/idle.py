"""Idle-cost sharing for statements (OpenCost's shareIdle), on top of `accounting.rating.idle`.

Capacity is today's: each cluster's nodes' capacity per whole-GPU flavor (MIG slices counted as
gpu_equivalent of their parent flavor), taken as in force for the whole period -- the platform
keeps no capacity history. Idle GPU-equivalent-hours are priced at the whole-GPU price and split
over the teams in proportion to their cost on that cluster.
"""

from __future__ import annotations

from decimal import Decimal

from accounting import rating
from accounting.chargeback import Period, overlapping
from accounting.models import UsageRecord
from accounting.pricing import RELATED, gpu_equivalent_of, interval_of, load_price_list
from queues.models import Flavor, Node


def capacities(period: Period, price_list: rating.PriceList) -> list[rating.ClusterCapacity]:
    flavors = {f.name: f for f in Flavor.objects.all()}
    totals: dict[tuple[str, str], Decimal] = {}
    for node in Node.objects.select_related("cluster"):
        for name, count in (node.capacity or {}).items():
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


def idle_shares(period: Period) -> list[rating.IdleShare]:
    """Every team's share of every cluster's idle cost over the period."""
    if period.end <= period.start:
        return []
    price_list = load_price_list()
    records = overlapping(UsageRecord.objects.all(), period).select_related(*RELATED)
    charges = rating.rate(
        (interval_of(r, period.start, period.end) for r in records.iterator(chunk_size=2000)),
        price_list,
    )
    return rating.share_idle_cost(
        charges, capacities(period, price_list), price_list, period.start, period.end
    )
