"""REST for budgets and statement adjustments (issue 25): who reads, who writes, audited, and
final statements untouched."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounting import rating
from accounting.models import Budget, Statement, StatementLine
from audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_finance_sets_changes_and_removes_a_budget_each_step_audited(team_a, finance_user):
    finance = client_for(finance_user)

    created = finance.post(
        "/api/v1/budgets/", {"team": "team-a", "month": "2026-03-01", "amount": "1000.00"}
    )
    assert created.status_code == 201, created.json()
    assert created.json() | {"id": 0} == {
        "id": 0, "team": "team-a", "month": "2026-03-01", "amount": "1000.00", "currency": "USD",
    }  # fmt: skip
    url = f"/api/v1/budgets/{created.json()['id']}/"
    assert finance.patch(url, {"amount": "1500.00"}).json()["amount"] == "1500.00"
    assert finance.delete(url).status_code == 204

    assert not Budget.objects.exists()
    changes = AuditEntry.objects.filter(object_type="accounting.budget", field="amount")
    assert {(e.old, e.new) for e in changes} == {
        (None, "1000.00"),
        ("1000.00", "1500.00"),
        ("1500.00", None),
    }
    assert {e.actor for e in changes} == {finance_user}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"team": "team-a", "month": "2026-03-02", "amount": "10"}, "month"),
        ({"team": "team-a", "month": "2026-03-01", "amount": "0"}, "amount"),
        ({"team": "nobody", "month": "2026-03-01", "amount": "10"}, "team"),
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field(team_a, finance_user, body, field):
    response = client_for(finance_user).post("/api/v1/budgets/", body)

    assert response.status_code == 400
    assert field in response.json()


def test_team_admins_read_their_teams_budgets_and_cannot_write(
    team_a, team_b, team_admin_a, researcher_a
):
    Budget.objects.create(team=team_a, month=date(2026, 3, 1), amount=Decimal(10))
    Budget.objects.create(team=team_b, month=date(2026, 3, 1), amount=Decimal(10))
    admin = client_for(team_admin_a)

    assert [b["team"] for b in admin.get("/api/v1/budgets/").json()["results"]] == ["team-a"]
    assert client_for(researcher_a).get("/api/v1/budgets/").json()["results"] == []
    body = {"team": "team-a", "month": "2026-04-01", "amount": "10"}
    assert admin.post("/api/v1/budgets/", body).status_code == 403


def test_finance_adds_an_adjustment_to_the_current_month_audited(team_a, finance_user):
    response = client_for(finance_user).post(
        "/api/v1/adjustments/",
        {"team": "team-a", "cost": "-12.50", "description": "credit for the outage"},
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    month = rating.month_start(timezone.now()).date()
    assert (body["team"], body["month"], body["cost"]) == ("team-a", str(month), "-12.50")
    statement = Statement.objects.get(team=team_a, month=month)
    assert statement.total == Decimal("-12.50")
    assert AuditEntry.objects.filter(
        object_type="accounting.statementline", field="cost", new="-12.50"
    ).exists()


def test_a_final_statement_is_never_adjusted_and_team_admins_cannot_adjust(
    team_a, finance_user, team_admin_a
):
    final = Statement.objects.create(team=team_a, month=date(2026, 1, 1), status="final")

    client_for(finance_user).post(
        "/api/v1/adjustments/", {"team": "team-a", "cost": "5", "description": "late fix"}
    )

    assert not StatementLine.objects.filter(statement=final).exists()
    response = client_for(team_admin_a).post(
        "/api/v1/adjustments/", {"team": "team-a", "cost": "5", "description": "x"}
    )
    assert response.status_code == 403


def test_an_adjustment_needs_a_description(team_a, finance_user):
    response = client_for(finance_user).post(
        "/api/v1/adjustments/", {"team": "team-a", "cost": "5", "description": " "}
    )

    assert response.status_code == 400
    assert "description" in response.json()
