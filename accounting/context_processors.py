"""Template context: the budget banner for members and admins of a team over its budget."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from django.utils import timezone

from accounting.budgets import current_alerts
from accounting.models import BudgetAlert
from gpuplatform import access


def current_time() -> datetime:
    return timezone.now()


def budget_alerts(request: HttpRequest) -> dict[str, list[BudgetAlert]]:
    """``budget_alerts``: this month's budget alerts of the user's teams (empty for others)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"budget_alerts": []}
    team_ids = list(access.member_teams(user).values_list("pk", flat=True))
    if not team_ids:
        return {"budget_alerts": []}
    return {"budget_alerts": current_alerts(team_ids, current_time())}
