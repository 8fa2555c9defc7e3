"""Access rules (gpuplatform/access.py): each persona sees and may do only its part."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AnonymousUser, User

from gpuplatform import access
from queues.models import Job, Queue, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def job_a(make_job: Callable[..., Job], queue_a: Queue, researcher_a: User) -> Job:
    return make_job(queue=queue_a, owner=researcher_a, name="vision-train")


@pytest.fixture
def job_b(make_job: Callable[..., Job], queue_b: Queue, researcher_b: User) -> Job:
    return make_job(queue=queue_b, owner=researcher_b, name="llm-train")


def test_outsider_sees_no_other_teams_jobs(outsider: User, job_a: Job, job_b: Job) -> None:
    assert list(Job.objects.visible_to(outsider)) == []


def test_researcher_sees_only_their_teams_jobs(
    researcher_a: User,
    team_admin_a: User,
    make_job: Callable[..., Job],
    queue_a: Queue,
    job_a: Job,
    job_b: Job,
) -> None:
    teammate_job = make_job(queue=queue_a, owner=team_admin_a, name="teammate")
    assert set(Job.objects.visible_to(researcher_a)) == {job_a, teammate_job}


def test_platform_admin_sees_every_job(platform_admin: User, job_a: Job, job_b: Job) -> None:
    assert set(Job.objects.visible_to(platform_admin)) == {job_a, job_b}


def test_finance_sees_every_team_but_no_jobs(
    finance_user: User, team_a: Team, team_b: Team, job_a: Job, job_b: Job
) -> None:
    assert set(access.visible_teams(finance_user)) == {team_a, team_b}
    assert list(Job.objects.visible_to(finance_user)) == []


def test_anonymous_sees_nothing(job_a: Job, team_a: Team) -> None:
    anonymous = AnonymousUser()
    assert list(Job.objects.visible_to(anonymous)) == []
    assert list(access.visible_teams(anonymous)) == []
    assert access.navigation(anonymous) == []


def test_researcher_sees_only_their_teams_and_queues(
    researcher_a: User, queue_a: Queue, queue_b: Queue, team_a: Team
) -> None:
    assert list(Team.objects.visible_to(researcher_a)) == [team_a]
    assert list(Queue.objects.visible_to(researcher_a)) == [queue_a]
    assert list(access.visible_queues(researcher_a)) == [queue_a]


def test_researcher_submits_only_to_open_queues_of_their_team(
    researcher_a: User, queue_a: Queue, queue_b: Queue
) -> None:
    assert list(access.submittable_queues(researcher_a)) == [queue_a]
    queue_a.is_open = False
    queue_a.save()
    assert list(access.submittable_queues(researcher_a)) == []


def test_researcher_cancels_own_job_but_not_a_teammates(
    researcher_a: User,
    team_admin_a: User,
    make_job: Callable[..., Job],
    queue_a: Queue,
    job_a: Job,
) -> None:
    teammate_job = make_job(queue=queue_a, owner=team_admin_a, name="teammate")
    assert access.can_cancel_job(researcher_a, job_a)
    assert not access.can_cancel_job(researcher_a, teammate_job)


def test_team_admin_cancels_any_job_of_the_team_only(
    team_admin_a: User, job_a: Job, job_b: Job
) -> None:
    assert access.can_cancel_job(team_admin_a, job_a)
    assert not access.can_cancel_job(team_admin_a, job_b)


def test_researcher_cannot_cancel_other_teams_job(researcher_a: User, job_b: Job) -> None:
    assert not access.can_cancel_job(researcher_a, job_b)


def test_finance_and_outsider_cannot_cancel_jobs(
    finance_user: User, outsider: User, job_a: Job
) -> None:
    assert not access.can_cancel_job(finance_user, job_a)
    assert not access.can_cancel_job(outsider, job_a)


def test_platform_admin_cancels_any_job(platform_admin: User, job_b: Job) -> None:
    assert access.can_cancel_job(platform_admin, job_b)


def test_only_team_admins_and_platform_admins_manage_membership(
    team_admin_a: User, researcher_a: User, platform_admin: User, team_a: Team, team_b: Team
) -> None:
    assert access.can_manage_membership(team_admin_a, team_a)
    assert not access.can_manage_membership(team_admin_a, team_b)
    assert not access.can_manage_membership(researcher_a, team_a)
    assert access.can_manage_membership(platform_admin, team_b)


def test_superuser_counts_as_platform_admin(db: None) -> None:
    root = User.objects.create_superuser("root", password="x-long-password-1")
    assert access.is_platform_admin(root)


def test_inactive_platform_admin_has_no_powers(platform_admin: User) -> None:
    platform_admin.is_active = False
    platform_admin.save()
    assert not access.is_platform_admin(platform_admin)


def test_role_helpers(
    platform_admin: User, finance_user: User, researcher_a: User, team_admin_a: User, team_a: Team
) -> None:
    assert access.is_platform_admin(platform_admin) and not access.is_finance(platform_admin)
    assert access.is_finance(finance_user) and not access.is_platform_admin(finance_user)
    assert access.team_role(researcher_a, team_a) == "member"
    assert access.is_team_admin(team_admin_a, team_a)
    assert not access.is_team_admin(researcher_a, team_a)
