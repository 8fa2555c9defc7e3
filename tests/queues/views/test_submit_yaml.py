"""Submit from YAML by upload (issue 19): the submit form takes a pod template as a file as well
as pasted, never both at once, and only text."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass

pytestmark = pytest.mark.django_db

TEMPLATE = b"""\
spec:
  containers:
  - image: registry.example.com/train:3
    command: [python, train.py]
    volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: datasets}}]
"""


@pytest.fixture
def form(queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor,
         sim_cluster: Cluster) -> dict[str, Any]:  # fmt: skip
    return {
        "queue": queue_a.pk, "service_class": service_class_std.pk, "name": "from-file",
        "workers": 1, "gpus_per_worker": 1, "flavor": flavor_h100.pk, "action": "submit",
    }  # fmt: skip


def post(user: User, data: dict[str, Any]) -> Any:
    client = Client()
    client.force_login(user)
    return client.post(reverse("submit"), data)


def test_an_uploaded_template_submits_the_job_it_describes(
    researcher_a: User, form: dict[str, Any]
) -> None:
    upload = SimpleUploadedFile("pod.yaml", TEMPLATE, content_type="application/yaml")

    response = post(researcher_a, {**form, "pod_template_file": upload})

    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.image, job.command) == ("registry.example.com/train:3", ["python", "train.py"])
    assert job.spec["volumes"] == [
        {"name": "data", "mountPath": "/data", "readOnly": True,
         "persistentVolumeClaim": {"claimName": "datasets"}},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"pod_template": TEMPLATE.decode()}, "Paste the template or upload it, not both."),
        ({}, "Not a text file (UTF-8 YAML)."),
    ],
    ids=["pasted and uploaded", "not text"],
)
def test_an_upload_that_cannot_be_used_is_refused_beside_the_upload_field(
    researcher_a: User, form: dict[str, Any], extra: dict[str, str], says: str
) -> None:
    content = TEMPLATE if extra else b"\xff\xfe\x00binary"
    upload = SimpleUploadedFile("pod.yaml", content, content_type="application/yaml")

    response = post(researcher_a, {**form, **extra, "pod_template_file": upload})

    assert response.status_code == 200
    assert response.context["form"].errors["pod_template_file"] == [says]
    assert not Job.objects.exists()
