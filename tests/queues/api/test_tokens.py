"""API tokens: created by their owner (API and page), secret shown once and stored hashed,
revoked or expired tokens refused with 401, use recorded (throttled) and logged."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.models import ApiToken

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def signed_in(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_creating_a_token_shows_the_secret_once_and_stores_only_its_hash(
    researcher_a: User,
) -> None:
    client = signed_in(researcher_a)
    response = client.post("/api/v1/tokens/", {"name": "laptop"}, format="json")
    assert response.status_code == 201
    secret = response.json()["token"]
    assert secret.startswith("gpp_")
    token = ApiToken.objects.get(user=researcher_a)
    assert secret.split("_", 2)[1] == token.prefix
    assert token.secret_hash == hashlib.sha256(secret.split("_", 2)[2].encode()).hexdigest()
    assert secret not in repr(token.__dict__)
    listed = client.get("/api/v1/tokens/").json()["results"]
    assert listed[0]["name"] == "laptop" and "token" not in listed[0]
    assert client.get(f"/api/v1/tokens/{token.pk}/").json().get("token") is None


def test_a_token_authenticates_its_user(researcher_a: User) -> None:
    _, secret = ApiToken.issue(user=researcher_a, name="ci")
    response = bearer(secret).get("/api/v1/teams/")
    assert response.status_code == 200
    assert [team["name"] for team in response.json()["results"]] == ["team-a"]


def test_revoked_token_gets_401(researcher_a: User) -> None:
    token, secret = ApiToken.issue(user=researcher_a, name="ci")
    client = bearer(secret)
    assert client.delete(f"/api/v1/tokens/{token.pk}/").status_code == 204
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_expired_token_gets_401(researcher_a: User) -> None:
    token, secret = ApiToken.issue(user=researcher_a, name="ci")
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = bearer(secret).get("/api/v1/teams/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


@pytest.mark.parametrize(
    "header",
    ["Bearer gpp_000000000000_wrong", "Bearer nonsense", "Bearer", "Bearer a b", "Token gpp_x_y"],
)
def test_unknown_or_malformed_tokens_get_401(researcher_a: User, header: str) -> None:
    ApiToken.issue(user=researcher_a, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get("/api/v1/teams/").status_code == 401


def test_a_right_prefix_with_a_wrong_secret_gets_401(researcher_a: User) -> None:
    token, _ = ApiToken.issue(user=researcher_a, name="ci")
    assert bearer(f"gpp_{token.prefix}_not-the-secret").get("/api/v1/teams/").status_code == 401


def test_token_of_an_inactive_user_gets_401(researcher_a: User) -> None:
    _, secret = ApiToken.issue(user=researcher_a, name="ci")
    researcher_a.is_active = False
    researcher_a.save()
    assert bearer(secret).get("/api/v1/teams/").status_code == 401


def test_use_is_recorded_at_most_once_a_minute_and_logged(
    researcher_a: User, caplog: pytest.LogCaptureFixture
) -> None:
    token, secret = ApiToken.issue(user=researcher_a, name="ci")
    client = bearer(secret)
    with caplog.at_level(logging.INFO, logger="tokens.authentication"):
        client.get("/api/v1/teams/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    assert f"API token {token.prefix}" in caplog.text
    client.get("/api/v1/teams/")
    token.refresh_from_db()
    assert token.last_used_at == first  # within the minute: no write
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    client.get("/api/v1/teams/")
    token.refresh_from_db()
    assert token.last_used_at is not None and token.last_used_at > first - timedelta(minutes=2)


def test_users_see_and_revoke_only_their_own_tokens(researcher_a: User, researcher_b: User) -> None:
    theirs, _ = ApiToken.issue(user=researcher_b, name="theirs")
    client = signed_in(researcher_a)
    assert client.get("/api/v1/tokens/").json()["count"] == 0
    assert client.delete(f"/api/v1/tokens/{theirs.pk}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x\x00y"}, "name"),
        ({"name": "ci", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "ci", "expires_at": "tomorrow"}, "expires_at"),
    ],
)
def test_bad_token_requests_are_400_naming_the_field(
    researcher_a: User, body: dict[str, Any], field: str
) -> None:
    response = signed_in(researcher_a).post("/api/v1/tokens/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_anonymous_cannot_create_tokens() -> None:
    assert APIClient().post("/api/v1/tokens/", {"name": "x"}, format="json").status_code == 401


# --- the "API tokens" page ---------------------------------------------------------------------


def test_tokens_page_creates_a_token_and_shows_the_secret_once(researcher_a: User) -> None:
    client = Client()
    client.force_login(researcher_a)
    response = client.post("/account/tokens/", {"name": "notebook", "expires_in_days": "30"})
    assert response.status_code == 200
    secret = response.context["new_secret"]
    assert secret in response.content.decode()
    token = ApiToken.objects.get(user=researcher_a)
    assert token.expires_at is not None
    assert token.expires_at > timezone.now() + timedelta(days=29)
    again = client.get("/account/tokens/").content.decode()
    assert "notebook" in again and secret not in again
    assert bearer(secret).get("/api/v1/teams/").status_code == 200


def test_tokens_page_revokes_a_token(researcher_a: User) -> None:
    token, secret = ApiToken.issue(user=researcher_a, name="old")
    client = Client()
    client.force_login(researcher_a)
    response = client.post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert "revoked" in response.content.decode()
    assert bearer(secret).get("/api/v1/teams/").status_code == 401


def test_tokens_page_cannot_revoke_someone_elses_token(
    researcher_a: User, researcher_b: User
) -> None:
    theirs, _ = ApiToken.issue(user=researcher_b, name="theirs")
    client = Client()
    client.force_login(researcher_a)
    assert client.post(f"/account/tokens/{theirs.pk}/revoke/").status_code == 404


def test_tokens_page_needs_sign_in() -> None:
    response = Client().get("/account/tokens/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_user_menu_links_to_the_tokens_page(researcher_a: User) -> None:
    client = Client()
    client.force_login(researcher_a)
    assert 'href="/account/tokens/"' in client.get("/").content.decode()
