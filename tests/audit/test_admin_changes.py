"""Edits made in the Django admin site are in the audit trail, and the trail cannot be edited."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEntry
from queues.models import Cluster, Cohort, Node, Queue, Quota

pytestmark = pytest.mark.django_db

SECRET = "eyJhbGciOiJSUzI1NiJ9.admin-site-secret-token"


@pytest.fixture
def admin_site(client: Client, platform_admin: User) -> Client:
    client.force_login(platform_admin)
    return client


def entries(obj: object) -> dict[str, tuple[object, object]]:
    rows = AuditEntry.objects.filter(
        object_type=f"{obj._meta.app_label}.{obj._meta.model_name}",  # type: ignore[attr-defined]
        object_id=str(obj.pk),  # type: ignore[attr-defined]
    )
    return {row.field: (row.old, row.new) for row in rows}


def test_a_quota_changed_in_the_admin_site_is_audited_with_who_and_old_new(
    admin_site: Client, platform_admin: User, queue_a: Queue
) -> None:
    quota = Quota.objects.get(queue=queue_a)

    response = admin_site.post(
        f"/admin/queues/quota/{quota.pk}/change/",
        {
            "queue": queue_a.pk,
            "flavor": quota.flavor_id,
            "nominal": 3,
            "borrowing_limit": "",
            "lending_limit": "2",
        },
    )

    assert response.status_code == 302, response.content[:2000]
    assert entries(quota) == {"nominal": (8, 3), "lending_limit": (None, 2)}
    assert set(AuditEntry.objects.values_list("actor_name", flat=True)) == {"pat-admin"}


def test_adding_and_deleting_in_the_admin_site_are_audited(admin_site: Client) -> None:
    # (the cohort's own quotas are an inline: its management form comes along, empty)
    form = {"name": "physics", "description": "P", "weight": "1", "quotas-TOTAL_FORMS": "0",
            "quotas-INITIAL_FORMS": "0"}  # fmt: skip
    response = admin_site.post("/admin/queues/cohort/add/", form)
    assert response.status_code == 302, response.content[:2000]
    added = Cohort.objects.get(name="physics")
    assert entries(added) == {
        "name": (None, "physics"), "description": (None, "P"), "weight": (None, 1.0)
    }  # fmt: skip

    cohort = Cohort.objects.create(name="old-cohort")
    response = admin_site.post(f"/admin/queues/cohort/{cohort.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Cohort.objects.filter(pk=cohort.pk).exists()
    assert entries(cohort)["name"] == ("old-cohort", None)


def test_a_cluster_token_set_in_the_admin_site_is_audited_without_its_value(
    admin_site: Client,
) -> None:
    from tests.queues.test_admin import cluster_form

    response = admin_site.post("/admin/queues/cluster/add/", cluster_form(token=SECRET))

    assert response.status_code == 302, response.content[:2000]
    cluster = Cluster.objects.get(name="gpu-prod")
    recorded = entries(cluster)
    assert recorded["api_url"] == (None, "https://k8s.example.org:6443")
    assert not any(SECRET in str(row) for row in AuditEntry.objects.values_list("old", "new"))


def test_failing_a_node_from_the_admin_action_is_audited(admin_site: Client) -> None:
    cluster = Cluster.objects.create(name="sim", driver="simulated")
    node = Node.objects.create(cluster=cluster, name="gpu-1", capacity={"h100": 8})

    response = admin_site.post(
        "/admin/queues/node/", {"action": "fail_node", "_selected_action": [node.pk]}
    )

    assert response.status_code == 302
    assert entries(node) == {"ready": (True, False)}


def test_audit_entries_cannot_be_deleted_or_changed_from_the_admin_site(
    client: Client, queue_a: Queue
) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "x")
    client.force_login(root)
    quota = Quota.objects.get(queue=queue_a)
    client.post(
        f"/admin/queues/quota/{quota.pk}/change/",
        {"queue": queue_a.pk, "flavor": quota.flavor_id, "nominal": 1},
    )
    entry = AuditEntry.objects.get()

    assert (
        client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    client.post(
        "/admin/audit/auditentry/",
        {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"},
    )
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
