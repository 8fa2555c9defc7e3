"""GET /api/v1/allocation/ (OpenCost's allocation API): windows, aggregate, step, accumulate,
includeIdle, shareIdle, CSV, access and unknown parameters (issue 25)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.allocation import Period, parse_step, parse_window, steps
from accounting.chargeback import ParameterError
from accounting.ledger import accrue_usage
from dashboards.models import ONE_HOUR, CapacitySample
from queues.models import Cluster, Node
from tests.accounting.helpers import at

URL = "/api/v1/allocation/"
FOUR_HOURS = "2026-03-02T09:00:00Z,2026-03-02T13:00:00Z"


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, team_admin_a, researcher_b, h100_price):
    """From T0 (2026-03-02 09:00 UTC): team-a a1 2 GPUs for 2 h (8.00) and a2 1 GPU from +1 h
    to +4 h (6.00); team-b b1 4 GPUs, running, accrued to +4.5 h (36.00). 2.00 per GPU-hour."""
    a1 = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1").run(at(0))
    a2 = script(queue=queue_a, owner=team_admin_a, name="a2").run(at(1))
    script(queue=queue_b, owner=researcher_b, gpus_per_worker=4, name="b1").run(at(0))
    accrue_usage(at(0.5))
    a1.end(at(2))
    a2.end(at(4))
    accrue_usage(at(4.5))
    return a1.job


def get(user, **params):
    client = APIClient()
    client.force_authenticate(user)
    return client.get(URL, params)


def costs(body, index=0) -> dict[str, float]:
    return {name: item["totalCost"] for name, item in body["data"][index].items()}


NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("window", "start", "end"),
    [
        ("today", datetime(2026, 3, 18, tzinfo=UTC), datetime(2026, 3, 19, tzinfo=UTC)),
        ("yesterday", datetime(2026, 3, 17, tzinfo=UTC), datetime(2026, 3, 18, tzinfo=UTC)),
        ("week", datetime(2026, 3, 15, tzinfo=UTC), datetime(2026, 3, 22, tzinfo=UTC)),
        ("lastweek", datetime(2026, 3, 8, tzinfo=UTC), datetime(2026, 3, 15, tzinfo=UTC)),
        ("month", datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
        ("lastmonth", datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
        # days: the whole of today and the X-1 days before, midnight to midnight (OpenCost)
        ("7d", datetime(2026, 3, 12, tzinfo=UTC), datetime(2026, 3, 19, tzinfo=UTC)),
        ("12h", datetime(2026, 3, 18, 3, 30, tzinfo=UTC), NOW),
        ("30m", datetime(2026, 3, 18, 15, tzinfo=UTC), NOW),
        (
            "2026-03-01T00:00:00Z,2026-03-02T12:00:00+02:00",
            datetime(2026, 3, 1, tzinfo=UTC),
            datetime(2026, 3, 2, 10, tzinfo=UTC),
        ),
        (
            "1772323200,1772409600",
            datetime(2026, 3, 1, tzinfo=UTC),
            datetime(2026, 3, 2, tzinfo=UTC),
        ),
    ],
)
def test_windows_mean_what_they_mean_in_opencost(window, start, end):
    assert parse_window(window, NOW) == Period(start, end)


@pytest.mark.parametrize("window", ["", "fortnight", "7w", "2026-03-01", "2026-03-02,2026-03-01"])
def test_a_bad_window_is_refused(window):
    with pytest.raises(ParameterError):
        parse_window(window, NOW)


def test_steps_cut_the_window_and_months_follow_the_calendar():
    window = Period(datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC))
    assert [p.start.day for p in steps(window, parse_step("month"))] == [15, 1, 1]
    assert len(steps(window, parse_step("week"))) == 8
    assert len(steps(window, parse_step("1d"))) == 54
    assert steps(window, None) == [window]


def test_one_set_per_window_in_opencosts_shape(usage, finance_user):
    response = get(finance_user, window=FOUR_HOURS, aggregate="team")

    assert response.status_code == 200
    body = response.json()
    assert body["code"] == 200
    assert len(body["data"]) == 1
    team_a = body["data"][0]["team-a"]
    assert team_a["name"] == "team-a"
    assert team_a["properties"] == {"team": "team-a"}
    assert team_a["window"] == {
        "start": "2026-03-02T09:00:00+00:00",
        "end": "2026-03-02T13:00:00+00:00",
    }
    assert (team_a["start"], team_a["end"]) == (team_a["window"]["start"], team_a["window"]["end"])
    assert team_a["minutes"] == 240
    assert (team_a["gpuHours"], team_a["gpuCost"], team_a["totalCost"]) == (7, 14, 14)
    assert team_a["gpuCount"] == 1.75
    assert body["data"][0]["team-b"]["gpuHours"] == 16  # 4 GPUs x 4 h of the window


def test_the_numbers_are_the_chargebacks(usage, finance_user):
    allocation = get(finance_user, window="2026-03-01T00:00:00Z,2026-04-01T00:00:00Z")
    client = APIClient()
    client.force_authenticate(finance_user)
    chargeback = client.get(
        "/api/v1/chargeback/", {"start": "2026-03-01", "end": "2026-04-01"}
    ).json()

    assert costs(allocation.json()) == {
        row["team"]: float(row["cost"]) for row in chargeback["rows"]
    }


def test_aggregate_takes_comma_lists_and_names_allocations_by_their_values(usage, finance_user):
    body = get(finance_user, window=FOUR_HOURS, aggregate="team,user").json()

    assert costs(body) == {
        "team-a/rae-researcher-a": 8,
        "team-a/tad-team-admin-a": 6,
        "team-b/rob-researcher-b": 32,
    }
    assert body["data"][0]["team-a/rae-researcher-a"]["properties"] == {
        "team": "team-a",
        "user": "rae-researcher-a",
    }


def test_aggregate_by_job_queue_flavor_class_and_cluster(usage, finance_user):
    body = get(finance_user, window=FOUR_HOURS, aggregate="job").json()
    assert body["data"][0][str(usage.pk)]["totalCost"] == 8

    body = get(finance_user, window=FOUR_HOURS, aggregate="queue,flavor,service_class,cluster")
    assert set(body.json()["data"][0]) == {
        "team-a/main/h100/standard/sim",
        "team-b/main/h100/standard/sim",
    }


def test_step_gives_one_set_per_step_and_accumulate_sums_them(usage, finance_user):
    hourly = get(finance_user, window=FOUR_HOURS, aggregate="team", step="hour").json()

    assert [costs(hourly, i) for i in range(4)] == [
        {"team-a": 4, "team-b": 8},
        {"team-a": 6, "team-b": 8},
        {"team-a": 2, "team-b": 8},
        {"team-a": 2, "team-b": 8},
    ]
    assert hourly["data"][1]["team-a"]["window"]["start"] == "2026-03-02T10:00:00+00:00"

    summed = get(finance_user, window=FOUR_HOURS, step="1h", accumulate="true").json()
    assert len(summed["data"]) == 1
    assert costs(summed) == costs(get(finance_user, window=FOUR_HOURS).json())


@pytest.fixture
def node(cluster):
    return Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8})


def test_include_idle_adds_an_idle_allocation_per_set(usage, node, finance_user):
    body = get(finance_user, window=FOUR_HOURS, includeIdle="true").json()

    # 8 GPUs x 4 h = 32 GPU-h; used 6 + 7 + 5 + 5 = 23; idle 9 GPU-h at 2.00
    idle = body["data"][0]["__idle__"]
    assert (idle["gpuHours"], idle["totalCost"]) == (9, 18)
    assert costs(body)["team-a"] == 14


def test_share_idle_spreads_the_idle_cost_by_cost_exactly(usage, node, finance_user):
    body = get(finance_user, window=FOUR_HOURS, shareIdle="true").json()

    shared = {name: Decimal(str(item["sharedCost"])) for name, item in body["data"][0].items()}
    assert "__idle__" not in shared
    assert sum(shared.values()) == Decimal("18.00")
    assert shared["team-a"] in (Decimal("5.47"), Decimal("5.48"))  # 18 x 14 / 46
    assert body["data"][0]["team-a"]["totalCost"] == float(14 + shared["team-a"])


def test_a_team_admin_gets_their_teams_share_but_not_the_platforms_idle(
    usage, node, finance_user, team_admin_a
):
    everyone = get(finance_user, window=FOUR_HOURS, shareIdle="true").json()["data"][0]
    mine = get(team_admin_a, window=FOUR_HOURS, shareIdle="true").json()["data"][0]

    assert set(mine) == {"team-a"}
    assert mine["team-a"]["sharedCost"] == everyone["team-a"]["sharedCost"]
    assert get(team_admin_a, window=FOUR_HOURS, includeIdle="true").status_code == 403


def test_a_researcher_sees_only_their_own_usage(usage, researcher_a):
    body = get(researcher_a, window=FOUR_HOURS, aggregate="team").json()

    assert costs(body) == {"team-a": 8}


def test_csv_has_the_window_columns_and_numbers(usage, finance_user):
    response = get(finance_user, window=FOUR_HOURS, aggregate="team", step="2h", format="csv")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0] == [
        "window_start", "window_end", "name", "team", "gpu_hours", "gpu_equivalent_hours",
        "gpu_cost", "shared_cost", "total_cost", "currency",
    ]  # fmt: skip
    assert table[1][:3] == ["2026-03-02T09:00:00+00:00", "2026-03-02T11:00:00+00:00", "team-a"]
    assert [row[8] for row in table[1:]] == ["10.00", "16.00", "4.00", "16.00"]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"window": "7d", "namespace": "x"}, ["namespace"]),
        (
            {"window": "7d", "filterNamespaces": "a", "resolution": "1m"},
            ["filterNamespaces", "resolution"],
        ),
        ({}, ["window"]),
        ({"window": "7d", "aggregate": "namespace"}, ["aggregate"]),
        ({"window": "7d", "step": "fortnight"}, ["step"]),
        ({"window": "7d", "accumulate": "maybe"}, ["accumulate"]),
        ({"window": "7d", "idleByNode": "true"}, ["idleByNode"]),
        ({"window": "7d", "format": "xml"}, ["format"]),
        ({"window": "2020-01-01T00:00:00Z,2026-01-01T00:00:00Z", "step": "1h"}, ["step"]),
    ],
)
def test_unknown_or_bad_parameters_are_a_400_naming_them(finance_user, params, named):
    response = get(finance_user, **params)

    assert response.status_code == 400
    assert sorted(response.json()) == named


def test_idle_on_a_past_period_comes_from_the_recorded_capacity_not_todays_nodes(
    usage, node, cluster, flavor_h100, finance_user
):
    """The cluster had 16 GPUs from 09:00 to 11:00 (samples), 8 from 11:00; today it has 8."""
    for hour, gpus in ((8, 16), (9, 16), (10, 16), (11, 8), (12, 8)):
        CapacitySample.objects.create(
            bucket_start=at(0).replace(hour=hour), bucket_seconds=ONE_HOUR, cluster=cluster,
            flavor=flavor_h100, capacity_gpu_equivalent=gpus, failed_gpu_equivalent=0,
        )  # fmt: skip

    body = get(finance_user, window=FOUR_HOURS, includeIdle="true", step="2h").json()

    # 09-11: 16 - 6 and 16 - 7 idle = 19 GPU-h; 11-13: 8 - 5 twice = 6 GPU-h; at 2.00
    idle = [one["__idle__"] for one in body["data"]]
    assert [(i["gpuHours"], i["totalCost"]) for i in idle] == [(19, 38), (6, 12)]
    shared = get(finance_user, window=FOUR_HOURS, shareIdle="true").json()["data"][0]
    assert sum(Decimal(str(item["sharedCost"])) for item in shared.values()) == Decimal("50.00")


def test_gpus_other_workloads_held_are_not_the_platforms_idle_capacity(
    usage, node, cluster, flavor_h100, finance_user
):
    """16 GPUs sampled each hour, 4 of them held by pods the platform did not create; today n1
    shares 2 of its 8 GPUs."""
    for hour in range(8, 13):
        CapacitySample.objects.create(
            bucket_start=at(0).replace(hour=hour), bucket_seconds=ONE_HOUR, cluster=cluster,
            flavor=flavor_h100, capacity_gpu_equivalent=16, failed_gpu_equivalent=0,
            other_gpu_equivalent=4,
        )  # fmt: skip
    body = get(finance_user, window=FOUR_HOURS, includeIdle="true").json()
    # (16 - 4) x 4 h = 48 GPU-h, used 23: 25 idle
    assert body["data"][0]["__idle__"]["gpuHours"] == 25

    CapacitySample.objects.all().delete()  # no history: today's nodes
    Node.objects.filter(pk=node.pk).update(other_usage={"h100": 2})
    body = get(finance_user, window=FOUR_HOURS, includeIdle="true").json()
    # 6 GPUs the platform's: 09-11 none idle (6, then 7 in use), 11-13 one of 6 (5 in use)
    assert body["data"][0]["__idle__"]["gpuHours"] == 2


def test_an_hour_without_a_sample_of_a_flavor_sampled_elsewhere_had_no_capacity(
    usage, node, cluster, flavor_h100, finance_user
):
    """Samples at 09:00 (8 GPUs) and 11:00 (8 GPUs); at 10:00 only another cluster's."""
    other = Cluster.objects.create(name="other", driver=Cluster.Driver.SIMULATED)
    for hour, where in ((9, cluster), (10, other), (11, cluster), (12, cluster)):
        CapacitySample.objects.create(
            bucket_start=at(0).replace(hour=hour), bucket_seconds=ONE_HOUR, cluster=where,
            flavor=flavor_h100, capacity_gpu_equivalent=8, failed_gpu_equivalent=0,
        )  # fmt: skip

    body = get(finance_user, window=FOUR_HOURS, includeIdle="true", aggregate="cluster").json()

    # sim: 09-10 8 - 6 = 2; 10-11 none; 11-13 3 + 3: 8 GPU-h; other: 8 GPU-h from 10:00 to 11:00
    assert body["data"][0]["__idle__"]["gpuHours"] == 16


def test_share_idle_on_last_month_uses_that_months_capacity_not_todays(
    usage, node, cluster, flavor_h100, finance_user, monkeypatch
):
    """OpenCost's `window=lastmonth&shareIdle=true` asked in April: March's samples say 10 GPUs
    all month and 16 from 09:00 to 13:00 on 2026-03-02; today the cluster has 8."""
    march = datetime(2026, 3, 1, tzinfo=UTC)
    CapacitySample.objects.bulk_create(
        CapacitySample(
            bucket_start=march + hour * (at(1) - at(0)), bucket_seconds=ONE_HOUR,
            cluster=cluster, flavor=flavor_h100, failed_gpu_equivalent=0,
            capacity_gpu_equivalent=16 if 24 + 9 <= hour < 24 + 13 else 10,
        )
        for hour in range(31 * 24)
    )  # fmt: skip
    monkeypatch.setattr(
        "accounting.api.finance.timezone.now", lambda: datetime(2026, 4, 15, 8, tzinfo=UTC)
    )

    body = get(finance_user, window="lastmonth", shareIdle="true").json()

    team_a, team_b = body["data"][0]["team-a"], body["data"][0]["team-b"]
    assert team_a["window"]["start"] == "2026-03-01T00:00:00+00:00"
    # capacity 10 x 740 + 16 x 4 = 7464 GPU-h, used 6 + 7 + 5 + 5 + 4 x 0.5 = 25: 7439 idle
    # at 2.00 = 14878.00, shared by cost 14 : 36 (today's 8 GPUs would give 5927 idle)
    assert (team_a["gpuCost"], team_a["sharedCost"]) == (14, 4165.84)
    assert (team_b["gpuCost"], team_b["sharedCost"]) == (36, 10712.16)
    assert team_b["totalCost"] == 10748.16
    with_idle = get(finance_user, window="lastmonth", includeIdle="true").json()["data"][0]
    assert (with_idle["__idle__"]["gpuHours"], with_idle["__idle__"]["totalCost"]) == (7439, 14878)
