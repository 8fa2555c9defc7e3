"""Who may see and do what: the ONE place for access rules (docs/ARCHITECTURE.md "Roles").

Roles: platform admins (group ``platform-admin``, or a superuser), finance (group ``finance``),
and per team a ``Membership`` role (``member`` or ``team_admin``). Views, the API and querysets
(``Job.objects.visible_to(user)``, ``Queue.objects.visible_to(user)``,
``Team.objects.visible_to(user)``) call these helpers instead of repeating the rules.
Objects of other teams are hidden (404), not forbidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from queues.models import Job, Membership, Queue, Team

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


def team_role(user: User, team: Team) -> str | None:
    """The user's Membership role in ``team`` (``member``/``team_admin``), or None."""
    from queues.models import Membership

    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).values_list("role", flat=True).first()


def is_team_member(user: User, team: Team) -> bool:
    return team_role(user, team) is not None


def is_team_admin(user: User, team: Team) -> bool:
    from queues.models import Membership

    return team_role(user, team) == Membership.Role.TEAM_ADMIN


def member_teams(user: User) -> QuerySet[Team]:
    """Teams the user belongs to (any role)."""
    from queues.models import Team

    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).distinct()


def visible_teams(user: User) -> QuerySet[Team]:
    """Platform admins and finance see every team; everyone else sees their own teams."""
    from queues.models import Team

    if is_platform_admin(user) or is_finance(user):
        return Team.objects.all()
    return member_teams(user)


def visible_queues(user: User) -> QuerySet[Queue]:
    """Queues of the teams the user may see."""
    from queues.models import Queue

    return Queue.objects.visible_to(user)


def filter_visible_jobs(jobs: QuerySet[Job], user: User) -> QuerySet[Job]:
    """Platform admins see every job; members see their teams' jobs; others (finance included:
    it reads usage, not jobs) see none."""
    if is_platform_admin(user):
        return jobs
    if not user.is_authenticated:
        return jobs.none()
    return jobs.filter(queue__team__in=member_teams(user))


def submittable_queues(user: User) -> QuerySet[Queue]:
    """Open queues the user may submit to: their teams' queues (every queue for admins)."""
    from queues.models import Queue

    queues = Queue.objects.filter(is_open=True)
    if is_platform_admin(user):
        return queues
    return queues.filter(team__in=member_teams(user))


def can_submit(user: User) -> bool:
    return is_platform_admin(user) or member_teams(user).exists()


def can_cancel_job(user: User, job: Job) -> bool:
    """Owners cancel their own jobs, team admins any job of their team, platform admins any."""
    if not user.is_authenticated:
        return False
    if is_platform_admin(user):
        return True
    if job.owner_id == user.pk and is_team_member(user, job.queue.team):
        return True
    return is_team_admin(user, job.queue.team)


def can_manage_membership(user: User, team: Team) -> bool:
    return is_platform_admin(user) or is_team_admin(user, team)


def manageable_teams(user: User) -> QuerySet[Team]:
    """Teams whose memberships the user may change: all for platform admins, else those where the
    user is a team admin."""
    from queues.models import Membership, Team

    if is_platform_admin(user):
        return Team.objects.all()
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(
        memberships__user=user, memberships__role=Membership.Role.TEAM_ADMIN
    ).distinct()


def visible_memberships(user: User) -> QuerySet[Membership]:
    """Memberships of the teams the user may see."""
    from queues.models import Membership

    return Membership.objects.filter(team__in=visible_teams(user))


def can_write_catalog(user: User) -> bool:
    """Teams, queues, quotas, cohorts, flavors, service classes and clusters: platform admins."""
    return is_platform_admin(user)


def can_view_chargeback(user: User) -> bool:
    return is_platform_admin(user) or is_finance(user)


# --- accounting (usage ledger, chargeback, statements, prices) --------------------------------
def sees_all_accounting(user: User) -> bool:
    """Finance and platform admins read every team's usage, charges and statements."""
    return is_platform_admin(user) or is_finance(user)


def admin_teams(user: User) -> QuerySet[Team]:
    """Teams where the user is a team admin."""
    from queues.models import Membership, Team

    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(
        memberships__user=user, memberships__role=Membership.Role.TEAM_ADMIN
    ).distinct()


def filter_visible_usage(records: QuerySet[Any], user: User) -> QuerySet[Any]:
    """Ledger rows: all for finance and platform admins; a team admin's teams' rows; a
    researcher's own rows; nothing for anyone else."""
    from django.db.models import Q

    if sees_all_accounting(user):
        return records
    if not user.is_authenticated:
        return records.none()
    return records.filter(Q(team__in=admin_teams(user)) | Q(user=user, team__in=member_teams(user)))


def filter_visible_statements(statements: QuerySet[Any], user: User) -> QuerySet[Any]:
    """Statements: all for finance and platform admins; their teams' for team admins."""
    if sees_all_accounting(user):
        return statements
    return statements.filter(team__in=admin_teams(user))


def can_read_prices(user: User) -> bool:
    return sees_all_accounting(user)


def can_edit_prices(user: User) -> bool:
    """Only platform admins set prices, class multipliers and budgets."""
    return is_platform_admin(user)


# --- dashboards -------------------------------------------------------------------------------
def can_view_platform_dashboards(user: User) -> bool:
    """Cluster-wide dashboards (usage, quotas, MIG map, queue health, charges): platform admins
    and finance."""
    return sees_all_accounting(user)


def dashboard_teams(user: User) -> QuerySet[Team]:
    """Teams whose team dashboard the user may open: every team for platform admins and
    finance, their own teams for everyone else."""
    return visible_teams(user)


def can_view_dashboards(user: User) -> bool:
    return can_view_platform_dashboards(user) or member_teams(user).exists()


def can_use_admin_site(user: User) -> bool:
    return is_platform_admin(user)


def can_manage_platform(user: User) -> bool:
    """Teams, cohorts, queues and quotas, service classes, flavors, clusters: platform admins."""
    return is_platform_admin(user)


def managed_teams(user: User) -> QuerySet[Team]:
    """Teams whose membership the user may edit: every team for platform admins, else the
    teams where the user is a team admin."""
    from queues.models import Membership, Team

    if is_platform_admin(user):
        return Team.objects.all()
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(
        memberships__user=user, memberships__role=Membership.Role.TEAM_ADMIN
    ).distinct()


def can_open_manage_pages(user: User) -> bool:
    return is_platform_admin(user) or managed_teams(user).exists()


def require_platform_admin(user: User) -> None:
    """Raise PermissionDenied (403) unless the user is a platform admin."""
    if not can_manage_platform(user):
        raise PermissionDenied("Only platform admins may change the platform's settings.")


def require_submitter(user: User) -> None:
    """Raise PermissionDenied (403) unless the user may use the researcher pages."""
    if not can_submit(user):
        raise PermissionDenied("These pages are for members of a team.")


def visible_job_or_404(user: User, pk: int) -> Job:
    """The job if the user may see it; other teams' jobs are 404, not 403."""
    from queues.models import Job

    return get_object_or_404(
        Job.objects.visible_to(user).select_related(
            "queue__team", "queue__cohort", "owner", "service_class", "cluster"
        ),
        pk=pk,
    )


def visible_queue_or_404(user: User, pk: int) -> Queue:
    """The queue if the user may see it; other teams' queues are 404."""
    from queues.models import Queue

    return get_object_or_404(Queue.objects.visible_to(user).select_related("team", "cohort"), pk=pk)


def managed_team_or_404(user: User, pk: int) -> Team:
    """A team whose membership the user may edit; any other team is 404."""
    return get_object_or_404(managed_teams(user), pk=pk)


@dataclass(frozen=True)
class NavItem:
    label: str
    url_name: str


def navigation(user: User) -> list[NavItem]:
    """The links the site's navigation shows this user: only what the user may use."""
    items: list[NavItem] = []
    if not user.is_authenticated:
        return items
    if can_submit(user):
        items += [
            NavItem("Submit", "submit"),
            NavItem("Jobs", "jobs"),
            NavItem("Queues", "queues"),
        ]
    if can_view_chargeback(user):
        items.append(NavItem("Chargeback", "chargeback"))
    if can_view_dashboards(user):
        items.append(NavItem("Dashboards", "dashboards"))
    if can_open_manage_pages(user):
        items.append(NavItem("Manage", "manage"))
    if can_use_admin_site(user):
        items.append(NavItem("Admin", "admin:index"))
    return items
