"""A preempted job's page (issue 24): while its workers stop it says why it is not running and
until when it keeps its nodes (not a page that looks like a running job's); once back in the
queue it shows no nodes and says why it waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Job, ServiceClass
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def test_preempted_job_page_says_why_and_then_shows_no_old_nodes(
    client: Client, researcher_b: User, sim_cluster: Cluster, spot: ServiceClass,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    borrower = submit(team="b", gpus=8, workers=2, name="borrower", service_class=spot)
    cycle(later(1))
    cycle(later(2))
    submit(team="a", gpus=8, name="owner", at=later(3))  # team-a reclaims its nominal 8
    cycle(later(4))
    borrower.refresh_from_db()
    assert borrower.state == "preempted"
    client.force_login(researcher_b)
    html = client.get(reverse("job-detail", args=[borrower.pk])).content.decode()
    assert "Why it is not running" in html
    assert "its workers are stopping and have until" in html
    assert "Stopping on cluster sim" in html

    cycle(later(4 + 31))  # the grace period (30 s) is over: back in the queue
    cycle(later(4 + 32))
    borrower.refresh_from_db()
    assert borrower.state == "pending" and borrower.placement == {}
    html = client.get(reverse("job-detail", args=[borrower.pk])).content.decode()
    assert "Why it is pending" in html and 'id="placement"' not in html
    assert "Waiting for the next scheduling cycle" not in html
