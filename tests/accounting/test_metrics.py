"""``/metrics`` month to date (issue 20): a team's GPU-hours, cost, budget and budget burn, the
same numbers as the chargeback for the month."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from accounting.ledger import accrue_usage
from accounting.models import Budget
from tests.accounting.helpers import at


def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_month_to_date_hours_cost_budget_and_burn(
    team_a, script, queue_a, researcher_a, h100_price, client: Client, monkeypatch
) -> None:
    Budget.objects.create(team=team_a, month=date(2026, 3, 1), amount=Decimal("10.00"))
    script(queue=queue_a, owner=researcher_a).run(at(0))  # one H100 at 2.00 an hour
    accrue_usage(at(4))
    monkeypatch.setattr("accounting.metrics.timezone.now", lambda: at(4))

    m = scrape(client)

    team = (("team", "team-a"),)
    assert m[("gpuplatform_team_gpu_hours", team)] == 4.0
    assert m[("gpuplatform_team_gpu_equivalent_hours", team)] == 4.0
    assert m[("gpuplatform_team_cost", (("currency", "USD"), ("team", "team-a")))] == 8.0
    assert m[("gpuplatform_team_budget", (("currency", "USD"), ("team", "team-a")))] == 10.0
    assert m[("gpuplatform_team_budget_burn_ratio", team)] == 0.8

    monkeypatch.setattr("accounting.metrics.timezone.now", lambda: at(24 * 31))  # April
    m = scrape(client)
    assert ("gpuplatform_team_gpu_hours", team) not in m  # nothing accrued in April yet
