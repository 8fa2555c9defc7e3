"""A node's page in the main UI (issue 24): GPUs, MIG layout, state and the jobs on it, with
cordon / uncordon / fail / recover for platform admins, each audited."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEntry
from queues.models import Cluster, Job, Node
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def test_admin_sees_a_node_and_fails_and_recovers_it_with_an_audit_trail(
    client: Client, platform_admin: User, researcher_a: User, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    job = submit(gpus=8, name="on-n1", duration_hint=10**7)
    cycle(later(1))
    cycle(later(2))
    job.refresh_from_db()
    node = Node.objects.get(cluster=sim_cluster, name=next(iter(job.placement)))
    client.force_login(platform_admin)
    url = reverse("node-detail", args=[node.pk])
    html = client.get(url).content.decode()
    assert f"Node sim/{node.name}" in html and '<p class="lead" id="node-state">Ready.' in html
    assert f"#{job.pk}</span>" in html and '<th scope="row">h100</th><td>8</td>' in html

    for action in ("cordon", "fail", "recover", "uncordon"):
        response = client.post(reverse("node-action", args=[node.pk, action]))
        assert response.status_code == 302 and response.url == url
    node.refresh_from_db()
    assert node.ready and node.schedulable
    trail = list(
        AuditEntry.objects.filter(object_id=str(node.pk))
        .order_by("pk")
        .values_list("actor_name", "field", "old", "new")
    )
    name = platform_admin.get_username()
    assert trail == [
        (name, "schedulable", True, False), (name, "ready", True, False),
        (name, "ready", False, True), (name, "schedulable", False, True),
    ]  # fmt: skip
    assert "Change history" in client.get(url).content.decode()
    cluster_page = reverse("manage-object-edit", args=["clusters", sim_cluster.pk])
    assert f'<a href="{url}">' in client.get(cluster_page).content.decode()  # linked from there

    client.force_login(researcher_a)
    assert client.get(url).status_code == 403
    assert client.post(reverse("node-action", args=[node.pk, "fail"])).status_code == 403
    client.force_login(platform_admin)
    assert client.post(reverse("node-action", args=[node.pk, "explode"])).status_code == 404
