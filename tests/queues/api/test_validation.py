"""Bad input is a 400 naming the field, never a crash (also on PostgreSQL, where NUL characters
and integer overflow used to turn into server errors). The submission rules themselves, the same
through the API and the form, are tests/queues/models/test_job_rules.py's table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from queues.models import Job, Queue, Quota

Api = Callable[[User | None], APIClient]
Body = Callable[..., dict[str, Any]]

pytestmark = pytest.mark.django_db

HUGE = 2**63


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"flavors": []}, "flavors"),
        ({"flavors": "h100"}, "flavors"),
        ({"workers": 1.5}, "workers"),
        ({"workers": HUGE}, "workers"),
        ({"gpus_per_worker": HUGE}, "gpus_per_worker"),
        ({"estimated_runtime": HUGE}, "estimated_runtime"),
        ({"duration_hint": HUGE}, "duration_hint"),
        ({"queue": HUGE}, "queue"),
        ({"queue": 999999}, "queue"),
        ({"queue": "main"}, "queue"),
        ({"service_class": "platinum"}, "service_class"),
        ({"name": "tr\x00in"}, "name"),
        ({"name": "trän"}, "name"),
        ({"image": "py\x00torch"}, "image"),
        ({"image": ""}, "image"),
        ({"command": ["python", "a\x00b"]}, "command"),
        ({"command": "python train.py"}, "command"),
        ({"command": [1, 2]}, "command"),
        ({"name": ...}, "name"),
        ({"queue": ...}, "queue"),
    ],
)
def test_bad_submission_is_400_naming_the_field(
    api: Api, researcher_a: User, job_body: Body, changes: dict[str, Any], field: str
) -> None:
    response = api(researcher_a).post("/api/v1/jobs/", job_body(**changes), format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Job.objects.exists()


def test_non_ascii_text_is_accepted_where_text_is_free(
    api: Api, researcher_a: User, job_body: Body
) -> None:
    body = job_body(command=["python", "-c", "print('größe 🚀')"])
    response = api(researcher_a).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201
    assert Job.objects.get().command[-1] == "print('größe 🚀')"


@pytest.mark.parametrize(
    "payload",
    [
        '{"name": ',
        "not json",
        '{"workers": NaN}',
        "[1, 2]",
        '"just a string"',
        '{"queue": 1e999}',  # overflows to an infinite float
        '{"workers": -1e999}',
    ],
)
@pytest.mark.parametrize("path", ["/api/v1/jobs/", "/api/v1/jobs/estimate/"])
def test_malformed_json_is_400(
    api: Api, researcher_a: User, job_body: Body, payload: str, path: str
) -> None:
    response = api(researcher_a).post(path, payload, content_type="application/json")
    assert response.status_code == 400, response.content


@pytest.mark.parametrize(
    ("quota", "field"),
    [
        ({"flavor": "h100", "nominal": -1}, "nominal"),
        ({"flavor": "h100", "nominal": HUGE}, "nominal"),
        ({"flavor": "h100", "nominal": 4, "lending_limit": 5}, "lending_limit"),
        ({"flavor": "h100", "nominal": 4, "borrowing_limit": -2}, "borrowing_limit"),
        ({"flavor": "h100", "nominal": 4, "borrowing_limit": HUGE}, "borrowing_limit"),
        ({"flavor": "nope", "nominal": 4}, "flavor"),
        ({"flavor": "h100", "nominal": "four"}, "nominal"),
    ],
)
def test_bad_quota_is_400_naming_the_field(
    api: Api, platform_admin: User, queue_a: Queue, quota: dict[str, Any], field: str
) -> None:
    response = api(platform_admin).patch(
        f"/api/v1/queues/{queue_a.pk}/", {"quotas": [quota]}, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in response.json()["quotas"]["0"]  # errors by list index
    assert Quota.objects.get(queue=queue_a).nominal == 8  # unchanged


@pytest.mark.parametrize(
    ("resource", "body", "field"),
    [
        ("teams", {"name": "team\x00c"}, "name"),
        ("teams", {"name": "team-c", "description": "a\x00b"}, "description"),
        ("teams", {"name": "Team C"}, "name"),
        ("teams", {"name": "team-a"}, "name"),  # exists
        ("queues", {"team": "team-a", "name": "main"}, "non_field_errors"),  # exists
        ("queues", {"team": "team-a", "name": "q", "weight": 0}, "weight"),
        ("queues", {"team": "team-a", "name": "q", "weight": 1e308}, "weight"),
        ("queues", {"team": "nobody", "name": "q"}, "team"),
        ("queues", {"team": "team-a", "name": "q", "quotas": [
            {"flavor": "h100", "nominal": 1}, {"flavor": "h100", "nominal": 2}]}, "quotas"),
        ("flavors", {"name": "a100", "resource": "gpu"}, "resource"),
        ("flavors", {"name": "a100", "resource": "nvidia.com/gpu", "gpu_equivalent": 2}, "gpu_equivalent"),  # noqa: E501
        ("flavors", {"name": "a100", "resource": "nvidia.com/gpu", "gpu_equivalent": 0}, "gpu_equivalent"),  # noqa: E501
        ("flavors", {"name": "a100", "resource": "nvidia.com/gpu", "node_selector": {"a": 1}}, "node_selector"),  # noqa: E501
        ("flavors", {"name": "a100", "resource": "nvidia.com/gpu", "node_selector": {"a": "\x00"}}, "node_selector"),  # noqa: E501
        ("flavors", {"name": "m", "resource": "nvidia.com/mig-1g.10gb", "mig_profile": "2g.20gb"}, "mig_profile"),  # noqa: E501
        ("service-classes", {"name": "x", "priority": HUGE}, "priority"),
        ("service-classes", {"name": "x", "min_runtime": -1}, "min_runtime"),
        ("service-classes", {"name": "x", "max_runtime": 0}, "max_runtime"),
        ("service-classes", {"name": "x", "preemption_protection": -1}, "preemption_protection"),
        ("service-classes", {"name": "x", "min_runtime": 100, "max_runtime": 50}, "max_runtime"),
        ("service-classes", {"name": "x", "price_multiplier": "-1"}, "price_multiplier"),
        ("service-classes", {"name": "x", "price_multiplier": "1e30"}, "price_multiplier"),
        ("clusters", {"name": "c", "driver": "slurm"}, "driver"),
        ("clusters", {"name": "c", "api_url": "not a url"}, "api_url"),
        ("clusters", {"name": "c", "token": "t\x00"}, "token"),
        ("cohorts", {"name": ""}, "name"),
        ("memberships", {"user": "nobody", "team": "team-a"}, "user"),
        ("memberships", {"user": "rae-researcher-a", "team": "team-a", "role": "boss"}, "role"),
        ("memberships", {"user": "rae-researcher-a", "team": "team-a"}, "non_field_errors"),
        # a number is a wrong type for a name, not a name
        ("teams", {"name": 7}, "name"),
        ("teams", {"name": "team-c", "description": 1.5}, "description"),
        ("cohorts", {"name": 0}, "name"),
        ("queues", {"team": "team-a", "name": 3}, "name"),
        ("flavors", {"name": 100, "resource": "nvidia.com/gpu"}, "name"),
        ("service-classes", {"name": 12, "priority": 5}, "name"),
        ("clusters", {"name": 9, "driver": "simulated"}, "name"),
        ("tokens", {"name": -1}, "name"),
    ],
)  # fmt: skip
def test_bad_catalog_input_is_400_naming_the_field(
    api: Api, platform_admin: User, researcher_a: User, queue_a: Queue,
    resource: str, body: dict[str, Any], field: str,
) -> None:  # fmt: skip
    client = api(platform_admin)
    if resource == "tokens":  # a token cannot create tokens (403): signed in instead
        client = APIClient()
        client.force_login(platform_admin)
    response = client.post(f"/api/v1/{resource}/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()


@pytest.mark.parametrize(
    "query",
    [
        {"queue": str(HUGE)},
        {"queue": "abc"},
        {"submitted_after": "yesterday"},
        {"submitted_after": "0001-01-01T00:00:00+01:00"},  # before year 1 in UTC
        {"submitted_before": "9999-12-31T23:00:00-05:00"},  # after year 9999 in UTC
        {"owner": "a\x00b"},
        {"page": "0"},
        {"page_size": str(HUGE)},
        {"ordering": "password"},
        {"team": "ä" * 100},
    ],
)
def test_odd_query_parameters_never_crash(
    api: Api, platform_admin: User, queue_a: Queue, query: dict[str, str]
) -> None:
    response = api(platform_admin).get("/api/v1/jobs/", query)
    assert response.status_code in (200, 400, 404), response.content


@pytest.mark.parametrize(
    "path", [f"/api/v1/jobs/{HUGE}/", "/api/v1/queues/%00/", "/api/v1/teams/x/"]
)
def test_odd_ids_are_404(api: Api, platform_admin: User, path: str) -> None:
    assert api(platform_admin).get(path).status_code == 404
