"""What a job costs: its rate, what it has cost so far and what its estimated runtime would
cost, with the chargeback's own code, so the numbers agree to the cent with the chargeback page.

- ``rate_per_hour``: units x the flavor's price per unit-hour x the class's multiplier in force
  at a moment (``accounting.rating.PriceList``, as the rating of the ledger reads them).
- ``projected``: the interval [start, start + runtime) rated by ``accounting.rating.rate``
  (cut where a scheduled price or multiplier changes, rounded per line as every charge).
  The runtime is in wall-clock seconds (queues/services/clock.py: ONE clock): on a simulated
  cluster a 2 h job runs, and is charged for, 2 minutes at 60x.
- ``so_far``: the job's ledger rows summed by ``accounting.chargeback.grouped_totals`` (the
  chargeback page's and the allocation API's code), up to the ledger's last accrual.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from accounting import rating
from accounting.budgets import month_to_date_cost
from accounting.chargeback import Period, Totals, chargeback_rows, grouped_totals
from accounting.models import UsageRecord
from accounting.pricing import BEGINNING, currency, gpu_equivalent_of, load_price_list
from gpuplatform import access
from queues.models import Cluster, Flavor, Job, ServiceClass, Team
from queues.services import clock

ANY = "-"  # the name a projected interval carries for its team, queue, user and cluster


@dataclass(frozen=True)
class Price:
    """The rate of a job size and what a runtime of it would cost (None: no price in force)."""

    currency: str
    rate_per_hour: Decimal | None
    projected: Decimal | None  # None also when the runtime is not known
    wall_seconds: float | None  # the runtime projected, on the wall clock

    @property
    def rate_text(self) -> str | None:
        return _money(self.rate_per_hour)

    @property
    def projected_text(self) -> str | None:
        return _money(self.projected)


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(rating.quantize_money(value))


def price(
    flavor: Flavor,
    service_class: ServiceClass,
    units: int,
    start: datetime,
    wall_seconds: float | None,
    rate_at: datetime | None = None,
) -> Price:
    """The rate in force at ``rate_at`` (default ``start``); the runtime rated from ``start``."""
    prices = load_price_list()
    equivalent = gpu_equivalent_of(flavor)
    moment = rate_at or start
    try:
        unit_price = prices.price_at(flavor.name, equivalent, moment).unit_price
    except rating.RatingError:
        return Price(prices.currency, None, None, wall_seconds)
    rate = units * unit_price * prices.multiplier_at(service_class.name, moment)
    projected = None
    if wall_seconds is not None:
        interval = rating.UsageInterval(
            job_id=ANY, team=ANY, queue=ANY, user=ANY, cluster=ANY, flavor=flavor.name,
            service_class=service_class.name, units=units, gpu_equivalent=equivalent,
            start=start, end=start + timedelta(seconds=wall_seconds),
        )  # fmt: skip
        try:
            projected = sum((c.cost for c in rating.rate([interval], prices)), Decimal(0))
        except rating.RatingError:  # a price that ends before the runtime does
            projected = None
    return Price(prices.currency, rate, projected, wall_seconds)


@dataclass(frozen=True)
class JobCost:
    price: Price | None  # None: an ended job (its cost is what it cost)
    so_far: Totals
    flavor: str  # what the rate is for
    currency: str
    from_start: bool = False  # projected from the run's start (else from the estimated start)

    @property
    def so_far_text(self) -> str:
        return str(rating.quantize_money(self.so_far.cost))

    @property
    def so_far_hours(self) -> str:
        return f"{self.so_far.gpu_hours:.2f}"


def cost_so_far(job: Job, now: datetime) -> Totals:
    """The job's ledger rows up to ``now``, summed as the chargeback sums them."""
    return costs_so_far([job.pk], now).get(job.pk, Totals())


def costs_so_far(job_ids: list[int], now: datetime) -> dict[int, Totals]:
    """``cost_so_far`` of many jobs at once (a page of the jobs list): one grouped read."""
    period = Period(BEGINNING, now)
    rows = grouped_totals(UsageRecord.objects.filter(job_id__in=job_ids), period, ("job",))
    out: dict[int, Totals] = {}
    for (job_id, *_), totals in rows:
        out.setdefault(job_id, Totals()).add(
            totals.gpu_hours, totals.gpu_equivalent_hours, totals.cost
        )
    return out


def job_cost(job: Job, now: datetime) -> JobCost:
    """Rate and projection for the job's size: on its admitted flavor from its start (running),
    else on its most preferred flavor from its estimated start (pending)."""
    so_far = cost_so_far(job, now)
    runtime = getattr(job, "runtime", None)
    admitted = runtime.flavor if runtime is not None and runtime.flavor_id else None
    flavor = admitted or next(iter(job.acceptable_flavors()), None)
    if job.is_finished or flavor is None:
        return JobCost(None, so_far, flavor.name if flavor else "", currency())
    running = job.cluster is not None and job.started_at is not None
    if running:
        start, scale = job.started_at, clock.cluster_scale(job.cluster.driver)
    else:
        estimated = runtime.estimated_start if runtime is not None else None
        start = max(estimated or now, now)
        scale = clock.pending_scale(Cluster.objects.values_list("driver", flat=True))
    wall = clock.wall_seconds(job.estimated_runtime, scale)
    units = job.workers * job.gpus_per_worker
    quote = price(flavor, job.service_class, units, start, wall, rate_at=max(start, now))
    return JobCost(quote, so_far, flavor.name, quote.currency, from_start=running)


@dataclass(frozen=True)
class TeamCosts:
    """A team's cost this month: per user the rows the viewer may see (researchers their own,
    team admins, finance and platform admins every member's), and the team's total (the
    budget banner's month-to-date figure, which every member reads)."""

    team: str
    month: str  # "2026-03"
    currency: str
    users: list[tuple[str, str, str]]  # (user, GPU-hours, cost)
    total: str


def team_costs(team: Team, viewer: Any, now: datetime) -> TeamCosts:
    period = Period(rating.month_start(now), rating.next_month_start(now))
    records = UsageRecord.objects.filter(team=team)
    visible = access.filter_visible_usage(records, viewer)
    users = [
        (row.group["user"], f"{row.totals.gpu_hours:.2f}", _money(row.totals.cost) or "0")
        for row in sorted(chargeback_rows(visible, period, ["user"]), key=lambda r: r.group["user"])
    ]
    total = month_to_date_cost([team.pk], now).get(team.name, Decimal(0))
    return TeamCosts(team.name, f"{period.start:%Y-%m}", currency(), users, _money(total) or "0")
