"""Platform management pages: queues with their quotas on one page (asking before a quota goes
below usage), the other objects, write-only cluster tokens, and the change history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEntry
from queues.models import Cluster, Flavor, Job, Membership, Queue, Quota, ServiceClass, Team
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def queue_post(queue: Queue, quotas: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The queue page's POST: the queue's fields and one formset row per quota."""
    data: dict[str, Any] = {
        "team": queue.team_id,
        "name": queue.name,
        "cohort": queue.cohort_id or "",
        "weight": queue.weight,
        "is_open": "on",
        "quotas-TOTAL_FORMS": len(quotas),
        "quotas-INITIAL_FORMS": sum(1 for q in quotas if q.get("id")),
        "quotas-MIN_NUM_FORMS": 0,
        "quotas-MAX_NUM_FORMS": 1000,
    }
    for i, row in enumerate(quotas):
        for key, value in row.items():
            data[f"quotas-{i}-{key}"] = "" if value is None else value
    data.update(extra)
    return data


def quota_row(quota: Quota, **changes: Any) -> dict[str, Any]:
    row = {
        "id": quota.pk,
        "queue": quota.queue_id,
        "flavor": quota.flavor_id,
        "nominal": quota.nominal,
        "borrowing_limit": quota.borrowing_limit,
        "lending_limit": quota.lending_limit,
    }
    row.update(changes)
    return row


ADMIN_URLS = [
    ("manage-queues", []),
    ("manage-queue-new", []),
    ("manage-object-list", ["service-classes"]),
    ("manage-object-new", ["clusters"]),
    ("manage-team-new", []),
]


@pytest.mark.parametrize(("name", "args"), ADMIN_URLS)
def test_researcher_and_team_admin_get_403_on_platform_pages(
    client: Client, researcher_a: User, team_admin_a: User, name: str, args: list[str]
) -> None:
    for user in (researcher_a, team_admin_a):
        client.force_login(user)
        assert client.get(reverse(name, args=args)).status_code == 403


def test_researcher_cannot_open_the_manage_start_page(client: Client, researcher_a: User) -> None:
    client.force_login(researcher_a)
    assert client.get(reverse("manage")).status_code == 403


def test_admin_raises_a_quota_and_the_history_says_who_and_old_to_new(
    client: Client, platform_admin: User, queue_a: Queue
) -> None:
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    response = client.post(url, queue_post(queue_a, [quota_row(quota, nominal=12)]))
    assert response.status_code == 302
    quota.refresh_from_db()
    assert quota.nominal == 12
    entry = AuditEntry.objects.get(field="nominal")
    assert (entry.actor, entry.old, entry.new, entry.object_type) == (
        platform_admin, 8, 12, "queues.quota",
    )  # fmt: skip
    html = client.get(url).content.decode()
    assert "pat-admin" in html and "8 → 12" in html


def test_admin_adds_a_flavor_quota_on_the_same_page(
    client: Client, platform_admin: User, queue_a: Queue
) -> None:
    a100 = Flavor.objects.create(name="a100", resource="nvidia.com/gpu")
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    new_row = {"flavor": a100.pk, "nominal": 4, "borrowing_limit": 2, "lending_limit": None}
    client.post(
        reverse("manage-queue-edit", args=[queue_a.pk]),
        queue_post(queue_a, [quota_row(quota), new_row]),
    )
    added = Quota.objects.get(queue=queue_a, flavor=a100)
    assert (added.nominal, added.borrowing_limit) == (4, 2)
    assert AuditEntry.objects.filter(object_id=str(added.pk), field="nominal", new=4).exists()


def test_quota_rows_are_validated_with_the_field_named(
    client: Client, platform_admin: User, queue_a: Queue
) -> None:
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    response = client.post(
        reverse("manage-queue-edit", args=[queue_a.pk]),
        queue_post(queue_a, [quota_row(quota, lending_limit=9)]),
    )
    assert response.status_code == 200
    errors = response.context["formset"].forms[0].errors
    assert "lending_limit" in errors or "__all__" in errors
    assert "lending limit" in response.content.decode().lower()
    quota.refresh_from_db()
    assert quota.lending_limit is None


def test_lowering_a_quota_below_usage_asks_first_and_names_the_jobs(
    client: Client, platform_admin: User, queue_a: Queue, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    first = submit(gpus=4, name="first")
    second = submit(gpus=4, name="second", at=later(1))
    cycle(later(2))
    cycle(later(3))
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    data = queue_post(queue_a, [quota_row(quota, nominal=5)])
    response = client.post(url, data)
    assert response.status_code == 200
    quota.refresh_from_db()
    assert quota.nominal == 8  # nothing saved yet
    (impact,) = response.context["impacts"]
    assert (impact.used, impact.new_nominal, impact.above) == (8, 5, 3)
    html = response.content.decode()
    assert "may be preempted to give GPUs back to other queues of cohort research" in html
    named = [j.job_id for j in impact.jobs]
    assert named and set(named) <= {first.pk, second.pk}
    response = client.post(url, {**data, "confirm": "yes"})
    assert response.status_code == 302
    quota.refresh_from_db()
    assert quota.nominal == 5


def test_manage_posts_need_the_csrf_token(platform_admin: User, queue_a: Queue) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(platform_admin)
    quota = queue_a.quotas.get()
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    assert client.post(url, queue_post(queue_a, [quota_row(quota, nominal=1)])).status_code == 403


def test_service_class_edits_are_recorded(client: Client, platform_admin: User) -> None:
    cls = ServiceClass.objects.create(name="batch", priority=5)
    client.force_login(platform_admin)
    url = reverse("manage-object-edit", args=["service-classes", cls.pk])
    data = {
        "name": "batch", "priority": 50, "preemptible": "on", "can_borrow": "on",
        "min_runtime": 0, "grace_period": 60, "max_runtime": "", "price_multiplier": "1.0",
    }  # fmt: skip
    assert client.post(url, data).status_code == 302
    changes = {e.field: (e.old, e.new) for e in AuditEntry.objects.filter(object_id=str(cls.pk))}
    assert changes == {"priority": (5, 50), "grace_period": (0, 60)}


def test_service_class_form_explains_a_bad_value(client: Client, platform_admin: User) -> None:
    client.force_login(platform_admin)
    data = {
        "name": "Bad Name", "priority": 1, "min_runtime": 600, "grace_period": 0,
        "max_runtime": 60, "price_multiplier": "1",
    }  # fmt: skip
    response = client.post(reverse("manage-object-new", args=["service-classes"]), data)
    assert set(response.context["form"].errors) == {"name", "max_runtime"}


def test_cluster_token_is_write_only(client: Client, platform_admin: User) -> None:
    cluster = Cluster.objects.create(
        name="prod", driver="kubernetes", api_url="https://k8s.example.org", token="s3cret-tok"
    )
    client.force_login(platform_admin)
    url = reverse("manage-object-edit", args=["clusters", cluster.pk])
    html = client.get(url).content.decode()
    assert "s3cret-tok" not in html and "A token is stored" in html
    base = {"name": "prod", "driver": "kubernetes", "api_url": "https://k8s.example.org",
            "verify_tls": "on"}  # fmt: skip
    client.post(url, {**base, "token": ""})
    cluster.refresh_from_db()
    assert cluster.token == "s3cret-tok"  # blank keeps it
    client.post(url, {**base, "token": "new-tok"})
    cluster.refresh_from_db()
    assert cluster.token == "new-tok"
    assert "new-tok" not in client.get(url).content.decode()
    assert not AuditEntry.objects.filter(new="new-tok").exists()


def test_team_admin_edits_their_teams_members_but_not_other_teams(
    client: Client, team_admin_a: User, researcher_b: User, team_a: Team, team_b: Team,
    researcher_a: User,
) -> None:  # fmt: skip
    client.force_login(team_admin_a)
    assert client.get(reverse("manage-team-edit", args=[team_b.pk])).status_code == 404
    members = list(Membership.objects.filter(team=team_a).order_by("pk"))
    data: dict[str, Any] = {
        "members-TOTAL_FORMS": len(members) + 1,
        "members-INITIAL_FORMS": len(members),
        "members-MIN_NUM_FORMS": 0,
        "members-MAX_NUM_FORMS": 1000,
    }
    for i, m in enumerate(members):
        data.update({f"members-{i}-id": m.pk, f"members-{i}-team": team_a.pk,
                     f"members-{i}-user": m.user_id, f"members-{i}-role": m.role})  # fmt: skip
    n = len(members)
    data.update({f"members-{n}-user": researcher_b.pk, f"members-{n}-role": "member"})
    response = client.post(reverse("manage-team-edit", args=[team_a.pk]), data)
    assert response.status_code == 302
    assert Membership.objects.filter(team=team_a, user=researcher_b).exists()
    team_a.refresh_from_db()
    assert team_a.name == "team-a"
    assert AuditEntry.objects.filter(object_type="queues.membership", field="user").exists()


def test_lowering_a_quota_of_a_queue_without_cohort_says_nothing_stops(
    queue_a: Queue, sim_cluster: Cluster, submit: Callable[..., Job], cycle: Callable[..., Any]
) -> None:
    from queues.services.quota_impact import quota_impact

    queue_a.cohort = None
    queue_a.save()
    job = submit(gpus=8, name="solo")
    cycle(later(1))
    flavor_id = queue_a.quotas.get().flavor_id
    (impact,) = quota_impact(queue_a, {flavor_id: 2}, now=later(2))
    assert [j.job_id for j in impact.jobs] == [job.pk]
    assert "Nothing is stopped" in impact.message
    assert "until its usage drops under 2" in impact.message
    assert quota_impact(queue_a, {flavor_id: 8}, now=later(2)) == []


def test_a_quota_preview_names_the_jobs_preemption_would_stop_first(
    queue_a: Queue, sim_cluster: Cluster, submit: Callable[..., Job], cycle: Callable[..., Any]
) -> None:
    """Rule 5's order: the least work lost first, a job already stopped twice last."""
    from queues.services.quota_impact import quota_impact

    older = submit(gpus=4, name="older")
    cycle(later(1))
    newer = submit(gpus=4, name="newer", at=later(2))
    cycle(later(3))
    cycle(later(4))
    assert set(Job.objects.values_list("state", flat=True)) == {"running"}
    flavor_id = queue_a.quotas.get().flavor_id

    (impact,) = quota_impact(queue_a, {flavor_id: 6}, now=later(600))
    assert [j.job_id for j in impact.jobs] == [newer.pk]  # it has run for less

    Job.objects.filter(pk=newer.pk).update(preemption_count=2)
    (impact,) = quota_impact(queue_a, {flavor_id: 6}, now=later(600))
    assert [j.job_id for j in impact.jobs] == [older.pk]


def test_cluster_page_lists_its_nodes_and_capacity(
    client: Client, platform_admin: User, sim_cluster: Cluster
) -> None:
    client.force_login(platform_admin)
    html = client.get(reverse("manage-object-edit", args=["clusters", sim_cluster.pk])).content
    assert "sim/n1: 8 h100" in html.decode() and "sim/n2: 8 h100" in html.decode()


def test_queue_status_page_shows_quota_history_to_the_team(
    client: Client, platform_admin: User, researcher_a: User, queue_a: Queue
) -> None:
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    client.post(
        reverse("manage-queue-edit", args=[queue_a.pk]),
        queue_post(queue_a, [quota_row(quota, nominal=6, borrowing_limit=2)]),
    )
    client.force_login(researcher_a)
    html = client.get(reverse("queue-detail", args=[queue_a.pk])).content.decode()
    assert "team-a/main quota h100" in html and "8 → 6" in html and "— → 2" in html
