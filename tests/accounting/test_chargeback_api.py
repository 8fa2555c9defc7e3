"""GET /api/v1/chargeback/: groups, totals, CSV streaming, access per role, bad parameters."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from accounting import rating
from accounting.ledger import accrue_usage
from accounting.models import FlavorPrice
from tests.accounting.helpers import at

URL = "/api/v1/chargeback/"
MARCH = {"start": "2026-03-01", "end": "2026-04-01"}


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, team_admin_a, researcher_b, h100_price):
    """team-a: researcher 2 GPUs x 2 h (8.00), team admin 1 GPU x 3 h (6.00);
    team-b: 4 GPUs still running, accrued for 4.5 h (36.00)."""
    a1 = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0))
    a2 = script(queue=queue_a, owner=team_admin_a, name="a2").run(at(1))
    b1 = script(queue=queue_b, owner=researcher_b, gpus_per_worker=4, name="b1").run(at(0))
    accrue_usage(at(0.5))
    a1.end(at(2))
    a2.end(at(4))
    accrue_usage(at(4.5))
    return SimpleNamespace(a1=a1.job, a2=a2.job, b1=b1.job)


def get(user, **params):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client.get(URL, params)


def costs(response) -> dict[str, str]:
    return {row["team"]: row["cost"] for row in response.json()["rows"]}


def test_finance_gets_hours_and_cost_per_team_with_totals(usage, finance_user):
    response = get(finance_user, **MARCH, group_by="team")

    assert response.status_code == 200
    body = response.json()
    assert body["currency"] == "USD"
    assert body["group_by"] == ["team"]
    assert body["rows"] == [
        {
            "team": "team-a",
            "gpu_hours": "7.000000",
            "gpu_equivalent_hours": "7.000000",
            "cost": "14.00",
        },
        {
            "team": "team-b",
            "gpu_hours": "18.000000",
            "gpu_equivalent_hours": "18.000000",
            "cost": "36.00",
        },
    ]
    assert body["totals"] == {
        "gpu_hours": "25.000000",
        "gpu_equivalent_hours": "25.000000",
        "cost": "50.00",
    }


def test_several_group_by_keys_comma_separated_or_repeated(usage, finance_user):
    comma = get(finance_user, **MARCH, group_by="team,user").json()
    client = APIClient()
    client.force_authenticate(finance_user)
    repeated = client.get(URL + "?start=2026-03-01&end=2026-04-01&group_by=team&group_by=user")

    assert [(r["team"], r["user"], r["cost"]) for r in comma["rows"]] == [
        ("team-a", "rae-researcher-a", "8.00"),
        ("team-a", "tad-team-admin-a", "6.00"),
        ("team-b", "rob-researcher-b", "36.00"),
    ]
    assert repeated.json()["rows"] == comma["rows"]


def test_queue_flavor_class_and_cluster_groups_have_readable_names(usage, finance_user):
    body = get(finance_user, **MARCH, group_by="queue,flavor,service_class,cluster").json()

    assert body["rows"][0] | {"gpu_hours": "", "gpu_equivalent_hours": "", "cost": ""} == {
        "queue": "team-a/main",
        "flavor": "h100",
        "service_class": "standard",
        "cluster": "sim",
        "gpu_hours": "",
        "gpu_equivalent_hours": "",
        "cost": "",
    }


def test_csv_is_streamed_with_the_same_rows_and_totals_as_json(usage, finance_user):
    json_body = get(finance_user, **MARCH, group_by="team,flavor").json()

    response = get(finance_user, **MARCH, group_by="team,flavor", format="csv")

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0] == [
        "team", "flavor", "gpu_hours", "gpu_equivalent_hours", "cost", "currency",
        "period_start", "period_end",
    ]  # fmt: skip
    period = ["2026-03-01T00:00:00+00:00", "2026-04-01T00:00:00+00:00"]
    assert table[1:-1] == [
        [
            r["team"],
            r["flavor"],
            r["gpu_hours"],
            r["gpu_equivalent_hours"],
            r["cost"],
            "USD",
            *period,
        ]
        for r in json_body["rows"]
    ]
    totals = json_body["totals"]
    assert table[-1] == [
        "TOTAL",
        "",
        totals["gpu_hours"],
        totals["gpu_equivalent_hours"],
        totals["cost"],
        "USD",
        *period,
    ]


def test_accept_text_csv_header_also_gives_csv(usage, finance_user):
    client = APIClient()
    client.force_authenticate(finance_user)

    response = client.get(URL, MARCH, HTTP_ACCEPT="text/csv")

    assert response.streaming
    assert b"".join(response.streaming_content).startswith(b"team,gpu_hours")


def test_a_period_cutting_through_segments_charges_only_the_part_inside(usage, finance_user):
    body = get(finance_user, start="2026-03-02T10:00:00Z", end="2026-03-02T11:00:00Z").json()

    assert costs_of(body) == {"team-a": "6.00", "team-b": "8.00"}  # 2+1 GPU-h, 4 GPU-h at 2.00


def costs_of(body) -> dict[str, str]:
    return {row["team"]: row["cost"] for row in body["rows"]}


def test_total_equals_the_sum_of_each_jobs_own_charges(
    script, queue_a, queue_b, researcher_a, researcher_b, h100_price, flavor_h100, finance_user
):
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("3.333"), effective_from=at(1.25)
    )
    price_list = rating.PriceList(
        "USD",
        (
            rating.FlavorPrice("h100", Decimal("2.00"), at(-1000), "USD"),
            rating.FlavorPrice("h100", Decimal("3.333"), at(1.25), "USD"),
        ),
    )
    timeline = [
        (queue_a, researcher_a, 2, 0, 2),
        (queue_a, researcher_a, 1, 1, 4),
        (queue_b, researcher_b, 3, 0.1, 4.5),
    ]
    steps = [
        script(queue=queue, owner=owner, gpus_per_worker=units, name=f"j{n}").run(at(start))
        for n, (queue, owner, units, start, _) in enumerate(timeline)
    ]
    accrue_usage(at(0.5))
    steps[0].end(at(2))
    steps[1].end(at(4))
    accrue_usage(at(4.5))  # the third job is still running: its row is open
    per_job = [
        sum(
            charge.cost
            for charge in rating.rate(
                [
                    rating.UsageInterval(
                        str(n),
                        "t",
                        "q",
                        "u",
                        "c",
                        "h100",
                        "standard",
                        units,
                        Decimal(1),
                        at(start),
                        at(end),
                    )
                ],
                price_list,
            )
        )
        for n, (_, _, units, start, end) in enumerate(timeline)
    ]

    body = get(finance_user, **MARCH).json()

    assert Decimal(body["totals"]["cost"]) == sum(per_job)
    assert Decimal(body["totals"]["cost"]) == sum(Decimal(r["cost"]) for r in body["rows"])


def test_access_finance_and_platform_admin_see_every_team(usage, finance_user, platform_admin):
    assert costs(get(finance_user, **MARCH)) == {"team-a": "14.00", "team-b": "36.00"}
    assert costs(get(platform_admin, **MARCH)) == {"team-a": "14.00", "team-b": "36.00"}


def test_team_admin_sees_only_their_team(usage, team_admin_a):
    assert costs(get(team_admin_a, **MARCH)) == {"team-a": "14.00"}


def test_researcher_sees_only_their_own_usage(usage, researcher_a):
    body = get(researcher_a, **MARCH, group_by="user").json()

    assert [(r["user"], r["cost"]) for r in body["rows"]] == [("rae-researcher-a", "8.00")]


def test_outsider_gets_no_rows_and_zero_totals(usage, outsider):
    body = get(outsider, **MARCH).json()

    assert body["rows"] == []
    assert body["totals"]["cost"] == "0.00"


def test_anonymous_caller_is_refused(usage):
    assert get(None, **MARCH).status_code in (401, 403)


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"start": "2026-13-45"}, "start"),
        ({"end": "yesterday"}, "end"),
        ({"start": "2026-04-01", "end": "2026-03-01"}, "start"),
        ({"group_by": "team,colour"}, "group_by"),
        ({"group_by": "team,team"}, "group_by"),
        ({"format": "xml"}, "format"),
        # valid ISO date-times whose UTC instant falls outside the years 1 to 9999
        ({"start": "0001-01-01T00:00:00+01:00"}, "start"),
        ({"start": "2026-03-01", "end": "9999-12-31T23:00:00-05:00"}, "end"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_parameter(finance_user, params, parameter):
    response = get(finance_user, **params)

    assert response.status_code == 400
    assert list(response.json()) == [parameter]


def test_usage_without_a_price_in_force_is_a_409_naming_the_flavor(
    script, queue_a, researcher_a, finance_user
):
    script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(1))

    response = get(finance_user, **MARCH)

    assert response.status_code == 409
    assert "flavor 'h100'" in response.json()["detail"]


def test_format_csv_wins_over_an_accept_json_header(usage, finance_user):
    client = APIClient()
    client.force_authenticate(finance_user)

    response = client.get(URL, MARCH | {"format": "csv"}, HTTP_ACCEPT="application/json")

    assert response.streaming


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"window": "7d", "aggregate": "namespace"}, ["aggregate", "window"]),
        ({"step": "day"}, ["step"]),
        ({"page_size": "10"}, ["page_size"]),
    ],
)
def test_unknown_parameters_are_a_400_pointing_to_the_allocation_api(finance_user, params, named):
    response = get(finance_user, **params)

    assert response.status_code == 400
    assert sorted(response.json()) == named
    assert all("/api/v1/allocation/" in response.json()[name][0] for name in named)
