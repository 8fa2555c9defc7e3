"""The jobs list (issue 24): GPU type, wait so far, runtime and preemption count per job, and
filters by owner, GPU type and submission time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from queues.models import Cluster, Flavor, Job, JobRuntime, Queue, ServiceClass

pytestmark = pytest.mark.django_db


def test_jobs_list_shows_gpu_type_wait_runtime_and_preemptions(
    client: Client, researcher_a: User, team_admin_a: User, sim_cluster: Cluster,
    queue_a: Queue, submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    now = timezone.now()
    ran = submit(gpus=8, workers=2, name="ran", at=now - timedelta(minutes=30), duration_hint=10**7)
    cycle(now - timedelta(minutes=20))  # admitted
    cycle(now - timedelta(minutes=19))  # running: started after an 11 min wait
    waits = submit(gpus=8, name="waits", at=now - timedelta(minutes=5))
    Job.objects.filter(pk=waits.pk).update(preemption_count=2)
    client.force_login(researcher_a)
    html = client.get(reverse("jobs")).content.decode()
    for header in ("GPU type", "Wait", "Runtime", "Preempted"):
        assert f'<th scope="col">{header}</th>' in html
    row = html[html.index(f"#{ran.pk}</span>") :].split("</tr>")[0]
    assert "<td>h100</td><td>11 min</td>" in row and "<td>19 min</td>" in row
    row = html[html.index(f"#{waits.pk}</span>") :].split("</tr>")[0]
    assert "<td>h100</td><td>5 min so far</td>" in row and "<td>—</td>" in row
    assert "<td>—</td>\n      <td>2</td>" in row  # never started; preempted twice


def test_jobs_list_filters_by_owner_gpu_type_and_submission_day(
    client: Client, researcher_a: User, researcher_b: User, team_admin_a: User,
    queue_a: Queue, service_class_std: ServiceClass, flavor_h100: Flavor,
    make_job: Callable[..., Job],
) -> None:  # fmt: skip
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    mine = make_job(queue=queue_a, owner=researcher_a, name="mine")
    other = make_job(queue=queue_a, owner=team_admin_a, name="other")
    other.set_acceptable_flavors([a100])
    old = make_job(queue=queue_a, owner=researcher_a, name="old")
    Job.objects.filter(pk=old.pk).update(submitted_at=timezone.now() - timedelta(days=3))
    client.force_login(team_admin_a)

    def names(**params: Any) -> set[str]:
        page = client.get(reverse("jobs"), params).context["page"]
        return {job.name for job in page}

    assert names() == {"mine", "other", "old"}
    assert names(owner=researcher_a.get_username()) == {"mine", "old"}
    assert names(flavor=a100.pk) == {"other"}
    today = timezone.now().date()
    assert names(submitted_from=today.isoformat()) == {"mine", "other"}
    assert names(submitted_to=(today - timedelta(days=2)).isoformat()) == {"old"}
    assert mine.pk and flavor_h100.pk and service_class_std.pk


def test_jobs_list_shows_the_admitted_gpu_type_else_the_choices_in_order(
    client: Client, researcher_a: User, queue_a: Queue, flavor_h100: Flavor,
    sim_cluster: Cluster, make_job: Callable[..., Job],
) -> None:  # fmt: skip
    a100 = Flavor.objects.create(name="a100-80gb", resource="nvidia.com/gpu", gpu_equivalent=1.0)
    running = make_job(queue=queue_a, owner=researcher_a, name="running", state="running")
    waiting = make_job(queue=queue_a, owner=researcher_a, name="waiting")
    for job in (running, waiting):
        job.set_acceptable_flavors([a100, flavor_h100])
    JobRuntime.objects.create(job=running, flavor=flavor_h100)  # admitted on its second choice
    JobRuntime.objects.create(job=waiting)
    Job.objects.filter(pk=running.pk).update(cluster=sim_cluster, started_at=timezone.now())
    client.force_login(researcher_a)
    html = client.get(reverse("jobs")).content.decode()
    row = html[html.index(f"#{running.pk}</span>") :].split("</tr>")[0]
    assert "<td>h100</td>" in row
    row = html[html.index(f"#{waiting.pk}</span>") :].split("</tr>")[0]
    assert "<td>a100-80gb or h100</td>" in row
    # admitted on a flavor it no longer lists (its choices changed since): that flavor's name
    running.set_acceptable_flavors([a100])
    html = client.get(reverse("jobs")).content.decode()
    row = html[html.index(f"#{running.pk}</span>") :].split("</tr>")[0]
    assert "<td>h100</td>" in row
