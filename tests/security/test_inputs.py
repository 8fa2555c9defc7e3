"""Hostile inputs get a 400 that says what is wrong, never a 500 (issue 26): JSON nested
1,000 deep on every operation of the schema that takes a body, and a NUL character in any query
parameter (API and pages)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from gpuplatform.parsers import MAX_JSON_DEPTH
from queues.models import Cluster, Job, Queue

pytestmark = pytest.mark.django_db

DEEP = "[" * 1000 + "]" * 1000


@pytest.fixture
def world(
    queue_a: Queue, sim_cluster: Cluster, make_job: Callable[..., Job], researcher_a: User,
    platform_admin: User,
) -> None:  # fmt: skip
    make_job(queue=queue_a, owner=researcher_a)
    from accounting.models import Budget
    from tokens.models import ApiToken

    Budget.objects.create(team=queue_a.team, month=date(2026, 3, 1), amount=100)

    ApiToken.issue(user=platform_admin, name="ci")


def body_operations() -> list[tuple[str, str]]:
    schema = Client().get("/api/v1/schema/", {"format": "json"}).json()
    return [
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]


def _first_id(client: APIClient, path: str) -> int:
    collection = path.split("{id}")[0]
    listed = client.get(collection).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    return int(rows[0]["id"])


def test_json_nested_a_thousand_deep_is_a_400_on_every_operation_with_a_body(
    world: None, platform_admin: User
) -> None:
    client = APIClient(raise_request_exception=False)
    client.force_login(platform_admin)
    operations = body_operations()
    assert len(operations) >= 15
    wrong = []
    for method, path in operations:
        url = path.replace("{id}", str(_first_id(client, path))) if "{id}" in path else path
        response = client.generic(method, url, DEEP, content_type="application/json")
        detail = response.json().get("detail", "") if response.status_code == 400 else ""
        if "nested too deeply" not in detail:
            wrong.append(f"{method} {path}: {response.status_code} {response.content[:120]!r}")
    assert wrong == []


def test_nesting_just_within_the_limit_is_parsed_and_validated_as_usual(
    world: None, researcher_a: User
) -> None:
    client = APIClient()
    client.force_login(researcher_a)
    nested: Any = "x"
    for _ in range(MAX_JSON_DEPTH - 1):
        nested = [nested]
    response = client.post("/api/v1/jobs/", {"name": nested}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()  # the serializer's answer, not the parser's
    deeper = client.post("/api/v1/jobs/", {"name": [nested]}, format="json")
    assert deeper.status_code == 400 and "nested too deeply" in deeper.json()["detail"]


def query_parameters() -> list[tuple[str, str]]:
    """Every (path, query parameter) of the schema's GET operations without a path id."""
    schema = Client().get("/api/v1/schema/", {"format": "json"}).json()
    return [
        (path, parameter["name"])
        for path, operations in schema["paths"].items()
        if "{" not in path and "get" in operations
        for parameter in operations["get"].get("parameters", [])
        if parameter["in"] == "query"
    ]


def test_a_nul_in_any_api_query_parameter_is_a_400_naming_it(
    world: None, platform_admin: User, finance_user: User
) -> None:
    client = APIClient(raise_request_exception=False)
    client.force_login(platform_admin)
    parameters = query_parameters()
    assert ("/api/v1/chargeback/", "team") in parameters and len(parameters) > 30
    wrong = []
    for path, name in parameters:
        response = client.get(path, {name: "a\x00b"})
        if response.status_code != 400 or name not in response.json():
            wrong.append(f"{path}?{name}: {response.status_code} {response.content[:120]!r}")
    assert wrong == []
    finance = APIClient()
    finance.force_login(finance_user)
    response = finance.get("/api/v1/chargeback/", {"team": "team-a\x00", "format": "csv"})
    assert response.status_code == 400
    assert response.json() == {
        "team": ["The NUL character is not allowed in the query parameter 'team'."]
    }


@pytest.mark.parametrize(
    "url", ["/jobs/?state=a%00", "/dashboards/team/?team=1%00", "/chargeback/?team=%00"]
)
def test_a_nul_in_a_pages_query_parameter_is_a_400_naming_it(
    world: None, platform_admin: User, client: Client, url: str
) -> None:
    client.force_login(platform_admin)
    response = client.get(url)
    assert response.status_code == 400
    name = url.split("?")[1].split("=")[0]
    assert f"query parameter '{name}'" in response.content.decode()
