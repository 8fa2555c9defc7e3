"""Usage, prices, class multipliers and statements under /api/v1/."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.ledger import accrue_usage
from accounting.models import FlavorPrice
from accounting.statements import generate_statement
from tests.accounting.helpers import at


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def ledger(script, queue_a, queue_b, researcher_a, team_admin_a, researcher_b, h100_price):
    script(queue=queue_a, owner=researcher_a, name="a1").run(at(0)).end(at(1))
    script(queue=queue_a, owner=team_admin_a, name="a2").run(at(0)).end(at(2))
    script(queue=queue_b, owner=researcher_b, name="b1").run(at(0))
    accrue_usage(at(3))


def test_finance_lists_the_raw_ledger_paginated(ledger, finance_user):
    body = client_for(finance_user).get("/api/v1/usage/", {"page_size": 2}).json()

    assert body["count"] == 3
    assert len(body["results"]) == 2
    assert body["next"]
    first = body["results"][0]
    assert set(first) >= {
        "job",
        "team",
        "queue",
        "user",
        "cluster",
        "flavor",
        "service_class",
        "units",
        "gpu_equivalents",
        "start",
        "end",
        "seconds",
        "cost",
    }


def test_usage_filters_by_team_user_and_time_range(ledger, finance_user):
    client = client_for(finance_user)

    by_team = client.get("/api/v1/usage/", {"team": "team-b"}).json()["results"]
    by_user = client.get("/api/v1/usage/", {"user": "rae-researcher-a"}).json()["results"]
    by_queue = client.get("/api/v1/usage/", {"queue": "team-a/main"}).json()["count"]
    late = client.get("/api/v1/usage/", {"start": "2026-03-02T10:30:00Z"}).json()["count"]

    assert [r["team"] for r in by_team] == ["team-b"]
    assert by_team[0]["closed"] is False
    assert [r["cost"] for r in by_user] == ["2.00"]
    assert by_queue == 2
    assert late == 2  # the 1-hour job ended at 10:00


def test_usage_visibility_per_role(ledger, team_admin_a, researcher_a, outsider):
    def count(user) -> int:
        return client_for(user).get("/api/v1/usage/").json()["count"]

    assert count(team_admin_a) == 2
    assert count(researcher_a) == 1
    assert count(outsider) == 0


def test_usage_bad_time_is_a_400_naming_it(finance_user):
    response = client_for(finance_user).get("/api/v1/usage/", {"end": "soon"})

    assert response.status_code == 400
    assert "end" in response.json()


def test_finance_reads_prices_but_cannot_write_them(h100_price, finance_user):
    client = client_for(finance_user)

    assert client.get("/api/v1/prices/").json()[0]["price_per_unit_hour"] == "2.000000"
    response = client.post(
        "/api/v1/prices/",
        {"flavor": "h100", "price_per_unit_hour": "3", "effective_from": "2026-05-01T00:00Z"},
    )
    assert response.status_code == 403


def test_researcher_cannot_read_prices(h100_price, researcher_a):
    assert client_for(researcher_a).get("/api/v1/prices/").status_code == 403


def test_platform_admin_adds_a_price_and_the_history_is_kept(h100_price, platform_admin):
    client = client_for(platform_admin)

    response = client.post(
        "/api/v1/prices/",
        {"flavor": "h100", "price_per_unit_hour": "3.10", "effective_from": "2026-05-01T00:00Z"},
    )

    assert response.status_code == 201, response.json()
    assert [p.price_per_unit_hour for p in FlavorPrice.objects.order_by("effective_from")] == [
        Decimal("2.00"),
        Decimal("3.10"),
    ]
    assert client.put(f"/api/v1/prices/{h100_price.pk}/", {}).status_code == 405
    assert client.delete(f"/api/v1/prices/{h100_price.pk}/").status_code == 405


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"currency": "EUR"}, "currency"),
        ({"price_per_unit_hour": "-1"}, "price_per_unit_hour"),
        ({"flavor": "tpu"}, "flavor"),
        ({"effective_from": "2020-01-01T00:00Z"}, "non_field_errors"),  # same date twice
    ],
)
def test_bad_price_is_a_400_naming_the_field(h100_price, platform_admin, payload, field):
    data = {"flavor": "h100", "price_per_unit_hour": "3", "effective_from": "2026-05-01T00:00Z"}

    response = client_for(platform_admin).post("/api/v1/prices/", data | payload)

    assert response.status_code == 400
    assert field in response.json()


def test_platform_admin_sets_a_class_multiplier(service_class_std, platform_admin):
    response = client_for(platform_admin).post(
        "/api/v1/class-multipliers/",
        {"service_class": "standard", "multiplier": "0.5", "effective_from": "2026-05-01T00:00Z"},
    )

    assert response.status_code == 201


def test_statements_with_lines_visible_to_finance_and_own_team_admin_only(
    ledger, team_a, team_b, finance_user, team_admin_a, researcher_a, outsider
):
    now = datetime(2026, 3, 20, tzinfo=UTC)
    mine = generate_statement(team_a, date(2026, 3, 1), now)
    theirs = generate_statement(team_b, date(2026, 3, 1), now)

    finance = client_for(finance_user).get("/api/v1/statements/").json()["results"]
    admin = (
        client_for(team_admin_a).get("/api/v1/statements/", {"month": "2026-03"}).json()["results"]
    )

    assert {s["team"] for s in finance} == {"team-a", "team-b"}
    assert [s["team"] for s in admin] == ["team-a"]
    assert admin[0]["total"] == "6.00"
    assert admin[0]["lines"][0]["queue"] == "team-a/main"
    assert client_for(team_admin_a).get(f"/api/v1/statements/{theirs.pk}/").status_code == 404
    assert client_for(outsider).get(f"/api/v1/statements/{mine.pk}/").status_code == 404
    assert client_for(researcher_a).get("/api/v1/statements/").json()["count"] == 0


def test_statement_month_filter_must_be_a_month(finance_user):
    response = client_for(finance_user).get("/api/v1/statements/", {"month": "March"})

    assert response.status_code == 400
    assert "month" in response.json()


def test_a_new_price_is_recorded_in_the_change_history(h100_price, platform_admin):
    from audit import history_for

    client_for(platform_admin).post(
        "/api/v1/prices/",
        {"flavor": "h100", "price_per_unit_hour": "3.10", "effective_from": "2026-05-01T00:00Z"},
    )

    price = FlavorPrice.objects.get(price_per_unit_hour=Decimal("3.10"))
    changes = {entry.field: entry.new for entry in history_for(price)}
    assert changes["price_per_unit_hour"] == "3.100000"
    assert changes["flavor"] == "h100"
