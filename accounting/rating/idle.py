"""Idle-cost sharing (as OpenCost's shareIdle): capacity that no job used is priced and spread
over the teams in proportion to their allocated cost.

For each cluster and whole-GPU flavor with a `ClusterCapacity`, over a window [start, end):
idle GPU-equivalents at each moment = capacity - allocated (never below zero; over-allocation
simply leaves no idle), where allocated counts every charge of that cluster whose flavor is the
capacity flavor or one of its MIG flavors (units x gpu_equivalent). Idle GPU-equivalent-hours are
priced at the capacity flavor's price in force (multiplier 1), and each cluster/flavor idle cost
is rounded once. A cluster's idle cost (sum over its flavors) is then split over the teams in
proportion to their rounded charge costs in that cluster within the window, by largest-remainder
allocation of minor units, so the shares add up to the idle cost exactly. Idle cost of a cluster
where no team has a cost is reported under the team `UNSHARED_IDLE_TEAM`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext

from accounting.rating.model import Charge, ClusterCapacity, RatingError, aware_utc
from accounting.rating.money import (
    WORK_CONTEXT,
    allocate_largest_remainder,
    exact_seconds,
    hours_of,
    product,
    quantize_hours,
    quantize_money,
)
from accounting.rating.prices import History, PriceList

UNSHARED_IDLE_TEAM = "__idle__"


@dataclass(frozen=True)
class ClusterIdle:
    """Capacity, allocation and idle of one cluster's whole-GPU flavor over [start, end)."""

    cluster: str
    flavor: str
    start: datetime
    end: datetime
    capacity_gpu_equivalent_hours: Decimal
    allocated_gpu_equivalent_hours: Decimal
    idle_gpu_equivalent_hours: Decimal
    cost: Decimal
    currency: str


@dataclass(frozen=True)
class IdleShare:
    """One team's share of one cluster's idle cost over [start, end): a separate line next to
    the team's charges. `allocated_cost` is the team's charge cost the share is proportional to."""

    cluster: str
    team: str
    start: datetime
    end: datetime
    allocated_cost: Decimal
    cost: Decimal
    currency: str


def idle_costs(
    charges: Iterable[Charge],
    capacities: Iterable[ClusterCapacity],
    price_list: PriceList,
    start: datetime,
    end: datetime,
) -> list[ClusterIdle]:
    """Idle GPU-equivalent-hours and idle cost per cluster and flavor over [start, end)."""
    start, end = _window(start, end)
    in_window = _charges_in_window(charges, price_list, start, end)
    histories = _capacity_histories(capacities, price_list)
    lines: list[ClusterIdle] = []
    for (cluster, flavor), history in sorted(histories.items()):
        family = [
            charge
            for charge in in_window
            if charge.cluster == cluster
            and price_list.mig_parents.get(charge.flavor, charge.flavor) == flavor
        ]
        lines.append(_cluster_idle(cluster, flavor, history, family, price_list, start, end))
    return lines


def share_idle_cost(
    charges: Iterable[Charge],
    capacities: Iterable[ClusterCapacity],
    price_list: PriceList,
    start: datetime,
    end: datetime,
) -> list[IdleShare]:
    """Each cluster's idle cost over [start, end) split over teams in proportion to their
    allocated (charged) cost there; the shares of a cluster sum exactly to its idle cost."""
    start, end = _window(start, end)
    in_window = _charges_in_window(charges, price_list, start, end)
    idle_by_cluster: dict[str, Decimal] = {}
    for line in idle_costs(in_window, capacities, price_list, start, end):
        idle_by_cluster[line.cluster] = idle_by_cluster.get(line.cluster, Decimal(0)) + line.cost
    shares: list[IdleShare] = []
    for cluster, idle in sorted(idle_by_cluster.items()):
        cost_by_team: dict[str, Decimal] = {}
        for charge in in_window:
            if charge.cluster == cluster:
                cost_by_team[charge.team] = cost_by_team.get(charge.team, Decimal(0)) + charge.cost
        teams = sorted(team for team, cost in cost_by_team.items() if cost > 0)
        if not teams:
            zero = quantize_money(Decimal(0), price_list.minor_units)
            teams, weights, amounts = [UNSHARED_IDLE_TEAM], [zero], [idle]
        else:
            weights = [cost_by_team[team] for team in teams]
            amounts = allocate_largest_remainder(idle, weights, price_list.minor_units)
        shares.extend(
            IdleShare(cluster, team, start, end, weight, amount, price_list.currency)
            for team, weight, amount in zip(teams, weights, amounts, strict=True)
        )
    return shares


def _window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start = aware_utc("idle window", "start", start)
    end = aware_utc("idle window", "end", end)
    if end < start:
        raise RatingError(
            f"idle window end ({end.isoformat()}) is before start ({start.isoformat()})"
        )
    return start, end


def _charges_in_window(
    charges: Iterable[Charge], price_list: PriceList, start: datetime, end: datetime
) -> list[Charge]:
    """Charges inside [start, end); those wholly outside are left out, straddling ones refused
    (their cost cannot be cut without re-rating)."""
    kept: list[Charge] = []
    for charge in charges:
        if charge.currency != price_list.currency:
            raise RatingError(
                f"charge of job {charge.job_id!r} is in {charge.currency} but the price list "
                f"is in {price_list.currency}"
            )
        if charge.end <= start or charge.start >= end:
            continue
        if charge.start < start or charge.end > end:
            raise RatingError(
                f"charge of job {charge.job_id!r} [{charge.start.isoformat()}, "
                f"{charge.end.isoformat()}) straddles the idle window [{start.isoformat()}, "
                f"{end.isoformat()}); rate clip_to_period(usage, start, end) first"
            )
        kept.append(charge)
    return kept


def _capacity_histories(
    capacities: Iterable[ClusterCapacity], price_list: PriceList
) -> dict[tuple[str, str], History]:
    rows: dict[tuple[str, str], list[tuple[datetime, Decimal]]] = {}
    for capacity in capacities:
        if capacity.flavor in price_list.mig_parents:
            raise RatingError(
                f"capacity of cluster {capacity.cluster!r} is given in MIG flavor "
                f"{capacity.flavor!r}; give it in its whole-GPU flavor "
                f"{price_list.mig_parents[capacity.flavor]!r}"
            )
        rows.setdefault((capacity.cluster, capacity.flavor), []).append(
            (capacity.effective_from, capacity.gpu_equivalents)
        )
    return {
        key: History(f"capacity of cluster {key[0]!r} flavor {key[1]!r}", values)
        for key, values in rows.items()
    }


def _cluster_idle(
    cluster: str,
    flavor: str,
    capacity: History,
    charges: Sequence[Charge],
    price_list: PriceList,
    start: datetime,
    end: datetime,
) -> ClusterIdle:
    deltas: dict[datetime, Decimal] = {}
    for charge in charges:
        amount = product(Decimal(charge.units), charge.gpu_equivalent)
        deltas[charge.start] = deltas.get(charge.start, Decimal(0)) + amount
        deltas[charge.end] = deltas.get(charge.end, Decimal(0)) - amount
    cuts = {start, end, *deltas, *capacity.starts, *price_list.price_change_points(flavor)}
    bounds = sorted(moment for moment in cuts if start <= moment <= end)
    allocated = Decimal(0)  # every charge here starts inside the window
    capacity_hours = allocated_hours = idle_hours = raw_cost = Decimal(0)
    with localcontext(WORK_CONTEXT):
        for a, b in itertools.pairwise(bounds):
            allocated += deltas.get(a, Decimal(0))
            seconds = exact_seconds(b - a)
            in_force = capacity.at(a) or Decimal(0)
            idle = max(Decimal(0), in_force - allocated)
            capacity_hours += hours_of(in_force, seconds)
            allocated_hours += hours_of(allocated, seconds)
            if idle > 0:
                idle_hours += hours_of(idle, seconds)
                price = price_list.price_at(flavor, Decimal(1), a).unit_price
                raw_cost += hours_of(product(idle, price), seconds)
    return ClusterIdle(
        cluster=cluster,
        flavor=flavor,
        start=start,
        end=end,
        capacity_gpu_equivalent_hours=quantize_hours(capacity_hours),
        allocated_gpu_equivalent_hours=quantize_hours(allocated_hours),
        idle_gpu_equivalent_hours=quantize_hours(idle_hours),
        cost=quantize_money(raw_cost, price_list.minor_units),
        currency=price_list.currency,
    )
