"""A job taken in from a kubectl-applied workload says so on its page (docs/KUEUE.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Job, WorkloadReference

pytestmark = pytest.mark.django_db


def test_the_job_page_names_the_object_it_was_taken_in_from(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job]
) -> None:
    adopted = submit(name="train")
    plain = submit(name="other")
    WorkloadReference.objects.create(
        job=adopted, cluster=sim_cluster, kind="Job", api_version="batch/v1",
        namespace="team-team-a", name="train", uid="uid-1",
    )  # fmt: skip
    client.force_login(researcher_a)

    page = client.get(reverse("job-detail", args=[adopted.pk])).content.decode()
    assert "Applied with kubectl" in page
    assert "<code>batch/v1 Job team-team-a/train</code> (uid uid-1)" in page
    assert (
        "Applied with kubectl"
        not in client.get(reverse("job-detail", args=[plain.pk])).content.decode()
    )
