"""The platform-wide roles of a user: platform admin and finance (docs/ARCHITECTURE.md "Roles").

A platform admin is in the ``platform-admin`` group or a superuser; finance is the ``finance``
group. This module imports none of the apps: the models' querysets (``visible_to``) build on it,
and ``gpuplatform.access``, which builds on the models, re-exports it. Everything outside the
models asks ``gpuplatform.access``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import connection

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
        with connection.cursor() as cursor:
            cursor.execute(_rights_sql(user._meta.model), [user.pk, user.pk])
            rows = cursor.fetchall()
        rights = (
            frozenset(value for kind, value in rows if kind == "g"),
            frozenset(int(value) for kind, value in rows if kind == "t"),
        )
        setattr(user, RIGHTS_CACHE_ATTR, rights)
    return rights


def _rights_sql(user_model: type[Any]) -> str:
    """The SQL of ``_rights``: the user's groups (``user.groups``) and team ids
    (``user.memberships``) in one UNION, written from the models' tables. The ORM's
    building and compiling of the same query took 0.7 ms of CPU of a job submission's 6 to 9
    (BENCHMARKS.md, issue 27); this string takes a small fraction of that."""
    group, groups_from, team, teams_from = _rights_reads(user_model, "%s")
    return (
        f"SELECT 'g', {group} {groups_from} UNION ALL SELECT 't', CAST({team} AS text) {teams_from}"
    )


def rights_arrays_sql(user_model: type[Any], user_id: str) -> str:
    """PostgreSQL only: ``_rights``' two reads as two array columns of a query that has the
    user's id as the SQL expression ``user_id`` (the token's read: tokens/authentication.py),
    the group names, then the team ids; ``remember_rights`` keeps them on the user."""
    group, groups_from, team, teams_from = _rights_reads(user_model, user_id)
    return f"ARRAY(SELECT {group} {groups_from}), ARRAY(SELECT {team} {teams_from})"


def _rights_reads(user_model: type[Any], user_id: str) -> tuple[str, str, str, str]:
    """The two reads of the rights, written from the models' tables for the user whose id is the
    SQL expression ``user_id``: the group name's column and its ``FROM ... WHERE``, then the
    team id's column and its ``FROM ... WHERE``."""
    quote = connection.ops.quote_name
    groups = user_model._meta.get_field("groups")
    through = groups.remote_field.through._meta
    group = groups.related_model._meta
    memberships = user_model._meta.get_field("memberships")
    membership = memberships.related_model._meta
    return (
        f"g.{quote(group.get_field('name').column)}",
        f"FROM {quote(group.db_table)} g JOIN {quote(through.db_table)} ug "
        f"ON ug.{quote(groups.m2m_reverse_name())} = g.{quote(group.pk.column)} "
        f"WHERE ug.{quote(groups.m2m_column_name())} = {user_id}",
        f"m.{quote(membership.get_field('team').column)}",
        f"FROM {quote(membership.db_table)} m "
        f"WHERE m.{quote(memberships.field.column)} = {user_id}",
    )


def remember_rights(user: Any, groups: Iterable[str], team_ids: Iterable[int]) -> None:
    """Keep the user's groups and team ids read along with the user (``rights_arrays_sql``):
    the rules asked during this request read no more."""
    setattr(user, RIGHTS_CACHE_ATTR, (frozenset(groups), frozenset(int(t) for t in team_ids)))


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
