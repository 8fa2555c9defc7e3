"""Grouping by department (the queue's cohort) and by a job's label (`label:<key>`) in the
chargeback, the allocation API and the usage report page; the stepped allocation's one read
(issue 25)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounting.allocation import Period, steps
from accounting.chargeback import grouped_totals, stepped_totals
from accounting.ledger import accrue_usage
from accounting.models import UsageRecord
from queues.models import Cohort, WorkloadReference
from tests.accounting.helpers import at

FOUR_HOURS = "2026-03-02T09:00:00Z,2026-03-02T13:00:00Z"


@pytest.fixture
def usage(script, queue_a, queue_b, researcher_a, team_admin_a, researcher_b, cluster, h100_price):
    """As test_allocation_api: team-a a1 (8.00, spec label project=llm) and a2 (6.00, adopted
    from a Kubernetes Job labelled project=vision), team-b b1 (36.00 up to +4.5 h, no label).
    queue_a is in the cohort "research", queue_b in none."""
    queue_b.cohort = None
    queue_b.save()
    a1 = script(
        queue=queue_a, owner=researcher_a, gpus_per_worker=2, name="a1",
        spec={"labels": {"project": "llm", "app.kubernetes.io/name": "trainer"}},
    ).run(at(0))  # fmt: skip
    a2 = script(queue=queue_a, owner=team_admin_a, name="a2").run(at(1))
    WorkloadReference.objects.create(
        job=a2.job, cluster=cluster, kind="Job", api_version="batch/v1", namespace="team-a",
        name="a2", uid="uid-a2", labels={"project": "vision"},
    )  # fmt: skip
    script(queue=queue_b, owner=researcher_b, gpus_per_worker=4, name="b1").run(at(0))
    accrue_usage(at(0.5))
    a1.end(at(2))
    a2.end(at(4))
    accrue_usage(at(4.5))


def api(user, url, **params):
    client = APIClient()
    client.force_authenticate(user)
    return client.get(url, params)


def allocation_costs(user, index=0, **params) -> dict[str, float]:
    body = api(user, "/api/v1/allocation/", **params).json()
    return {name: item["totalCost"] for name, item in body["data"][index].items()}


def chargeback_costs(user, group_by: str) -> dict[tuple[str, ...], str]:
    body = api(
        user, "/api/v1/chargeback/", start="2026-03-02", end="2026-03-03", group_by=group_by
    ).json()
    keys = group_by.split(",")
    return {tuple(row[key] for key in keys): row["cost"] for row in body["rows"]}


def test_department_is_the_queues_cohort_and_no_cohort_is_unallocated(usage, finance_user):
    assert allocation_costs(finance_user, window=FOUR_HOURS, aggregate="department") == {
        "research": 14,
        "__unallocated__": 32,
    }
    assert chargeback_costs(finance_user, "department") == {
        ("research",): "14.00",
        ("__unallocated__",): "36.00",
    }


def test_a_queue_moved_to_another_cohort_takes_its_usage_along(usage, queue_b, finance_user):
    queue_b.cohort = Cohort.objects.create(name="vision-lab")
    queue_b.save()

    assert chargeback_costs(finance_user, "team,department") == {
        ("team-a", "research"): "14.00",
        ("team-b", "vision-lab"): "36.00",
    }


def test_label_groups_by_the_jobs_label_adopted_or_submitted(usage, finance_user):
    assert allocation_costs(finance_user, window=FOUR_HOURS, aggregate="label:project") == {
        "llm": 8,
        "vision": 6,
        "__unallocated__": 32,
    }
    assert chargeback_costs(finance_user, "team,label:app.kubernetes.io/name") == {
        ("team-a", "trainer"): "8.00",
        ("team-a", "__unallocated__"): "6.00",
        ("team-b", "__unallocated__"): "36.00",
    }


def test_label_steps_and_csv(usage, finance_user):
    response = api(
        finance_user, "/api/v1/allocation/", window=FOUR_HOURS, aggregate="label:project",
        step="2h", format="csv",
    )  # fmt: skip
    text = b"".join(response.streaming_content).decode()

    assert text.splitlines()[0].startswith("window_start,window_end,name,label:project,")
    # 09-11: a1 8.00 (llm), a2 2.00 (vision), b1 16.00; 11-13: a2 4.00, b1 16.00
    assert [[*line.split(",")[2:4], line.split(",")[8]] for line in text.splitlines()[1:]] == [
        ["__unallocated__", "__unallocated__", "16.00"],
        ["llm", "llm", "8.00"],
        ["vision", "vision", "2.00"],
        ["__unallocated__", "__unallocated__", "16.00"],
        ["vision", "vision", "4.00"],
    ]


def test_an_empty_label_value_is_unallocated(usage, finance_user):
    WorkloadReference.objects.filter(name="a2").update(labels={"project": ""})

    assert allocation_costs(finance_user, window=FOUR_HOURS, aggregate="label:project") == {
        "llm": 8,
        "__unallocated__": 38,
    }


@pytest.mark.parametrize("bad", ["label:", "label:-x", "label:a/b/c", "label:123", "cohort"])
def test_a_bad_key_is_a_400_naming_the_parameter(finance_user, bad):
    allocation = api(finance_user, "/api/v1/allocation/", window="7d", aggregate=bad)
    chargeback = api(finance_user, "/api/v1/chargeback/", group_by=f"team,{bad}")

    assert allocation.status_code == 400 and list(allocation.json()) == ["aggregate"]
    assert chargeback.status_code == 400 and list(chargeback.json()) == ["group_by"]


def test_the_report_page_shows_cost_per_department(usage, client: Client, finance_user):
    client.force_login(finance_user)

    response = client.get(
        "/chargeback/report/",
        {"start": "2026-03-02", "end": "2026-03-03", "step": "day", "by": "department"},
    )

    assert response.status_code == 200
    costs = {k: str(v) for k, v in response.context["lines"][0].costs.items()}
    assert costs == {"research": "14.00", "__unallocated__": "36.00"}
    assert "aggregate=department" in response.content.decode()


@pytest.mark.parametrize(
    ("start", "step"),
    [
        (at(0), timedelta(hours=1)),  # the steps' ends cut a1, a2 and b1 and the open row
        (at(0.25), timedelta(minutes=45)),  # a window cutting rows at its start, odd steps
        (at(-30), "month"),
    ],
)
def test_stepped_totals_are_grouped_totals_of_each_step(usage, start, step):
    window = Period(start, at(4.5))
    parts = steps(window, step)
    keys = ("team", "user", "label:project", "department")
    records = UsageRecord.objects.all()

    stepped = stepped_totals(records, parts, keys)

    assert len(stepped) == len(parts)
    for part, got in zip(parts, stepped, strict=True):
        expected = dict(grouped_totals(records, part, keys))
        assert got == expected, part


def test_the_stepped_allocation_reads_the_ledger_once_whatever_the_steps(
    usage, finance_user, django_assert_max_num_queries
):
    with django_assert_max_num_queries(20) as hourly:
        api(finance_user, "/api/v1/allocation/", window=FOUR_HOURS, step="1h")
    with django_assert_max_num_queries(20) as by_minutes:
        api(finance_user, "/api/v1/allocation/", window=FOUR_HOURS, step="10m")

    def ledger_reads(queries) -> int:
        return sum('FROM "accounting_usagerecord"' in query["sql"] for query in queries)

    # 4 and 24 sets: the same two reads (the rows inside one step, summed by step; the others)
    assert ledger_reads(hourly.captured_queries) == 2
    assert ledger_reads(by_minutes.captured_queries) == 2
