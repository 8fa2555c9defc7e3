"""What a user is told when the running jobs a waiting job needs have run past their estimated
runtimes (issue 27): no estimated start that moves with the clock, the same words on the job
page, in the REST API (detail and list) and in the submit form's estimate panel
(docs/SCHEDULING.md, "Estimated start")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from tests.queues.views.conftest import later, probe_estimate

pytestmark = pytest.mark.django_db

OVERDUE = (
    "Estimated start: as soon as the running jobs it waits for end; they have run past their "
    "estimated runtimes."
)


def test_a_job_waiting_for_overdue_jobs_is_told_so_with_no_moving_time(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster, submit: Callable[..., Job],
    cycle: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # both nodes for 10 job minutes by its estimate (10 wall-clock seconds at 60x); it runs 10 h
    submit(gpus=8, workers=2, name="long", estimated_runtime=600, duration_hint=36000)
    cycle(later(1))
    cycle(later(3))
    waiting = submit(gpus=8, name="next", at=later(4), estimated_runtime=600)
    cycle(later(5))
    assert "Estimated start: 2026-03-02 09:00:13 UTC." in (
        Job.objects.get(pk=waiting.pk).runtime.pending_message
    )  # before its estimated end: a time

    pages = []
    for at in (60, 120):  # "long" has run past its estimated end at 09:00:13
        cycle(later(at))
        client.force_login(researcher_a)
        page = client.get(reverse("job-detail", args=[waiting.pk])).content.decode()
        why = page[page.index('id="why-pending"') :].split("</p>")[0]
        assert OVERDUE in why
        assert "2026-03-02" not in why  # (the timeline keeps what it was told at 09:00:05)
        pages.append(why)
    assert pages[0] == pages[1]  # the same words a minute later

    api = APIClient()
    api.force_authenticate(researcher_a)
    body = api.get(f"/api/v1/jobs/{waiting.pk}/").json()
    assert body["estimated_start"] is None
    assert body["pending_message"].endswith(OVERDUE)
    listed = {j["id"]: j for j in api.get("/api/v1/jobs/", {"state": "pending"}).json()["results"]}
    assert listed[waiting.pk]["estimated_start"] is None
    assert listed[waiting.pk]["pending_message"] == body["pending_message"]

    panel = probe_estimate(client, monkeypatch, later(121), queue_a, service_class_std, flavor_h100)
    assert panel["outcome"] == "wait"
    assert panel["estimated_start"] is None
    assert "run past their estimated runtimes" in panel["summary"]
    assert "2026-03-02" not in panel["summary"]
