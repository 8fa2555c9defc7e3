"""Team budgets: alerts at 80 % and 100 %, once per threshold per month, and the site banner."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.test import Client

from accounting.budgets import check_budgets
from accounting.ledger import accrue_usage
from accounting.models import Budget, BudgetAlert
from tests.accounting.helpers import at


@pytest.fixture
def budget(team_a) -> Budget:
    return Budget.objects.create(team=team_a, month=date(2026, 3, 1), amount=Decimal("10.00"))


@pytest.fixture
def running(script, queue_a, researcher_a, h100_price):
    """One H100 of team-a running from T0: 2.00 an hour."""
    return script(queue=queue_a, owner=researcher_a).run(at(0))


def thresholds() -> list[int]:
    return sorted(BudgetAlert.objects.values_list("threshold", flat=True))


def test_no_alert_below_80_percent(budget, running):
    accrue_usage(at(3.9))  # 7.80 of 10.00

    assert thresholds() == []


def test_alert_at_80_then_100_percent_each_raised_once(budget, running):
    accrue_usage(at(4))  # 8.00: 80 %
    accrue_usage(at(4.5))
    assert thresholds() == [80]

    accrue_usage(at(5))  # 10.00: 100 %
    accrue_usage(at(6))
    check_budgets(at(7))

    assert thresholds() == [80, 100]
    assert BudgetAlert.objects.get(threshold=80).spent == Decimal("8.00")


def test_other_months_budget_is_not_alerted(team_a, running):
    Budget.objects.create(team=team_a, month=date(2026, 4, 1), amount=Decimal("1.00"))

    accrue_usage(at(5))

    assert thresholds() == []


def test_banner_shows_to_team_members_only(
    budget, running, client: Client, researcher_a, team_admin_a, researcher_b, monkeypatch
):
    accrue_usage(at(5))
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(5))

    def home(user) -> str:
        client.force_login(user)
        return client.get("/").content.decode()

    assert "Team team-a has used 100% of its March 2026 GPU budget" in home(researcher_a)
    assert "Team team-a has used 100%" in home(team_admin_a)
    assert "budget-alerts" not in home(researcher_b)


def test_banner_is_gone_the_next_month(budget, running, client: Client, researcher_a, monkeypatch):
    accrue_usage(at(5))
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(24 * 31))
    client.force_login(researcher_a)

    assert "budget-alerts" not in client.get("/").content.decode()


def test_banner_says_what_is_spent_now_and_is_no_list(
    budget, running, client: Client, researcher_a, monkeypatch
):
    # issue 24: the banner said 80 % (the figures of the crossing) when 85 % was used, kept
    # saying it after more accruals, and rendered as a bulleted list item
    accrue_usage(at(4))  # 8.00: 80 % crossed
    accrue_usage(at(4.25))  # 8.50
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(4.25))
    client.force_login(researcher_a)
    html = client.get("/").content.decode()
    assert "Team team-a has used 85% of its March 2026 GPU budget: 8.50 of 10.00" in html
    assert "past the 80% warning" in html
    banner = html[html.index('class="budget-alerts"') :]
    banner = banner[: banner.index("</div>")]
    assert "<li" not in banner and "<ul" not in html.split('class="budget-alerts"')[0][-10:]

    accrue_usage(at(4.5))  # 9.00: the next page says so
    monkeypatch.setattr("accounting.context_processors.current_time", lambda: at(4.5))
    assert "has used 90% of its March 2026 GPU budget: 9.00 of 10.00" in (
        client.get("/").content.decode()
    )
