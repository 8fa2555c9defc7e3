"""Team budgets per UTC month: alerts when month-to-date cost reaches 80 % and 100 %.

`check_budgets(now)` runs after every accrual. Each threshold raises ONE `BudgetAlert` per budget
(unique constraint (budget, threshold)) and one warning log line; the site shows the current
month's alerts as a banner to the members and admins of the team (context processor
`accounting.context_processors.budget_alerts`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction

from accounting import rating
from accounting.chargeback import Period, chargeback_rows
from accounting.models import Budget, BudgetAlert, UsageRecord

logger = logging.getLogger(__name__)

THRESHOLDS = (80, 100)


def month_to_date_cost(team_ids: list[int], now: datetime) -> dict[str, Decimal]:
    """Cost per team name from the month's start to `now` (open rows up to the last accrual)."""
    period = Period(rating.month_start(now), rating.next_month_start(now))
    records = UsageRecord.objects.filter(team_id__in=team_ids)
    return {
        row.group["team"]: row.totals.cost for row in chargeback_rows(records, period, ["team"])
    }


def check_budgets(now: datetime) -> list[BudgetAlert]:
    """Raise the alerts newly reached by this month's budgets; returns the new alerts."""
    month = rating.month_start(now).date()
    budgets = list(Budget.objects.filter(month=month).select_related("team"))
    if not budgets:
        return []
    try:
        spent = month_to_date_cost([b.team_id for b in budgets], now)
    except rating.RatingError as error:
        logger.warning("budgets not checked: %s", error)
        return []
    raised: list[BudgetAlert] = []
    for budget in budgets:
        amount = spent.get(budget.team.name, Decimal(0))
        for threshold in THRESHOLDS:
            if amount * 100 < budget.amount * threshold:
                continue
            if BudgetAlert.objects.filter(budget=budget, threshold=threshold).exists():
                continue
            try:
                with transaction.atomic():
                    alert = BudgetAlert.objects.create(
                        budget=budget, threshold=threshold, spent=amount, raised_at=now
                    )
            except IntegrityError:
                continue  # raised concurrently: once is enough
            logger.warning(
                "budget alert: team %s spent %s of its %s %s budget for %s (%d%% reached)",
                budget.team.name,
                amount,
                budget.amount,
                budget.currency,
                f"{month:%Y-%m}",
                threshold,
            )
            raised.append(alert)
    return raised


def current_alerts(team_ids: list[int], now: datetime) -> list[BudgetAlert]:
    """This month's alerts of the given teams, the highest threshold per team only."""
    month = rating.month_start(now).date()
    alerts = BudgetAlert.objects.filter(
        budget__team_id__in=team_ids, budget__month=month
    ).select_related("budget__team")
    best: dict[int, BudgetAlert] = {}
    for alert in alerts:
        team_id = alert.budget.team_id
        if team_id not in best or alert.threshold > best[team_id].threshold:
            best[team_id] = alert
    return sorted(best.values(), key=lambda a: a.budget.team.name)
