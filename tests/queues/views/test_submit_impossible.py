"""The submit form refuses jobs that can never run, as the REST API does (issue 24: it accepted
1024 workers x 64 GPUs, and 1 x 9 GPUs on 8-GPU nodes, then explained them as waiting)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from tests.queues.views.test_pages import form_data

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("workers", "gpus", "field"), [(1, 9, "gpus_per_worker"), (1024, 64, "gpus_per_worker")]
)
def test_form_and_api_refuse_a_job_that_can_never_run(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster, workers: int, gpus: int, field: str,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    data = form_data(queue_a, service_class_std, flavor_h100, workers=workers, gpus_per_worker=gpus)
    response = client.post(reverse("submit"), data)
    assert response.status_code == 200 and not Job.objects.exists()
    assert field in response.context["form"].errors
    assert "No node can hold one worker of" in response.content.decode()
    api = APIClient()
    api.force_authenticate(researcher_a)
    body = {
        "queue": queue_a.pk, "service_class": "standard", "flavors": ["h100"], "name": "big",
        "image": "pytorch/pytorch:2.4.0", "workers": workers, "gpus_per_worker": gpus,
    }  # fmt: skip
    assert api.post("/api/v1/jobs/", body, format="json").status_code == 400
    assert not Job.objects.exists()
