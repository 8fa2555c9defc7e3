"""The platform-wide roles of a user: platform admin and finance (docs/ARCHITECTURE.md "Roles").

A platform admin is in the ``platform-admin`` group or a superuser; finance is the ``finance``
group. This module imports none of the apps: the models' querysets (``visible_to``) build on it,
and ``gpuplatform.access``, which builds on the models, re-exports it. Everything outside the
models asks ``gpuplatform.access``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import CharField, Value
from django.db.models.functions import Cast

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser

PLATFORM_ADMIN_GROUP = "platform-admin"
FINANCE_GROUP = "finance"

RIGHTS_CACHE_ATTR = "_gpuplatform_rights"


def _rights(user: Any) -> tuple[frozenset[str], frozenset[int]]:
    """The user's group names and the ids of the teams they are a member of: one query per user
    object (a request's user lives for one request), then remembered: a request asks several
    rules about the same user."""
    rights = getattr(user, RIGHTS_CACHE_ATTR, None)
    if rights is None:
        text = CharField()
        groups = user.groups.order_by().values_list(Value("g", output_field=text), "name")
        teams = user.memberships.order_by().values_list(
            Value("t", output_field=text), Cast("team_id", output_field=text)
        )
        rows = list(groups.union(teams, all=True))
        rights = (
            frozenset(value for kind, value in rows if kind == "g"),
            frozenset(int(value) for kind, value in rows if kind == "t"),
        )
        setattr(user, RIGHTS_CACHE_ATTR, rights)
    return rights


def _in_group(user: Any, group: str) -> bool:
    if not user.is_authenticated:
        return False
    return group in _rights(user)[0]


def member_team_ids(user: User) -> frozenset[int]:
    """Ids of the teams the user is a member of (any role); ``Team.objects.of_member`` as a
    set, read with the user's groups."""
    if not user.is_authenticated:
        return frozenset()
    return _rights(user)[1]


def is_platform_admin(user: User) -> bool:
    """Platform admins may do everything; superusers count as platform admins."""
    if not (user.is_authenticated and user.is_active):
        return False
    return bool(getattr(user, "is_superuser", False)) or _in_group(user, PLATFORM_ADMIN_GROUP)


def is_finance(user: User) -> bool:
    """Finance reads usage, charges and statements of every team, and nothing else."""
    return bool(user.is_active) and _in_group(user, FINANCE_GROUP)


def is_platform_admin_or_finance(user: User) -> bool:
    """Finance and platform admins: every team, with its usage, charges and statements, the
    prices, and the platform-wide dashboards."""
    return is_platform_admin(user) or is_finance(user)
