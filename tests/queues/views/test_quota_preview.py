"""The queue page's preview before a quota change is saved (issue 24): it warns only about
flavors whose nominal goes down, and it says when a lowered quota would leave ready GPUs in no
queue's quota (idle while jobs wait for quota)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Flavor, Job, Queue, Quota
from tests.queues.views.conftest import later
from tests.queues.views.test_manage import queue_post, quota_row

pytestmark = pytest.mark.django_db


def test_raising_one_flavor_says_nothing_of_another_already_above_nominal(
    client: Client, platform_admin: User, queue_a: Queue, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    a100_quota = Quota.objects.create(queue=queue_a, flavor=a100, nominal=4)
    submit(gpus=8, workers=2, name="wide")  # 16 h100: 8 above team-a's nominal 8 (borrowed)
    cycle(later(1))
    cycle(later(2))
    h100_quota = queue_a.quotas.get(flavor__name="h100")
    client.force_login(platform_admin)
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    data = queue_post(queue_a, [quota_row(h100_quota), quota_row(a100_quota, nominal=6)])
    response = client.post(url, data)
    assert response.status_code == 302  # saved at once: nothing was lowered
    a100_quota.refresh_from_db()
    assert a100_quota.nominal == 6


def test_lowering_a_quota_warns_of_gpus_no_quota_covers_before_saving(
    client: Client, platform_admin: User, queue_a: Queue, queue_b: Queue, sim_cluster: Cluster,
) -> None:  # fmt: skip
    quota = queue_a.quotas.get()
    client.force_login(platform_admin)
    url = reverse("manage-queue-edit", args=[queue_a.pk])
    data = queue_post(queue_a, [quota_row(quota, nominal=2)])
    response = client.post(url, data)
    assert response.status_code == 200  # asks first, though nothing runs
    quota.refresh_from_db()
    assert quota.nominal == 8
    (item,) = response.context["stranded"]
    assert (item.capacity, item.covered_before, item.covered_after, item.idle) == (16, 16, 10, 6)
    html = response.content.decode()
    assert 'id="stranded-gpus"' in html
    assert "so 6 h100 would be in no queue&#x27;s quota" in html
    response = client.post(url, {**data, "confirm": "yes"})
    assert response.status_code == 302
    quota.refresh_from_db()
    assert quota.nominal == 2
