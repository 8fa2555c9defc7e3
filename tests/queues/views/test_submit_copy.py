"""Clone / resubmit (issue 24): a job's page links to the submit form filled in with the same
request under a new name; submitting it makes a new job with the same request."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Job

pytestmark = pytest.mark.django_db


def test_submit_a_copy_of_a_job(
    client: Client, researcher_a: User, researcher_b: User, sim_cluster: Cluster,
    submit: Callable[..., Job],
) -> None:  # fmt: skip
    job = submit(gpus=4, workers=2, name="resnet", estimated_runtime=5400,
                 command=["python", "train.py", "--lr", "0.1 0.2"])  # fmt: skip
    client.force_login(researcher_a)
    page = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert f'href="{reverse("submit")}?copy={job.pk}"' in page
    form = client.get(reverse("submit"), {"copy": job.pk}).context["form"]
    keys = ("name", "command", "workers", "gpus_per_worker", "estimated_runtime", "queue", "flavor")
    initial = {k: form.initial.get(k) for k in keys}
    assert initial == {
        "name": "resnet-copy", "command": "python train.py --lr '0.1 0.2'", "workers": 2,
        "gpus_per_worker": 4, "estimated_runtime": 90, "queue": job.queue_id,
        "flavor": job.acceptable_flavors()[0].pk,
    }  # fmt: skip
    data = {k: v for k, v in form.initial.items() if v is not None}
    response = client.post(reverse("submit"), data)
    assert response.status_code == 302
    copy = Job.objects.exclude(pk=job.pk).get()
    assert (copy.name, copy.command, copy.workers, copy.gpus_per_worker) == (
        "resnet-copy", job.command, 2, 4,
    )  # fmt: skip
    assert copy.estimated_runtime == job.estimated_runtime
    # someone who may not see the job gets an empty form
    client.force_login(researcher_b)
    assert (
        client.get(reverse("submit"), {"copy": job.pk}).context["form"].initial.get("name") is None
    )


SPEC = {
    "args": ["--epochs", "3"],
    "env": [
        {"name": "HF_HOME", "value": "/cache/hf-secret-looking-value"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    ],
    "volumes": [
        {"name": "datasets", "mountPath": "/data", "readOnly": True,
         "persistentVolumeClaim": {"claimName": "datasets"}},
        {"name": "emptydir-2", "mountPath": "/scratch", "readOnly": False,
         "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
    ],
    "shm_size": "16Gi", "cpu": "8", "memory": "64Gi", "memory_limit": "80Gi",
    "image_pull_secret": "regcred", "working_dir": "/workspace",
    "tolerations": [
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        {"key": "spot", "operator": "Exists"},
    ],
    "labels": {"example.com/project": "llm"}, "annotations": {"example.com/note": "a b"},
}  # fmt: skip


def test_the_job_page_shows_the_spec_and_a_copy_carries_it_over(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job]
) -> None:
    job = submit(gpus=4, name="llm", spec=SPEC)
    client.force_login(researcher_a)

    page = client.get(reverse("job-detail", args=[job.pk])).content.decode()

    shown = (
        "HF_HOME", "HF_TOKEN (from secret hf, key token)",
        "/data: persistentVolumeClaim datasets (read-only)",
        "/scratch: emptyDir medium Memory sizeLimit 1Gi", "16Gi", "8 requested, limit 8",
        "64Gi requested, limit 80Gi", "regcred", "dedicated=ml (NoSchedule)",
        "example.com/project=llm", "/workspace",
    )  # fmt: skip
    for text in shown:
        assert text in page, text
    assert "hf-secret-looking-value" not in page  # env values are never shown
    form = client.get(reverse("submit"), {"copy": job.pk}).context["form"]
    data = {k: v for k, v in form.initial.items() if v is not None}
    response = client.post(reverse("submit"), data)
    assert response.status_code == 302, response.context["form"].errors
    copy = Job.objects.exclude(pk=job.pk).get()
    assert copy.spec == job.spec == SPEC
