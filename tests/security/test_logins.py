"""Failed sign-ins and bad tokens are throttled through Django's cache (issue 26): 10 failures
in 15 minutes lock the username and the address out (the page says so, the API answers 429),
with the same answer whether or not the user exists."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tokens.models import ApiToken

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed sign-in attempts"


def sign_in(username: str, password: str, address: str = "10.0.0.1", **headers: Any) -> Any:
    client = Client(REMOTE_ADDR=address, **headers)
    response = client.post("/login/", {"username": username, "password": password})
    response.signed_in = "_auth_user_id" in client.session
    return response


def fail(times: int, username: str, address: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = sign_in(username, "wrong-password", address)
        assert response.status_code == 200 and not response.signed_in


def test_ten_failures_lock_the_account_out_even_with_the_right_password(
    researcher_a: User, persona_password: str
) -> None:
    fail(10, researcher_a.username, address="10.0.0.1")
    # from another address: the username's count locks it too
    locked = sign_in(researcher_a.username, persona_password, address="10.0.0.2")
    assert not locked.signed_in
    assert LOCKED in locked.content.decode()


def test_the_answer_is_the_same_for_a_user_that_does_not_exist(researcher_a: User) -> None:
    fail(10, researcher_a.username, address="10.0.0.1")
    fail(10, "nobody-at-all", address="10.0.0.2")
    real = sign_in(researcher_a.username, "wrong-password", address="10.0.0.3")
    ghost = sign_in("nobody-at-all", "wrong-password", address="10.0.0.4")
    assert real.context["form"].errors == ghost.context["form"].errors
    assert LOCKED in ghost.content.decode()


def test_ten_failures_from_one_address_lock_that_address_out(
    researcher_a: User, team_admin_a: User, persona_password: str
) -> None:
    for i in range(10):
        fail(1, f"guess-{i}", address="10.0.0.9")
    assert not sign_in(researcher_a.username, persona_password, address="10.0.0.9").signed_in
    assert sign_in(team_admin_a.username, persona_password, address="10.0.0.10").signed_in


def test_a_forged_forwarded_for_header_does_not_escape_the_address_lockout(
    researcher_a: User, persona_password: str
) -> None:
    for i in range(10):
        forged = Client(REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
        forged.post("/login/", {"username": f"guess-{i}", "password": "x"})
    again = sign_in(
        researcher_a.username, persona_password, "10.0.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4"
    )
    assert not again.signed_in


def test_a_successful_sign_in_forgives_the_usernames_failures(
    researcher_a: User, persona_password: str
) -> None:
    fail(9, researcher_a.username, address="10.0.0.1")
    assert sign_in(researcher_a.username, persona_password, address="10.0.0.2").signed_in
    fail(9, researcher_a.username, address="10.0.0.3")
    assert sign_in(researcher_a.username, persona_password, address="10.0.0.4").signed_in


def test_the_lockout_ends_with_its_window(
    researcher_a: User, persona_password: str, settings: Any
) -> None:
    settings.LOGIN_FAILURE_WINDOW = 1
    fail(10, researcher_a.username)
    assert not sign_in(researcher_a.username, persona_password).signed_in
    time.sleep(1.1)
    assert sign_in(researcher_a.username, persona_password).signed_in


def bearer(secret: str, address: str = "10.0.0.1") -> APIClient:
    client = APIClient(REMOTE_ADDR=address)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_bad_bearer_tokens_from_one_address_get_429(researcher_a: User) -> None:
    _, good = ApiToken.issue(user=researcher_a, name="ci")
    codes = [bearer("gpp_000000000000_guess").get("/api/v1/teams/").status_code for _ in range(10)]
    assert codes == [401] * 10
    refused = bearer(good).get("/api/v1/teams/")
    assert refused.status_code == 429
    assert "bad token" in refused.json()["detail"] and "Retry-After" in refused.headers
    assert bearer(good, address="10.0.0.2").get("/api/v1/teams/").status_code == 200
    session = APIClient(REMOTE_ADDR="10.0.0.1")
    session.force_login(researcher_a)  # no token: the session is not a token failure
    assert session.get("/api/v1/teams/").status_code == 200


def test_bad_metrics_tokens_get_429(settings: Any) -> None:
    settings.METRICS_TOKEN = "metrics-secret"
    client = Client(REMOTE_ADDR="10.0.0.1")
    codes = [
        client.get("/metrics", HTTP_AUTHORIZATION="Bearer guess").status_code for _ in range(10)
    ]
    assert codes == [401] * 10
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-secret").status_code == 429
