"""Template context: the budget banner for members and admins of a team over its budget.

The banner says what is spent now (month-to-date cost up to the last accrual) and its share of
the budget, not the figures of the moment a threshold was crossed: a team at 85 % reads 85 %,
and the next page after an accrual shows the new figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_FLOOR, Decimal

from django.http import HttpRequest
from django.utils import timezone

from accounting import rating
from accounting.budgets import current_alerts, month_to_date_cost
from gpuplatform import access


def current_time() -> datetime:
    return timezone.now()


@dataclass(frozen=True)
class BudgetNotice:
    """One team's budget line: ``percent`` of ``amount`` spent, past ``threshold`` percent."""

    team: str
    month: date
    spent: Decimal
    amount: Decimal
    currency: str
    threshold: int  # the highest threshold crossed (80 or 100)

    @property
    def percent(self) -> int:
        """Whole percent spent, rounded down (so 99.6 % is not shown as 100 %)."""
        if not self.amount:
            return 100
        return int((self.spent * 100 / self.amount).to_integral_value(rounding=ROUND_FLOOR))

    @property
    def over(self) -> bool:
        return self.spent >= self.amount


def budget_alerts(request: HttpRequest) -> dict[str, list[BudgetNotice]]:
    """``budget_alerts``: this month's budget notices of the user's teams (empty for others)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"budget_alerts": []}
    team_ids = list(access.member_teams(user).values_list("pk", flat=True))
    if not team_ids:
        return {"budget_alerts": []}
    now = current_time()
    alerts = current_alerts(team_ids, now)
    if not alerts:
        return {"budget_alerts": []}
    try:
        spent = month_to_date_cost([a.budget.team_id for a in alerts], now)
    except rating.RatingError:
        spent = {}  # no rates to price with: the figures of the alert itself
    notices = []
    for alert in alerts:
        budget = alert.budget
        now_spent = max(spent.get(budget.team.name, alert.spent), alert.spent)
        notices.append(
            BudgetNotice(
                team=budget.team.name,
                month=budget.month,
                spent=now_spent,
                amount=budget.amount,
                currency=budget.currency,
                threshold=alert.threshold,
            )
        )
    return {"budget_alerts": notices}
