"""The admin site (issue 26): a platform admin who is not a superuser manages users and their
groups, but cannot grant superuser status or per-user permissions, nor change or delete a
superuser (its password included); superusers can."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from gpuplatform.access import PLATFORM_ADMIN_GROUP

pytestmark = pytest.mark.django_db


def user_form(user: User, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_active": "on",
        "is_staff": "",
        "is_superuser": "",
        "groups": [g.pk for g in user.groups.all()],
        "user_permissions": [],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value != ""}


@pytest.fixture
def root(db: None) -> User:
    return User.objects.create_superuser("root", password="root-password-123")


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_platform_admin_cannot_make_itself_superuser(platform_admin: User) -> None:
    client = signed_in(platform_admin)
    page = client.get(f"/admin/auth/user/{platform_admin.pk}/change/")
    assert page.status_code == 200
    assert 'name="is_superuser"' not in page.content.decode()
    permission = Permission.objects.get(codename="change_user")
    response = client.post(
        f"/admin/auth/user/{platform_admin.pk}/change/",
        user_form(platform_admin, is_superuser="on", user_permissions=[permission.pk]),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    platform_admin.refresh_from_db()
    assert not platform_admin.is_superuser
    assert not platform_admin.user_permissions.exists()
    assert platform_admin.groups.filter(name=PLATFORM_ADMIN_GROUP).exists()


def test_platform_admin_cannot_make_another_user_superuser(
    platform_admin: User, researcher_a: User
) -> None:
    client = signed_in(platform_admin)
    response = client.post(
        f"/admin/auth/user/{researcher_a.pk}/change/", user_form(researcher_a, is_superuser="on")
    )
    assert response.status_code == 302
    researcher_a.refresh_from_db()
    assert not researcher_a.is_superuser


def test_platform_admin_still_manages_users_and_groups(
    platform_admin: User, researcher_a: User
) -> None:
    finance = Group.objects.create(name="finance")
    response = signed_in(platform_admin).post(
        f"/admin/auth/user/{researcher_a.pk}/change/",
        user_form(researcher_a, email="rae@example.org", groups=[finance.pk]),
    )
    assert response.status_code == 302
    researcher_a.refresh_from_db()
    assert researcher_a.email == "rae@example.org"
    assert list(researcher_a.groups.values_list("name", flat=True)) == ["finance"]


def test_platform_admin_cannot_change_or_delete_a_superuser(
    platform_admin: User, root: User
) -> None:
    client = signed_in(platform_admin)
    changed = client.post(
        f"/admin/auth/user/{root.pk}/change/", user_form(root, is_superuser="on", email="x@y.z")
    )
    assert changed.status_code == 403
    password = client.post(
        f"/admin/auth/user/{root.pk}/password/",
        {"password1": "taken-over-123!", "password2": "taken-over-123!"},
    )
    assert password.status_code == 403
    deleted = client.post(f"/admin/auth/user/{root.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    bulk = client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [root.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    root.refresh_from_db()
    assert root.email == "" and root.check_password("root-password-123")


def test_superuser_grants_superuser_status(root: User, researcher_a: User) -> None:
    response = signed_in(root).post(
        f"/admin/auth/user/{researcher_a.pk}/change/", user_form(researcher_a, is_superuser="on")
    )
    assert response.status_code == 302
    researcher_a.refresh_from_db()
    assert researcher_a.is_superuser
