"""``/api/v1/what-if/`` with a cohort's own quota (issue 22): ``cohort_quotas`` is replayed in
the tree, and a bad entry is a 400 naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from queues.models import Cohort, CohortQuota, Flavor, WhatIfRun
from tests.queues.api.test_whatif import worker  # noqa: F401 (a fixture)
from tests.queues.services.whatif.conftest import ran  # noqa: F401 (a fixture)
from tests.queues.services.whatif.test_cohort_quotas import tree_history  # noqa: F401

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db


def research(nominal: Any = 0, **more: Any) -> dict[str, Any]:
    return {"cohort": "research", "flavor": "h100", "nominal": nominal, **more}


def test_admin_replays_a_departments_lowered_quota(
    api: Api, platform_admin: User, tree_history: None,  # noqa: F811
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:  # fmt: skip
    client = api(platform_admin)
    body = {"days": 1, "cohort_quotas": [research(0)]}
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post("/api/v1/what-if/", body, format="json")
    assert asked.status_code == 202, asked.content
    answer = client.get(asked.json()["status_url"]).json()
    assert answer["state"] == "done", answer
    team_a = next(r for r in answer["result"]["queues"] if r["name"] == "team-a/main")
    assert team_a["today"]["mean_wait_s"] == 7200.0
    assert team_a["proposed"]["mean_wait_s"] > 10 * 3600
    assert {r["name"] for r in answer["result"]["cohorts"]} == {"org", "research", "biology"}
    assert answer["proposal"]["cohort_quotas"][0]["cohort"] == "research"
    assert CohortQuota.objects.get().nominal == 8  # nothing saved


@pytest.mark.parametrize(
    ("entries", "field"),
    [
        ([research(cohort="nowhere")], "cohort"),
        ([research(flavor="h200")], "flavor"),
        ([research(-1)], "nominal"),
        ([research("lots")], "nominal"),
        ([research(borrowing_limit=2**40)], "borrowing_limit"),
        ([research(lending_limit=-2)], "lending_limit"),
        ([{"cohort": "research", "flavor": "h100"}], "nominal"),
    ],
)
def test_bad_cohort_quotas_are_400_naming_the_field(
    api: Api, platform_admin: User, cohort: Cohort, flavor_h100: Flavor, worker: list[str],  # noqa: F811
    entries: list[dict[str, Any]], field: str,
) -> None:  # fmt: skip
    body = {"days": 1, "cohort_quotas": entries}
    response = api(platform_admin).post("/api/v1/what-if/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["cohort_quotas"]["0"], response.json()
    assert not WhatIfRun.objects.exists() and worker == []


def test_two_quotas_of_one_cohort_and_flavor_are_refused(
    api: Api, platform_admin: User, cohort: Cohort, flavor_h100: Flavor
) -> None:
    body = {"days": 1, "cohort_quotas": [research(1), research(2)]}
    response = api(platform_admin).post("/api/v1/what-if/", body, format="json")
    assert response.status_code == 400
    assert "two quotas for h100" in str(response.json()["cohort_quotas"])
