"""A node's page says how many of its GPUs other workloads hold (pods the platform did not
create on a shared node)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Node

pytestmark = pytest.mark.django_db


def test_the_node_page_shows_the_gpus_other_workloads_hold(
    client: Client, platform_admin: User, sim_cluster: Cluster
) -> None:
    node = Node.objects.filter(cluster=sim_cluster).first()
    assert node is not None
    flavor, units = next(iter(node.capacity.items()))
    Node.objects.filter(pk=node.pk).update(other_usage={flavor: 3})
    client.force_login(platform_admin)
    html = client.get(reverse("node-detail", args=[node.pk])).content.decode()
    assert "Other workloads" in html
    assert f'<th scope="row">{flavor}</th><td>{units}</td><td>3</td>' in html
