"""The token's read (tokens/authentication.read_token): one SQL string instead of the ORM's
query, giving the token and its user as the ORM reads them, and on PostgreSQL the user's groups
and teams with them (gpuplatform/roles.py), so the request's rules read nothing more."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gpuplatform import access
from queues.models import Membership, Team
from tokens.authentication import read_token
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db


def _fields(obj: object) -> dict[str, object]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}  # type: ignore[attr-defined]


def test_the_token_and_its_user_are_read_as_the_orm_reads_them(
    researcher_a: User, team_b: Team
) -> None:
    researcher_a.groups.add(Group.objects.create(name="finance"))
    researcher_a.is_staff, researcher_a.last_login = True, timezone.now()
    researcher_a.save()
    token, _ = ApiToken.issue(
        user=researcher_a, name="ci", expires_at=timezone.now() + timedelta(days=3)
    )
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    orm = ApiToken.objects.select_related("user").get(prefix=token.prefix)
    read = read_token(token.prefix)
    assert read is not None
    assert _fields(read) == _fields(orm)
    assert _fields(read.user) == _fields(orm.user)
    assert read.user.is_active is True and read.user.is_superuser is False  # booleans, not 1/0
    assert read.expires_at == orm.expires_at and read.expires_at.tzinfo is not None
    assert not read._state.adding and not read.user._state.adding


def test_an_unknown_prefix_reads_nothing(researcher_a: User) -> None:
    ApiToken.issue(user=researcher_a, name="ci")
    assert read_token("000000000000") is None


def test_the_rights_read_with_the_token_are_the_users_rights(
    researcher_a: User, team_b: Team
) -> None:
    Membership.objects.create(user=researcher_a, team=team_b, role=Membership.Role.TEAM_ADMIN)
    researcher_a.groups.add(Group.objects.create(name="finance"))
    token, _ = ApiToken.issue(user=researcher_a, name="ci")
    expected_teams = set(Team.objects.of_member(researcher_a).values_list("pk", flat=True))
    user = read_token(token.prefix).user  # type: ignore[union-attr]
    with CaptureQueriesContext(connection) as seen:
        teams = access.member_team_ids(user)
        finance = access.is_finance(user)
        admin = access.is_platform_admin(user)
    assert set(teams) == expected_teams and len(expected_teams) == 2
    assert finance is True and admin is False
    # PostgreSQL: read with the token; elsewhere: one query of their own, as before
    assert len(seen.captured_queries) == (0 if connection.vendor == "postgresql" else 1)
