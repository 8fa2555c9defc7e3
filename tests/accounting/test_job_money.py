"""A job's cost on its page and in the submit estimate (accounting/job_money.py): the cost so
far agrees to the cent with the chargeback page, the rate is units x price x class multiplier
in force, and the projection rates the estimated runtime on the one (wall) clock, as the
estimate does."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounting.ledger import accrue_usage
from accounting.models import ClassMultiplier, FlavorPrice
from queues.models import Cluster, Job, Node, Queue, ServiceClass
from tests.accounting.helpers import T0, at

pytestmark = pytest.mark.django_db


@pytest.fixture
def prices(h100_price: FlavorPrice, service_class_std: ServiceClass) -> None:
    """2.00 per H100-hour, 3.333 from T0 + 1.5 h; class standard at 1.5."""
    ClassMultiplier.objects.create(
        service_class=service_class_std, multiplier=Decimal("1.5"), effective_from=at(-1)
    )
    FlavorPrice.objects.create(
        flavor=h100_price.flavor, price_per_unit_hour=Decimal("3.333"), effective_from=at(1.5)
    )


def page_cost(user: User, job: Job) -> Any:
    client = Client()
    client.force_login(user)
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return response.context["cost"], response.text


def test_cost_so_far_is_the_chargeback_pages_to_the_cent(
    script: Callable[..., Any], queue_a: Queue, researcher_a: User, finance_user: User,
    prices: None,
) -> None:  # fmt: skip
    """Team A's only job runs 2 GPUs from T0 across a price change, accrued in uneven steps
    (each ledger row is rated and rounded on its own: the page must sum them the same way)."""
    job = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0)).job
    for hours in (0.37, 1.21, 2.05, 3.0):
        accrue_usage(at(hours))
    cost, text = page_cost(researcher_a, job)
    client = Client()
    client.force_login(finance_user)
    chargeback = client.get("/chargeback/", {"start": "2026-03-01", "end": "2026-04-01"})
    row = next(r for r in chargeback.context["rows"] if r["team"] == "team-a")
    assert cost.so_far_text == row["cost"]
    # 2 GPUs x 1.5: 1.5 h at 2.00 (9.00) and 1.5 h at 3.333 (14.9985, in rows rounded apart)
    assert abs(Decimal(cost.so_far_text) - Decimal("23.9985")) <= Decimal("0.02")
    assert f"{cost.so_far_text} USD" in text
    assert cost.price.rate_text == "10.00"  # 2 x 3.333 x 1.5 in force now (9.999)
    assert "10.00 USD an hour (1 \u00d7 2 h100, class standard)" in text
    assert "no estimated runtime: no projection" in text


def test_an_ended_job_shows_what_it_cost_and_no_rate(
    script: Callable[..., Any], queue_a: Queue, researcher_a: User, prices: None
) -> None:
    run = script(queue=queue_a, owner=researcher_a, name="a1").run(at(0))
    accrue_usage(at(1))
    run.end(at(1))
    accrue_usage(at(2))
    cost, text = page_cost(researcher_a, run.job)
    assert cost.price is None and cost.so_far_text == "3.00"  # 1 GPU-h x 2.00 x 1.5
    assert "Rate" not in text.split('id="job-cost"')[1].split("</dl>")[0]


def test_the_estimate_and_the_pending_job_page_project_the_same_cost_on_the_wall_clock(
    queue_a: Queue, queue_b: Queue, researcher_a: User, settings: Any, prices: None,
    flavor_h100: Any, service_class_std: ServiceClass, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A 2 h job of 4 GPUs on a simulated cluster at 60x runs 2 wall minutes: 4 x 3.333 x 1.5
    x 2/60 h = 0.67 (not 60 x that); the estimate says it before, the job page after."""
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)
    settings.SIMULATION_SPEED = 60.0
    cluster = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8}, schedulable=False)
    body = {
        "queue": queue_a.pk, "service_class": "standard", "flavors": ["h100"], "name": "p",
        "image": "pytorch/pytorch:2.4.0", "workers": 1, "gpus_per_worker": 4,
        "estimated_runtime": 7200,
    }  # fmt: skip
    api = APIClient()
    api.force_authenticate(researcher_a)
    estimate = api.post("/api/v1/jobs/estimate/", body, format="json").json()
    assert (estimate["rate_per_hour"], estimate["currency"]) == ("20.00", "USD")  # 19.998
    assert estimate["projected_cost"] == "0.67"
    job_id = api.post("/api/v1/jobs/", body, format="json").json()["id"]
    cost, text = page_cost(researcher_a, Job.objects.get(pk=job_id))
    assert cost.price.rate_text == "20.00" and cost.price.projected_text == "0.67"
    assert cost.so_far_text == "0.00"
    assert "0.67 USD for the estimated runtime from its estimated start" in text


def test_no_price_says_so(
    queue_a: Queue, researcher_a: User, make_job: Callable[..., Job], flavor_h100: Any
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a, estimated_runtime=3600)
    cost, text = page_cost(researcher_a, job)
    assert cost.price.rate_text is None and "no price is set for h100" in text
    assert timezone.now() - timedelta(days=1) < job.submitted_at
    assert T0  # the helpers' epoch is unrelated to this job


def test_the_team_dashboard_has_costs_own_rows_for_researchers_all_for_team_admins(
    script: Callable[..., Any], queue_a: Queue, researcher_a: User, team_admin_a: User,
    h100_price: FlavorPrice, service_class_std: ServiceClass,
) -> None:  # fmt: skip
    """This month: researcher A 2 GPUs and the team admin 1 GPU for the same span. The team
    total is the budget banner's month-to-date figure and the chargeback's."""
    from accounting.budgets import month_to_date_cost
    from accounting.rating import month_start, quantize_money

    now = timezone.now()
    start = max(month_start(now), now - timedelta(hours=2))
    span = now - start
    script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="mine").run(start)
    script(queue=queue_a, owner=team_admin_a, gpus_per_worker=1, name="theirs").run(start)
    accrue_usage(start + span / 2)

    def costs(user: User) -> dict[str, Any]:
        client = Client()
        client.force_login(user)
        body = client.get("/dashboards/team/data/").json()
        return {t["id"]: t for t in body["tables"]}["costs"]

    total = str(quantize_money(month_to_date_cost([queue_a.team_id], now)["team-a"]))
    assert Decimal(total) > 0
    mine = costs(researcher_a)
    assert [row[0] for row in mine["rows"]] == [researcher_a.username, "Team team-a (all members)"]
    assert mine["rows"][-1][2] == total
    everyone = costs(team_admin_a)
    assert [row[0] for row in everyone["rows"]] == [
        researcher_a.username, team_admin_a.username, "Team team-a (all members)",
    ]  # fmt: skip
    mine_cost, theirs_cost = Decimal(everyone["rows"][0][2]), Decimal(everyone["rows"][1][2])
    assert mine_cost + theirs_cost == Decimal(total)
    assert abs(mine_cost - 2 * theirs_cost) <= Decimal("0.01")


def test_the_jobs_list_shows_each_jobs_cost_so_far_as_its_page_does(
    script: Callable[..., Any], queue_a: Queue, researcher_a: User, prices: None,
) -> None:  # fmt: skip
    ran = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0)).job
    for hours in (0.37, 1.21, 2.05):
        accrue_usage(at(hours))
    waiting = script(queue=queue_a, owner=researcher_a, name="a2").job
    cost, _ = page_cost(researcher_a, ran)
    client = Client()
    client.force_login(researcher_a)

    html = client.get("/jobs/").text

    assert '<th scope="col">Cost so far (USD)</th>' in html
    row = html[html.index(f"#{ran.pk}</span>") :].split("</tr>")[0]
    assert f'<td class="num">{cost.so_far_text}</td>' in row
    assert Decimal(cost.so_far_text) > 0
    row = html[html.index(f"#{waiting.pk}</span>") :].split("</tr>")[0]
    assert '<td class="num">—</td>' in row
