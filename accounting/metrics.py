"""Month-to-date accounting for ``/metrics`` (queues/metrics.py registers it): GPU-hours, cost,
budget and budget burn per team, from the usage ledger as of the last cycle's accrual (the same
rows and prices as the chargeback; a month without prices reports hours and no cost)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from decimal import Decimal

from django.utils import timezone
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from accounting import rating
from accounting.chargeback import Period, chargeback_rows, currency
from accounting.models import Budget, UsageRecord

logger = logging.getLogger(__name__)


class AccountingCollector:
    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        hours = GaugeMetricFamily(
            "gpuplatform_team_gpu_hours",
            "GPU-hours (units of each flavor times hours) a team used this month, UTC.",
            labels=["team"],
        )
        equivalent = GaugeMetricFamily(
            "gpuplatform_team_gpu_equivalent_hours",
            "Whole-GPU-equivalent hours a team used this month (a 1g MIG slice counts 1/7).",
            labels=["team"],
        )
        cost = GaugeMetricFamily(
            "gpuplatform_team_cost",
            "What a team's usage this month costs, in the accounting currency.",
            labels=["team", "currency"],
        )
        budget = GaugeMetricFamily(
            "gpuplatform_team_budget",
            "A team's budget for this month, in the accounting currency.",
            labels=["team", "currency"],
        )
        burn = GaugeMetricFamily(
            "gpuplatform_team_budget_burn_ratio",
            "This month's cost over this month's budget (1: all spent).",
            labels=["team"],
        )
        period = Period(rating.month_start(now), rating.next_month_start(now))
        money = currency()
        spent: dict[str, Decimal] = {}
        try:
            rows = list(chargeback_rows(UsageRecord.objects.all(), period, ["team"]))
        except rating.RatingError as error:  # no price for some usage: hours without cost
            logger.warning("metrics: this month's cost is not known: %s", error)
            rows = []
        for row in sorted(rows, key=lambda r: r.group["team"]):
            team = row.group["team"]
            hours.add_metric([team], float(row.totals.gpu_hours))
            equivalent.add_metric([team], float(row.totals.gpu_equivalent_hours))
            cost.add_metric([team, money], float(row.totals.cost))
            spent[team] = row.totals.cost
        month = rating.month_start(now).date()
        for item in Budget.objects.filter(month=month).select_related("team"):
            budget.add_metric([item.team.name, item.currency], float(item.amount))
            burn.add_metric([item.team.name], float(spent.get(item.team.name, 0) / item.amount))
        yield from (hours, equivalent, cost, budget, burn)
