"""API tokens (issue 26): a new token expires after API_TOKEN_LIFETIME_DAYS unless its owner
chooses (at most API_TOKEN_MAX_LIFETIME_DAYS ahead); "never" is for platform admins only; and a
token cannot create tokens (one minted by a token would outlive its parent's revocation)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.models import ApiToken

pytestmark = pytest.mark.django_db


def session(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def days_left(token_id: int) -> float:
    expires_at = ApiToken.objects.get(pk=token_id).expires_at
    assert expires_at is not None
    return (expires_at - timezone.now()).total_seconds() / 86400


def test_a_token_created_without_an_expiry_lives_the_default_lifetime(
    researcher_a: User, settings: Any
) -> None:
    response = session(researcher_a).post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    assert 89.9 < days_left(response.json()["id"]) <= 90
    settings.API_TOKEN_LIFETIME_DAYS = 7
    again = session(researcher_a).post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert 6.9 < days_left(again.json()["id"]) <= 7


def test_only_platform_admins_create_tokens_that_never_expire(
    researcher_a: User, platform_admin: User
) -> None:
    never = {"name": "ci", "expires_at": None}
    refused = session(researcher_a).post("/api/v1/tokens/", never, format="json")
    assert refused.status_code == 400
    assert "Only platform admins" in refused.json()["expires_at"][0]
    assert not ApiToken.objects.filter(user=researcher_a).exists()
    granted = session(platform_admin).post("/api/v1/tokens/", never, format="json")
    assert granted.status_code == 201 and granted.json()["expires_at"] is None


def test_a_researcher_chooses_an_expiry_within_the_longest_lifetime(
    researcher_a: User, platform_admin: User
) -> None:
    far = (timezone.now() + timedelta(days=400)).isoformat()
    near = (timezone.now() + timedelta(days=300)).isoformat()
    client = session(researcher_a)
    too_far = client.post("/api/v1/tokens/", {"name": "ci", "expires_at": far}, format="json")
    assert too_far.status_code == 400 and "at most 365 days" in too_far.json()["expires_at"][0]
    ok = client.post("/api/v1/tokens/", {"name": "ci", "expires_at": near}, format="json")
    assert ok.status_code == 201
    admin = session(platform_admin).post(
        "/api/v1/tokens/", {"name": "ci", "expires_at": far}, format="json"
    )
    assert admin.status_code == 201


def test_a_token_cannot_create_tokens(researcher_a: User) -> None:
    parent, secret = ApiToken.issue(user=researcher_a, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    response = client.post("/api/v1/tokens/", {"name": "child"}, format="json")
    assert response.status_code == 403
    assert "A token cannot create tokens" in response.json()["detail"]
    assert list(ApiToken.objects.filter(user=researcher_a)) == [parent]
    assert client.get("/api/v1/tokens/").status_code == 200  # listing and revoking stay
    assert client.delete(f"/api/v1/tokens/{parent.pk}/").status_code == 204


def test_the_tokens_page_applies_the_default_and_offers_never_to_platform_admins_only(
    researcher_a: User, platform_admin: User
) -> None:
    client = Client()
    client.force_login(researcher_a)
    page = client.get("/account/tokens/").content.decode()
    assert 'name="never_expires"' not in page and "Empty: 90 days" in page
    client.post("/account/tokens/", {"name": "notebook", "never_expires": "on"})
    token = ApiToken.objects.get(user=researcher_a)
    assert 89.9 < days_left(token.pk) <= 90
    too_long = client.post("/account/tokens/", {"name": "x", "expires_in_days": "1000"})
    assert too_long.status_code == 400 and "at most 365 days" in too_long.content.decode()
    admin = Client()
    admin.force_login(platform_admin)
    assert 'name="never_expires"' in admin.get("/account/tokens/").content.decode()
    admin.post("/account/tokens/", {"name": "ops", "never_expires": "on"})
    assert ApiToken.objects.get(user=platform_admin).expires_at is None
