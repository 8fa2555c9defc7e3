"""A node's page in the main UI (issue 24): GPUs, MIG layout, state and the jobs on it, with
cordon / drain / uncordon / fail / recover for platform admins, each audited."""

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
    assert node.ready and not node.cordoned
    trail = list(
        AuditEntry.objects.filter(object_id=str(node.pk))
        .order_by("pk")
        .values_list("actor_name", "field", "old", "new")
    )
    name = platform_admin.get_username()
    assert trail == [
        (name, "cordoned", False, True), (name, "ready", True, False),
        (name, "ready", False, True), (name, "cordoned", True, False),
    ]  # fmt: skip
    assert "Change history" in client.get(url).content.decode()
    cluster_page = reverse("manage-object-edit", args=["clusters", sim_cluster.pk])
    assert f'<a href="{url}">' in client.get(cluster_page).content.decode()  # linked from there

    client.force_login(researcher_a)
    assert client.get(url).status_code == 403
    assert client.post(reverse("node-action", args=[node.pk, "fail"])).status_code == 403
    client.force_login(platform_admin)
    assert client.post(reverse("node-action", args=[node.pk, "explode"])).status_code == 404


def test_draining_a_node_requeues_its_job_onto_another_node_and_uncordon_ends_it(
    client: Client, platform_admin: User, researcher_a: User, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    job = submit(gpus=8, name="on-drained", duration_hint=10**7)
    cycle(later(1))
    cycle(later(2))
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING
    drained = Node.objects.get(cluster=sim_cluster, name=next(iter(job.placement)))
    client.force_login(platform_admin)
    url = reverse("node-detail", args=[drained.pk])
    assert "Drain" in client.get(url).content.decode()
    response = client.post(reverse("node-action", args=[drained.pk, "drain"]), follow=True)
    assert "drained: it takes no new work" in response.content.decode()
    assert "draining: its jobs are being stopped" in client.get(url).content.decode()

    for step in range(3, 40):  # through the class grace period, then a restart elsewhere
        cycle(later(step * 10))
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING and drained.name not in job.placement
    assert job.preemption_count == 1
    said = " ".join(job.events.values_list("message", flat=True))
    assert f"Node {drained.name} is being drained by an admin" in said
    html = client.get(url).content.decode()
    assert "drained: no job of the platform left on it" in html
    name = platform_admin.get_username()
    trail = list(
        AuditEntry.objects.filter(object_id=str(drained.pk))
        .order_by("pk")
        .values_list("actor_name", "field", "old", "new")
    )
    assert trail == [(name, "cordoned", False, True), (name, "draining", False, True)]

    client.post(reverse("node-action", args=[drained.pk, "uncordon"]))
    drained.refresh_from_db()
    assert not drained.cordoned and not drained.draining
    later_job = submit(gpus=8, name="after-uncordon", duration_hint=10**7)
    cycle(later(500))
    cycle(later(510))
    later_job.refresh_from_db()
    assert later_job.state == Job.State.RUNNING and drained.name in later_job.placement
