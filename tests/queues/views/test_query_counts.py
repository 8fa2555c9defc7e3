"""Every page reads a fixed number of queries, whatever the number of jobs (2 vs 30)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def pages(queue: Queue, job: Job, cls: ServiceClass, flavor: Flavor) -> list[tuple[str, dict]]:
    form = {"queue": queue.pk, "service_class": cls.pk, "flavor": flavor.pk, "workers": 1,
            "gpus_per_worker": 2}  # fmt: skip
    return [
        (reverse("jobs"), {}),
        (reverse("jobs"), {"state": "pending", "sort": "-queue"}),
        (reverse("job-detail", args=[job.pk]), {}),
        (reverse("queues"), {}),
        (reverse("queue-detail", args=[queue.pk]), {}),
        (reverse("submit"), {}),
        (reverse("submit-estimate"), form),
        (reverse("manage-queues"), {}),
        (reverse("manage-queue-edit", args=[queue.pk]), {}),
        (reverse("manage-teams"), {}),
        (reverse("manage-object-list", args=["service-classes"]), {}),
    ]


def count(client: Client, url: str, params: dict) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params)
    assert response.status_code == 200, url
    return len(queries)


def test_pages_do_not_grow_with_the_number_of_jobs(
    client: Client, platform_admin: User, researcher_a: User, queue_a: Queue, queue_b: Queue,
    service_class_std: ServiceClass, flavor_h100: Flavor, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
    django_assert_max_num_queries: Callable[..., Any],
) -> None:  # fmt: skip
    first = submit(gpus=2, name="job-0")
    submit(gpus=8, workers=2, name="too-big")  # stays pending: every page shows both kinds
    cycle(later(1))
    cycle(later(2))
    client.force_login(platform_admin)
    checks = pages(queue_a, first, service_class_std, flavor_h100)
    with_one = {url + str(params): count(client, url, params) for url, params in checks}

    for i in range(2, 30):  # some more fit, the rest wait with a why-pending text
        submit(gpus=2, name=f"job-{i}", at=later(2 + i), team="a" if i % 2 else "b")
    cycle(later(40))
    cycle(later(41))
    assert Job.objects.filter(state="pending").count() > 10
    assert Job.objects.filter(state__in=["admitted", "running"]).count() >= 5
    for url, params in checks:
        with django_assert_max_num_queries(with_one[url + str(params)]):
            assert client.get(url, params).status_code == 200


def test_the_jobs_list_counts_the_jobs_alone(
    client: Client, platform_admin: User, queue_a: Queue, make_job: Callable[..., Job]
) -> None:
    """The page reads its jobs' names through joins; its count joins nothing (20,000 jobs on
    PostgreSQL: 2 ms alone, 30 ms with the joins)."""
    make_job(queue=queue_a, owner=platform_admin, name="one")
    client.force_login(platform_admin)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("jobs"))
    assert response.status_code == 200
    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"] and "queues_job" in q["sql"]]
    assert len(counts) == 1 and "JOIN" not in counts[0], counts
    assert "1 job" in response.content.decode()
