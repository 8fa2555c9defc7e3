"""GET /api/v1/accounting/jobs/ (sacct-like per-job costs): one row per job and month, JSON and
CSV, totals equal to the chargeback's to the cent (issue 25)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.ledger import accrue_usage
from accounting.models import ClassMultiplier, FlavorPrice
from tests.accounting.helpers import T0, at

URL = "/api/v1/accounting/jobs/"
MARCH_APRIL = {"start": "2026-03-01", "end": "2026-05-01"}


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, researcher_b, h100_price, service_class_std):
    """a1: 2 GPUs for 2 h from T0; b1: 1 GPU from 2026-03-31 22:00 to 2026-04-01 03:00 (two
    months), at multiplier 1.5; a price change to 3.333 at 2026-04-01 01:00."""
    ClassMultiplier.objects.create(
        service_class=service_class_std, multiplier=Decimal("1.5"), effective_from=at(-1)
    )
    FlavorPrice.objects.create(
        flavor=h100_price.flavor,
        price_per_unit_hour=Decimal("3.333"),
        effective_from=T0.replace(month=4, day=1, hour=1),
    )
    a1 = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0))
    accrue_usage(at(1))
    a1.end(at(2))
    accrue_usage(at(3))
    b1 = script(queue=queue_b, owner=researcher_b, name="b1").run(T0.replace(day=31, hour=22))
    accrue_usage(T0.replace(day=31, hour=23))
    b1.end(T0.replace(month=4, day=1, hour=3))
    accrue_usage(T0.replace(month=4, day=1, hour=4))
    return a1.job, b1.job


def get(user, **params):
    client = APIClient()
    client.force_authenticate(user)
    return client.get(URL, params)


def test_one_row_per_job_and_month(usage, finance_user):
    a1, b1 = usage
    body = get(finance_user, **MARCH_APRIL).json()

    rows = [(r["month"], r["job_id"], r["gpu_hours"], r["cost"]) for r in body["rows"]]
    assert rows == [
        ("2026-03", str(a1.pk), "4.000000", "12.00"),  # 4 GPU-h x 2.00 x 1.5
        ("2026-03", str(b1.pk), "2.000000", "6.00"),
        ("2026-04", str(b1.pk), "3.000000", "13.00"),  # 1 h x 2.00 x 1.5 + 2 h x 3.333 x 1.5
    ]
    first = body["rows"][0]
    assert first | {"job_id": ""} == first | {
        "job_id": "",
        "job_name": "a1",
        "state": "succeeded",
        "team": "team-a",
        "queue": "team-a/main",
        "user": "rae-researcher-a",
        "flavor": "h100",
        "service_class": "standard",
        "rate": "2.000000",
        "multiplier": "1.500",
        "effective_rate": "3.000000",
        "currency": "USD",
        "period_start": "2026-03-01T00:00:00+00:00",
        "period_end": "2026-04-01T00:00:00+00:00",
    }
    april = body["rows"][2]
    assert (april["rate"], april["first_start"]) == ("2.000000", "2026-04-01T00:00:00+00:00")
    assert body["totals"] == {"gpu_hours": "9.000000", "cost": "31.00"}


def test_the_csv_totals_equal_the_chargeback_to_the_cent(usage, finance_user):
    response = get(finance_user, **MARCH_APRIL, format="csv")

    assert response["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    header, lines, total = table[0], table[1:-1], table[-1]
    assert header[:3] == ["month", "period_start", "period_end"]
    assert total[0] == "TOTAL"
    cost = header.index("cost")
    client = APIClient()
    client.force_authenticate(finance_user)
    chargeback = client.get("/api/v1/chargeback/", MARCH_APRIL).json()
    assert sum(Decimal(line[cost]) for line in lines) == Decimal(chargeback["totals"]["cost"])
    assert Decimal(total[cost]) == Decimal(chargeback["totals"]["cost"])


def test_each_caller_sees_the_jobs_they_may_see(usage, researcher_a, researcher_b, outsider):
    assert {r["user"] for r in get(researcher_a, **MARCH_APRIL).json()["rows"]} == {
        "rae-researcher-a"
    }
    assert {r["team"] for r in get(researcher_b, **MARCH_APRIL).json()["rows"]} == {"team-b"}
    assert get(outsider, **MARCH_APRIL).json()["rows"] == []


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"window": "7d"}, ["window"]),
        ({"start": "soon"}, ["start"]),
        ({"format": "xml"}, ["format"]),
    ],
)
def test_bad_or_unknown_parameters_are_a_400_naming_them(finance_user, params, named):
    response = get(finance_user, **params)

    assert response.status_code == 400
    assert sorted(response.json()) == named
