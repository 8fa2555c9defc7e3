"""Who may see and do what: the access rules (docs/ARCHITECTURE.md "Roles"), one name each.

Roles: platform admins (group ``platform-admin``, or a superuser), finance (group ``finance``),
both defined in ``gpuplatform/roles.py``, and per team a ``Membership`` role (``member`` or
``team_admin``). Which rows a user sees is the models' querysets' ``visible_to``
(``Job.objects.visible_to(user)``, ``Queue.objects.visible_to(user)``,
``Team.objects.visible_to(user)``); this module builds on them and the models never import it.
Views, the API and templates call these helpers instead of repeating the rules. Objects of other
teams are hidden (404), not forbidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from gpuplatform.roles import FINANCE_GROUP as FINANCE_GROUP  # the roles, re-exported
from gpuplatform.roles import PLATFORM_ADMIN_GROUP as PLATFORM_ADMIN_GROUP
from gpuplatform.roles import is_finance as is_finance
from gpuplatform.roles import is_platform_admin as is_platform_admin
from gpuplatform.roles import is_platform_admin_or_finance as is_platform_admin_or_finance
from gpuplatform.roles import member_team_ids as member_team_ids
from queues.models import Job, Membership, Queue, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser


def team_role(user: User, team: Team) -> str | None:
    """The user's Membership role in ``team`` (``member``/``team_admin``), or None."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).values_list("role", flat=True).first()


def is_team_member(user: User, team: Team) -> bool:
    return team_role(user, team) is not None


def is_team_admin(user: User, team: Team) -> bool:
    return team_role(user, team) == Membership.Role.TEAM_ADMIN


def member_teams(user: User) -> QuerySet[Team]:
    """Teams the user belongs to (any role)."""
    return Team.objects.of_member(user)


def visible_teams(user: User) -> QuerySet[Team]:
    """Platform admins and finance see every team; everyone else sees their own teams."""
    return Team.objects.visible_to(user)


def visible_queues(user: User) -> QuerySet[Queue]:
    """Queues of the teams the user may see."""
    return Queue.objects.visible_to(user)


def submittable_queues(user: User) -> QuerySet[Queue]:
    """Open queues the user may submit to: their teams' queues (every queue for admins)."""
    return Queue.objects.submittable_by(user)


def can_submit(user: User) -> bool:
    return is_platform_admin(user) or bool(member_team_ids(user))


def can_cancel_job(user: User, job: Job) -> bool:
    """Owners cancel their own jobs, team admins any job of their team, platform admins any."""
    if not user.is_authenticated:
        return False
    if is_platform_admin(user):
        return True
    if job.owner_id == user.pk and is_team_member(user, job.queue.team):
        return True
    return is_team_admin(user, job.queue.team)


def can_read_job_logs(user: User, job: Job) -> bool:
    """Whoever may see the job reads its workers' pod status and logs: its team's members and
    platform admins. Finance sees money and aggregates, never a job's details or logs."""
    if not user.is_authenticated:
        return False
    return is_platform_admin(user) or is_team_member(user, job.queue.team)


def can_manage_membership(user: User, team: Team) -> bool:
    return is_platform_admin(user) or is_team_admin(user, team)


def admin_teams(user: User) -> QuerySet[Team]:
    """Teams where the user is a team admin."""
    return Team.objects.administered_by(user)


def manageable_teams(user: User) -> QuerySet[Team]:
    """Teams whose memberships the user may change: all for platform admins, else those where the
    user is a team admin."""
    if is_platform_admin(user):
        return Team.objects.all()
    return admin_teams(user)


def job_teams(user: User) -> QuerySet[Team]:
    """Teams whose jobs the user sees by name, owner and why they wait (``Job.objects.visible_to``
    by team): every team for platform admins, their own for members. Finance sees every team's
    usage and money, not its jobs: queue status, the team dashboard and the GPU map leave the
    jobs of other teams out (counts and GPUs stay)."""
    if is_platform_admin(user):
        return Team.objects.all()
    return member_teams(user)


def visible_memberships(user: User) -> QuerySet[Membership]:
    """Memberships of the teams the user may see."""
    return Membership.objects.filter(team__in=visible_teams(user))


# --- accounting (usage ledger, chargeback, statements, prices) --------------------------------
# Finance and platform admins read every team's usage, charges, statements and the prices
# (is_platform_admin_or_finance); only platform admins set prices and multipliers; finance and
# platform admins set budgets and add statement adjustments.


def filter_visible_usage(records: QuerySet[Any], user: User) -> QuerySet[Any]:
    """Ledger rows: all for finance and platform admins; a team admin's teams' rows; a
    researcher's own rows; nothing for anyone else."""
    if is_platform_admin_or_finance(user):
        return records
    if not user.is_authenticated:
        return records.none()
    return records.filter(Q(team__in=admin_teams(user)) | Q(user=user, team__in=member_teams(user)))


def filter_visible_budgets(budgets: QuerySet[Any], user: User) -> QuerySet[Any]:
    """Budgets: all for finance and platform admins; their teams' for team admins."""
    if is_platform_admin_or_finance(user):
        return budgets
    return budgets.filter(team__in=admin_teams(user))


def filter_visible_statements(statements: QuerySet[Any], user: User) -> QuerySet[Any]:
    """Statements: all for finance and platform admins; their teams' for team admins."""
    if is_platform_admin_or_finance(user):
        return statements
    return statements.filter(team__in=admin_teams(user))


# --- dashboards -------------------------------------------------------------------------------
# The cluster-wide dashboards (usage, quotas, MIG map, queue health, charges) are for platform
# admins and finance (is_platform_admin_or_finance); a team's dashboard for whoever sees the
# team (visible_teams).


def can_view_dashboards(user: User) -> bool:
    return is_platform_admin_or_finance(user) or member_teams(user).exists()


# --- pages --------------------------------------------------------------------------------------
def can_open_manage_pages(user: User) -> bool:
    return is_platform_admin(user) or manageable_teams(user).exists()


def require_platform_admin(user: User) -> None:
    """Raise PermissionDenied (403) unless the user is a platform admin."""
    if not is_platform_admin(user):
        raise PermissionDenied("Only platform admins may change the platform's settings.")


def require_submitter(user: User) -> None:
    """Raise PermissionDenied (403) unless the user may use the researcher pages."""
    if not can_submit(user):
        raise PermissionDenied("These pages are for members of a team.")


def visible_job_or_404(user: User, pk: int) -> Job:
    """The job if the user may see it; other teams' jobs are 404, not 403."""
    return get_object_or_404(
        Job.objects.visible_to(user).select_related(
            "queue__team", "queue__cohort", "owner", "service_class", "cluster"
        ),
        pk=pk,
    )


def visible_queue_or_404(user: User, pk: int) -> Queue:
    """The queue if the user may see it; other teams' queues are 404."""
    return get_object_or_404(Queue.objects.visible_to(user).select_related("team", "cohort"), pk=pk)


def managed_team_or_404(user: User, pk: int) -> Team:
    """A team whose membership the user may edit; any other team is 404."""
    return get_object_or_404(manageable_teams(user), pk=pk)


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
    if is_platform_admin_or_finance(user):
        items.append(NavItem("Chargeback", "chargeback"))
    if can_view_dashboards(user):
        items.append(NavItem("Dashboards", "dashboards"))
    if can_open_manage_pages(user):
        items.append(NavItem("Manage", "manage"))
    if is_platform_admin(user):
        items.append(NavItem("Admin", "admin:index"))
    return items
