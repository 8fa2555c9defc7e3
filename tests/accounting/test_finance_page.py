"""The finance page /chargeback/: period picker, totals, per-team table, drill-down, exports."""

from __future__ import annotations

import pytest
from django.test import Client

from accounting.ledger import accrue_usage
from tests.accounting.helpers import at

PAGE = "/chargeback/"
MARCH = {"start": "2026-03-01", "end": "2026-04-01"}


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, team_admin_a, researcher_b, h100_price):
    script(queue=queue_a, owner=researcher_a, gpus_per_worker=2).run(at(0)).end(at(2))
    script(queue=queue_a, owner=team_admin_a, name="a2").run(at(0)).end(at(1))
    script(queue=queue_b, owner=researcher_b, name="b1").run(at(0)).end(at(3))
    accrue_usage(at(4))


def page(client: Client, user, **params) -> str:
    client.force_login(user)
    response = client.get(PAGE, params)
    assert response.status_code == 200
    return response.content.decode()


def test_finance_sees_totals_and_a_row_per_team_with_drill_down_links(usage, client, finance_user):
    html = page(client, finance_user, **MARCH)

    assert "16.00 USD" in html  # 8 + 2 + 6
    assert "team-a</a>" in html and "team-b</a>" in html
    assert "<td>10.00</td>" in html
    assert "team=team-a&amp;by=queue" in html
    assert 'name="start" value="2026-03-01"' in html


def test_drill_down_breaks_a_team_down_by_user(usage, client, platform_admin):
    html = page(client, platform_admin, **MARCH, team="team-a", by="user")

    assert "Chargeback: team team-a" in html
    assert "<td>rae-researcher-a</td>" in html and "<td>8.00</td>" in html
    assert "<td>tad-team-admin-a</td>" in html and "<td>2.00</td>" in html
    assert "rob-researcher-b" not in html


def test_export_links_point_to_the_rest_endpoint_for_the_same_period(usage, client, finance_user):
    html = page(client, finance_user, **MARCH)

    assert (
        "/api/v1/chargeback/?start=2026-03-01&amp;end=2026-04-01&amp;group_by=team&amp;format=csv"
        in html
    )
    assert "format=json" in html


def test_bad_period_shows_an_error_and_the_current_month(usage, client, finance_user):
    html = page(client, finance_user, start="never")

    assert "start=&#x27;never&#x27; is not a date" in html


def test_team_admin_cannot_open_the_finance_page(client, team_admin_a):
    client.force_login(team_admin_a)

    assert client.get(PAGE).status_code == 403


def test_finance_reaches_the_price_list_from_the_finance_page(usage, client, finance_user):
    html = page(client, finance_user, **MARCH)

    assert 'href="/manage/prices/"' in html
    assert client.get("/manage/prices/").status_code == 200
