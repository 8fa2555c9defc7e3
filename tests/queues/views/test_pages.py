"""Researcher pages: submit with a live estimate, jobs list, job detail with why-pending and
cancel, queue page; access per role (other teams' objects are 404)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def form_data(queue: Queue, cls: ServiceClass, flavor: Flavor, **extra: Any) -> dict[str, Any]:
    data = {
        "queue": queue.pk,
        "service_class": cls.pk,
        "name": "resnet-train",
        "image": "pytorch/pytorch:2.4.0",
        "command": 'python train.py --epochs "3"',
        "workers": 1,
        "gpus_per_worker": 4,
        "flavor": flavor.pk,
    }
    data.update(extra)
    return data


def test_researcher_submits_a_job_and_lands_on_its_page(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    response = client.post(reverse("submit"), form_data(queue_a, service_class_std, flavor_h100))
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == reverse("job-detail", args=[job.pk])
    assert (job.owner, job.queue, job.state) == (researcher_a, queue_a, "pending")
    assert job.command == ["python", "train.py", "--epochs", "3"]
    page = client.get(response.url).content.decode()
    assert "Waiting for the next scheduling cycle" in page


def test_submit_form_names_each_bad_field_next_to_it(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    data = form_data(
        queue_a, service_class_std, flavor_h100,
        name="Bad Name", workers=2, min_workers=3, topology_mode="required", command='python "x',
    )  # fmt: skip
    response = client.post(reverse("submit"), data)
    assert response.status_code == 200 and not Job.objects.exists()
    errors = response.context["form"].errors
    assert set(errors) == {"name", "min_workers", "topology_level", "command"}
    html = response.content.decode()
    assert 'aria-describedby="id_min_workers_help id_min_workers_errors"' in html
    assert "min_workers (3) cannot exceed workers (2)" in html


def test_check_button_shows_the_estimate_without_submitting(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    data = form_data(queue_a, service_class_std, flavor_h100, action="check", name="")
    response = client.post(reverse("submit"), data)
    assert not Job.objects.exists()
    assert response.context["estimate"].outcome == "start"
    assert "Would start now within the queue&#x27;s quota" in response.content.decode()


def test_estimate_json_answers_the_forms_values(
    client: Client, researcher_a: User, queue_a: Queue, queue_b: Queue,
    service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster,
) -> None:  # fmt: skip
    client.force_login(researcher_a)
    data = form_data(queue_a, service_class_std, flavor_h100, workers=2, gpus_per_worker=8)
    body = client.get(reverse("submit-estimate"), data).json()
    assert body["estimate"]["outcome"] == "borrow"
    assert body["estimate"]["quotas"][0] == {
        "flavor": "h100", "nominal": 8, "borrowing_limit": None, "lending_limit": None,
        "used": 0, "need": 16, "after": 16, "within_nominal": False,
    }  # fmt: skip
    bad = client.get(reverse("submit-estimate"), {**data, "workers": 0})
    assert bad.status_code == 400 and "workers" in bad.json()["errors"]


def test_job_detail_says_why_pending_with_numbers_and_placement_once_running(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    waiting = submit(gpus=8, workers=2, name="big")  # borrows: ranks after within-nominal
    running = submit(gpus=8, name="small", at=later(1))
    cycle(later(2))
    cycle(later(3))
    client.force_login(researcher_a)
    html = client.get(reverse("job-detail", args=[waiting.pk])).content.decode()
    assert "Why it is pending" in html
    assert "#1 in queue team-a/main" in html
    assert "uses 8 of 8 h100 (nominal 8) and this job needs 16" in html
    assert "the cohort pool of research (16 h100) has 8 free" in html
    assert "Estimated start: 2026-03-02 09:01:03 UTC" in html  # the small job's end (1 h at 60x)
    html = client.get(reverse("job-detail", args=[running.pk])).content.decode()
    assert "Running" in html and "Cluster sim" in html
    assert "<td>1</td><td>8</td>" in html  # one worker with 8 GPUs on one node


def test_job_detail_says_when_the_stop_bound_protects_a_job(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job],
    cycle: Callable[..., Any],
) -> None:  # fmt: skip
    """docs/SCHEDULING.md rule 1: after three stops no fair-share or priority stop, and a job
    its queue's nominal holds is held to it, where no preemption stops it."""
    job = submit(gpus=8)
    cycle(later(1))
    client.force_login(researcher_a)
    url = reverse("job-detail", args=[job.pk])
    Job.objects.filter(pk=job.pk).update(preemption_count=2)
    html = client.get(url).content.decode()
    assert "Preempted</dt><dd>2 times" in html and 'id="stop-bound"' not in html
    Job.objects.filter(pk=job.pk).update(preemption_count=3)
    html = client.get(url).content.decode()
    assert "no longer stopped for fair sharing or priority" in html
    assert "starts again only within that quota, where no preemption stops it" in html


def test_job_detail_says_until_when_its_class_protects_a_running_job(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job],
    service_class_std: ServiceClass, settings: Any,
) -> None:  # fmt: skip
    """docs/SCHEDULING.md rule 1: min_runtime against every preemption, preemption_protection
    against fair sharing and priority; job seconds, read at 60x on the simulated cluster."""
    ServiceClass.objects.filter(pk=service_class_std.pk).update(
        min_runtime=600, preemption_protection=3600
    )  # 10 and 60 wall seconds at 60x
    job = submit(gpus=8)
    started = timezone.now().replace(microsecond=0) - timedelta(seconds=5)
    Job.objects.filter(pk=job.pk).update(state=Job.State.RUNNING, started_at=started)
    client.force_login(researcher_a)
    url = reverse("job-detail", args=[job.pk])
    html = client.get(url).content.decode()
    until_min = f"{started + timedelta(seconds=10):%Y-%m-%d %H:%M:%S} UTC"
    until_protected = f"{started + timedelta(seconds=60):%Y-%m-%d %H:%M:%S} UTC"
    assert (
        f"Not preempted before {until_min}: class standard&#x27;s minimum runtime (10 min)" in html
    )
    assert (
        f"Not stopped for fair sharing or priority before {until_protected}: class "
        "standard&#x27;s preemption protection (1 h after each start)"
    ) in html
    # the platform default stands in for a class without its own; past it, nothing is said
    ServiceClass.objects.filter(pk=service_class_std.pk).update(preemption_protection=None)
    settings.PREEMPTION_PROTECTION_SECONDS = 1200
    html = client.get(url).content.decode()
    assert f"before {started + timedelta(seconds=20):%Y-%m-%d %H:%M:%S} UTC" in html
    Job.objects.filter(pk=job.pk).update(started_at=started - timedelta(minutes=2))
    html = client.get(url).content.decode()
    assert 'id="min-runtime"' not in html and 'id="preemption-protection"' not in html


def test_owner_cancels_their_job_with_a_post(
    client: Client, researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job]
) -> None:
    job = submit(gpus=8)
    client.force_login(researcher_a)
    assert client.get(reverse("job-cancel", args=[job.pk])).status_code == 405
    response = client.post(reverse("job-cancel", args=[job.pk]), follow=True)
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert f"Cancelled train (#{job.pk})" in response.content.decode()


def test_cancel_needs_the_csrf_token(
    researcher_a: User, sim_cluster: Cluster, submit: Callable[..., Job]
) -> None:
    job = submit(gpus=8)
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher_a)
    assert client.post(reverse("job-cancel", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.state == "pending"


def test_researcher_cannot_cancel_a_teammates_job(
    client: Client, researcher_a: User, team_admin_a: User, make_job: Callable[..., Job],
    queue_a: Queue,
) -> None:  # fmt: skip
    job = make_job(queue=queue_a, owner=team_admin_a)
    client.force_login(researcher_a)
    assert "Cancel job" not in client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert client.post(reverse("job-cancel", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.state == "pending"


def test_team_admin_cancels_any_job_of_the_team(
    client: Client, researcher_a: User, team_admin_a: User, make_job: Callable[..., Job],
    queue_a: Queue,
) -> None:  # fmt: skip
    job = make_job(queue=queue_a, owner=researcher_a)
    client.force_login(team_admin_a)
    client.post(reverse("job-cancel", args=[job.pk]))
    job.refresh_from_db()
    assert job.state == "cancelled"


def test_other_teams_job_and_queue_are_404(
    client: Client, researcher_a: User, researcher_b: User, make_job: Callable[..., Job],
    queue_b: Queue,
) -> None:  # fmt: skip
    job = make_job(queue=queue_b, owner=researcher_b)
    client.force_login(researcher_a)
    assert client.get(reverse("job-detail", args=[job.pk])).status_code == 404
    assert client.post(reverse("job-cancel", args=[job.pk])).status_code == 404
    assert client.get(reverse("queue-detail", args=[queue_b.pk])).status_code == 404


def test_jobs_list_filters_by_scope_state_and_sorts(
    client: Client, researcher_a: User, team_admin_a: User, make_job: Callable[..., Job],
    queue_a: Queue,
) -> None:  # fmt: skip
    make_job(queue=queue_a, owner=researcher_a, name="alpha")
    make_job(queue=queue_a, owner=team_admin_a, name="beta")
    done = make_job(queue=queue_a, owner=researcher_a, name="gamma")
    Job.objects.filter(pk=done.pk).update(state="cancelled")
    client.force_login(researcher_a)

    def names(**params: Any) -> list[str]:
        page = client.get(reverse("jobs"), params).context["page"]
        return [job.name for job in page]

    assert names(sort="name") == ["alpha", "beta", "gamma"]
    assert names(sort="-name") == ["gamma", "beta", "alpha"]
    assert names(scope="mine", sort="name") == ["alpha", "gamma"]
    assert names(state="pending", sort="name") == ["alpha", "beta"]
    assert names(sort="nonsense")[0] == "gamma"  # unknown sort: newest first


def test_jobs_list_is_paginated(
    client: Client, researcher_a: User, make_job: Callable[..., Job], queue_a: Queue
) -> None:
    for i in range(55):
        make_job(queue=queue_a, owner=researcher_a, name=f"job-{i}")
    client.force_login(researcher_a)
    first = client.get(reverse("jobs")).context["page"]
    second = client.get(reverse("jobs"), {"page": 2}).context["page"]
    assert (len(first), len(second), first.paginator.num_pages) == (50, 5, 2)


def test_queue_page_shows_quota_usage_fair_share_and_the_line(
    client: Client, researcher_a: User, queue_a: Queue, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    submit(gpus=8, workers=2, name="big")
    cycle(later(1))
    waiting = submit(gpus=8, name="next", at=later(2))
    cycle(later(3))
    client.force_login(researcher_a)
    response = client.get(reverse("queue-detail", args=[queue_a.pk]))
    status = response.context["status"]
    assert (status.flavors[0].used, status.flavors[0].borrowed) == (16, 8)
    assert [p.job_id for p in status.pending] == [waiting.pk]
    html = response.content.decode()
    assert "Fair share" in html
    assert "Waiting for quota: queue team-a/main uses 16 h100" in html  # the engine's words
    assert "#1 in queue" not in html  # the position has its own column


@pytest.mark.parametrize("url_name", ["submit", "jobs", "queues"])
def test_finance_and_outsiders_cannot_open_researcher_pages(
    client: Client, finance_user: User, outsider: User, url_name: str
) -> None:
    for user in (finance_user, outsider):
        client.force_login(user)
        assert client.get(reverse(url_name)).status_code == 403


def test_sorted_column_header_says_its_direction(
    client: Client, researcher_a: User, make_job: Callable[..., Job], queue_a: Queue
) -> None:
    make_job(queue=queue_a, owner=researcher_a)
    client.force_login(researcher_a)
    html = client.get(reverse("jobs"), {"sort": "-name"}).content.decode()
    assert '<th scope="col" aria-sort="descending"><a href="?sort=name">Job ▼</a>' in html
