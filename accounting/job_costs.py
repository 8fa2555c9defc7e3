"""Per-job cost records (as Slurm's sacct): one row per job and UTC month over a period.

GPU-hours and cost are `accounting.chargeback.grouped_totals` per month grouped by job (and the
job's team, queue, user, cluster, flavor and service class), so the rows add up to the
chargeback totals of the same period to the cent. `rate` and `multiplier` are the flavor's price
per unit-hour and the service class's multiplier in force at the row's first moment in the month
(`accounting.rating.PriceList`); `effective_rate` is cost / GPU-hours (differs from
rate x multiplier only when a price changed during the row).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Max, Min, QuerySet

from accounting import rating
from accounting.chargeback import Labels, Period, Totals, grouped_totals, overlapping
from accounting.models import UsageRecord
from accounting.pricing import gpu_equivalent_of, load_price_list
from queues.models import Flavor, Job

KEYS = ("job", "team", "queue", "user", "cluster", "flavor", "service_class")
COLUMNS = (
    "month",
    "period_start",
    "period_end",
    "job_id",
    "job_name",
    "state",
    "team",
    "queue",
    "user",
    "cluster",
    "flavor",
    "service_class",
    "first_start",
    "last_end",
    "gpu_hours",
    "gpu_equivalent_hours",
    "rate",
    "multiplier",
    "effective_rate",
    "cost",
    "currency",
)


@dataclass(frozen=True)
class JobRow:
    values: dict[str, str]
    totals: Totals


def months(period: Period) -> list[Period]:
    out = []
    start = period.start
    while start < period.end:
        end = min(rating.next_month_start(start), period.end)
        out.append(Period(start, end))
        start = end
    return out


def job_rows(records: QuerySet[UsageRecord], period: Period, unit: str) -> Iterator[JobRow]:
    """Rows per month of the period, each month ordered by job id. Raises `rating.RatingError`
    (no price in force) before the first row of a month."""
    price_list: rating.PriceList | None = None
    labels = Labels(KEYS[1:])
    for month in months(period):
        totals = list(grouped_totals(records, month, KEYS))
        if not totals:
            continue
        price_list = price_list or load_price_list()
        job_ids = {ids[0] for ids, _ in totals}
        jobs = {job.pk: job for job in Job.objects.filter(pk__in=job_ids).only("name", "state")}
        flavors = {f.pk: f for f in Flavor.objects.all()}
        spans = {
            (item["job_id"], item["flavor_id"], item["service_class_id"]): (item["a"], item["b"])
            for item in overlapping(records, month)
            .filter(job_id__in=job_ids)
            .values("job_id", "flavor_id", "service_class_id")
            .annotate(a=Min("start"), b=Max("end"))
            .order_by()
        }
        for ids, sums in totals:
            group = labels.group(KEYS[1:], ids[1:])
            job = jobs.get(ids[0])
            first, last = spans.get((ids[0], ids[5], ids[6]), (month.start, month.end))
            first, last = max(first, month.start), min(last, month.end)
            rate, multiplier = _terms(price_list, flavors.get(ids[5]), group, first)
            hours = rating.quantize_hours(sums.gpu_hours)
            effective = (sums.cost / hours).quantize(Decimal("0.000001")) if hours else Decimal(0)
            values = {
                "month": f"{month.start:%Y-%m}",
                "period_start": month.start.isoformat(),
                "period_end": month.end.isoformat(),
                "job_id": str(ids[0]),
                "job_name": job.name if job else "",
                "state": job.state if job else "",
                **group,
                "first_start": first.isoformat(),
                "last_end": last.isoformat(),
                "gpu_hours": str(hours),
                "gpu_equivalent_hours": str(rating.quantize_hours(sums.gpu_equivalent_hours)),
                "rate": rate,
                "multiplier": multiplier,
                "effective_rate": str(effective),
                "cost": str(rating.quantize_money(sums.cost)),
                "currency": unit,
            }
            yield JobRow(values, sums)


def _terms(
    price_list: rating.PriceList, flavor: Flavor | None, group: dict[str, str], moment: datetime
) -> tuple[str, str]:
    """The price per unit-hour and the multiplier in force at `moment` ("" when none is)."""
    try:
        equivalent = gpu_equivalent_of(flavor) if flavor else Decimal(1)
        price = price_list.price_at(group["flavor"], equivalent, moment).unit_price
    except rating.RatingError:
        price = None
    multiplier = price_list.multiplier_at(group["service_class"], moment)
    return ("" if price is None else str(price)), str(multiplier)
