"""The usage report page (/chargeback/report/, as sreport): cost and GPU-hours per team per
day, week or month, utilization from the recorded capacity, a chart and the CSV export."""

from __future__ import annotations

from django.test import Client

from accounting.ledger import accrue_usage
from dashboards.models import ONE_HOUR, CapacitySample
from tests.accounting.helpers import at

URL = "/chargeback/report/"


def test_finance_sees_each_teams_cost_per_day_utilization_and_an_export(
    client: Client, script, queue_a, queue_b, researcher_a, researcher_b, h100_price,
    cluster, flavor_h100, finance_user,
):  # fmt: skip
    a1 = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0))
    b1 = script(queue=queue_b, owner=researcher_b, name="b1").run(at(0))
    accrue_usage(at(1))
    a1.end(at(2))
    b1.end(at(24))  # into the next day
    accrue_usage(at(25))
    for hour in range(24):
        CapacitySample.objects.create(
            bucket_start=at(0).replace(hour=0) + (at(1) - at(0)) * hour, bucket_seconds=ONE_HOUR,
            cluster=cluster, flavor=flavor_h100, capacity_gpu_equivalent=4,
            failed_gpu_equivalent=0,
        )  # fmt: skip
    client.force_login(finance_user)

    response = client.get(URL, {"start": "2026-03-02", "end": "2026-03-04", "step": "day"})

    assert response.status_code == 200
    html = response.content.decode()
    lines = response.context["lines"]
    assert [line.start for line in lines] == ["2026-03-02", "2026-03-03"]
    # day one: a1 2 GPUs x 2 h (8.00), b1 15 h (30.00); day two: b1 9 h (18.00)
    assert [{k: str(v) for k, v in line.costs.items()} for line in lines] == [
        {"team-a": "8.00", "team-b": "30.00"},
        {"team-b": "18.00"},
    ]
    # 4 GPUs sampled all of day one: 96 GPU-h; 19 allocated
    assert lines[0].utilization == "19.8 %"
    assert "<rect" in html and "team-b 2026-03-03: 18.00" in html
    assert "/api/v1/allocation/?window=2026-03-02T00%3A00%3A00Z%2C2026-03-04T00%3A00%3A00Z" in html


def test_a_bad_step_says_so_and_others_are_refused(client: Client, finance_user, team_admin_a):
    client.force_login(finance_user)
    assert "choose day, week or month" in client.get(URL, {"step": "year"}).content.decode()
    client.force_login(team_admin_a)
    assert client.get(URL).status_code == 403
