"""The submit form is counted by the submission rate limit (issue 26): JOB_SUBMIT_RATE per user,
one counter for the form and the REST API."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass

pytestmark = pytest.mark.django_db


@pytest.fixture
def form(
    queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor, sim_cluster: Cluster,
    settings: Any,
) -> dict[str, Any]:  # fmt: skip
    settings.JOB_SUBMIT_RATE = "2/minute"
    return {
        "queue": queue_a.pk, "service_class": service_class_std.pk, "flavor": flavor_h100.pk,
        "name": "train", "image": "pytorch/pytorch:2.4.0", "command": "python train.py",
        "workers": 1, "gpus_per_worker": 1,
    }  # fmt: skip


def test_the_submit_form_is_rate_limited(
    client: Client, researcher_a: User, form: dict[str, Any]
) -> None:
    client.force_login(researcher_a)
    codes = [client.post("/submit/", form).status_code for _ in range(3)]
    assert codes == [302, 302, 429]
    assert Job.objects.count() == 2
    refused = client.post("/submit/", form)
    assert "Too many submissions: at most 2/minute" in refused.content.decode()
    checked = client.post("/submit/", {**form, "action": "check"})
    assert checked.status_code == 200  # the Check button submits nothing: not counted


def test_the_form_and_the_api_share_one_counter(
    client: Client, researcher_a: User, team_admin_a: User, form: dict[str, Any],
    queue_a: Queue,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    api = APIClient()
    api.force_login(researcher_a)
    body = {
        "queue": queue_a.pk, "service_class": "standard", "flavors": ["h100"], "name": "t",
        "image": "pytorch/pytorch:2.4.0", "workers": 1, "gpus_per_worker": 1,
    }  # fmt: skip
    assert api.post("/api/v1/jobs/", body, format="json").status_code == 201
    assert client.post("/submit/", form).status_code == 302
    assert api.post("/api/v1/jobs/", body, format="json").status_code == 429
    assert client.post("/submit/", form).status_code == 429
    other = Client()
    other.force_login(team_admin_a)  # per user: a teammate still submits
    assert other.post("/submit/", form).status_code == 302
