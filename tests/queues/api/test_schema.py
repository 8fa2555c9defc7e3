"""The OpenAPI schema and its docs page, and a Schemathesis run over every operation: generated
requests (valid and invalid) never cause a server error and every documented response matches
the schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from queues.models import Cluster, Queue
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db


def test_schema_is_served_and_lists_every_resource() -> None:
    response = Client().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in [
        "/api/v1/teams/", "/api/v1/memberships/", "/api/v1/cohorts/", "/api/v1/queues/",
        "/api/v1/queues/{id}/status/", "/api/v1/flavors/", "/api/v1/service-classes/",
        "/api/v1/clusters/", "/api/v1/nodes/", "/api/v1/jobs/", "/api/v1/jobs/{id}/cancel/",
        "/api/v1/jobs/{id}/events/", "/api/v1/jobs/{id}/logs/", "/api/v1/jobs/estimate/",
        "/api/v1/tokens/", "/api/v1/what-if/", "/api/v1/what-if/{id}/",
    ]:  # fmt: skip
        assert path in paths, path
    cluster = response.json()["components"]["schemas"]["Cluster"]["properties"]
    assert "token" not in cluster and "has_token" in cluster


def test_docs_page_uses_local_assets() -> None:
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert "cdn.jsdelivr.net" not in page and "unpkg.com" not in page


@pytest.fixture
def admin_token(platform_admin: User) -> str:
    # Ids of what the run creates start low; keep the admin's own token out of their reach.
    ApiToken.objects.bulk_create(
        ApiToken(user=platform_admin, name=f"filler {i}", prefix=f"fill{i:08d}", secret_hash="x")
        for i in range(3)
    )
    return ApiToken.issue(user=platform_admin, name="schemathesis")[1]


@pytest.fixture
def keep_test_connection() -> Iterator[None]:
    """The WSGI handler closes the database connection after each request, which would end the
    test's transaction; Django's own test client disconnects the same handler."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def world(
    queue_a: Queue, queue_b: Queue, sim_cluster: Cluster, make_job: Any, researcher_a: User,
    researcher_b: User, finance_user: User,
) -> None:  # fmt: skip
    make_job(queue=queue_a, owner=researcher_a)
    make_job(queue=queue_b, owner=researcher_b)


def test_api_conforms_to_its_schema_without_server_errors(
    settings: Any, world: None, admin_token: str, keep_test_connection: None
) -> None:
    """Schemathesis over the live schema and the WSGI app, as a platform admin with a token:
    valid and invalid requests for every operation (15 examples each, derandomized)."""
    from gpuplatform.wsgi import application

    settings.ALLOWED_HOSTS = ["*"]
    settings.JOB_SUBMIT_RATE = "100000/minute"
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)
    # Revoking the token the run authenticates with would turn the rest of it into 401s.
    schema = schema.exclude(method="DELETE", path_regex="^/api/v1/tokens/")
    headers = {"Authorization": f"Bearer {admin_token}"}
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        strategy = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(
            GenerationMode.NEGATIVE
        )

        @given(case=strategy)
        @hypothesis_settings(
            max_examples=15,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(
                headers=headers, checks=[not_a_server_error, response_schema_conformance]
            )

        try:
            check()
        except Exception as error:  # one operation's failure must not hide the others'
            failures.append(f"{operation.label}: {error}")
    assert operations >= 30
    assert not failures, "\n\n".join(failures)
