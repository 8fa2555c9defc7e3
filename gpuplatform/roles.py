"""The platform-wide roles of a user: platform admin and finance (docs/ARCHITECTURE.md "Roles").

A platform admin is in the ``platform-admin`` group or a superuser; finance is the ``finance``
group. This module imports none of the apps: the models' querysets (``visible_to``) build on it,
and ``gpuplatform.access``, which builds on the models, re-exports it. Everything outside the
models asks ``gpuplatform.access``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser

PLATFORM_ADMIN_GROUP = "platform-admin"
FINANCE_GROUP = "finance"

GROUP_CACHE_ATTR = "_gpuplatform_group_names"


def _in_group(user: Any, group: str) -> bool:
    """One query per user object (a request's user lives for one request), then remembered:
    a page asks several rules about the same user."""
    if not user.is_authenticated:
        return False
    names = getattr(user, GROUP_CACHE_ATTR, None)
    if names is None:
        names = frozenset(user.groups.values_list("name", flat=True))
        setattr(user, GROUP_CACHE_ATTR, names)
    return group in names


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
