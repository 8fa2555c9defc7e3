"""One clock (issue 24): on a simulated cluster a job of estimated runtime 4 h runs 4 wall-clock
minutes at SIMULATION_SPEED 60, so the start estimated for the job behind it is minutes away,
not hours, and the same on the job page, in the submit form's estimate panel and in the API;
the job page says what its runtime takes on the wall clock. (queues/services/clock.py)"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from queues.models import Cluster, Flavor, Job, Queue, ServiceClass
from tests.queues.views.conftest import later, probe_estimate

pytestmark = pytest.mark.django_db

FOUR_HOURS = 4 * 3600


def test_estimated_start_runtime_label_and_actual_start_share_the_wall_clock(
    client: Client, researcher_a: User, queue_a: Queue, service_class_std: ServiceClass,
    flavor_h100: Flavor, sim_cluster: Cluster, submit: Callable[..., Job],
    cycle: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    long = submit(gpus=8, workers=2, name="long", estimated_runtime=FOUR_HOURS,
                  duration_hint=FOUR_HOURS)  # fmt: skip
    cycle(later(1))
    cycle(later(3))
    long.refresh_from_db()
    assert long.state == "running" and long.started_at == later(3)
    ends = later(3 + FOUR_HOURS / 60)  # 4 simulated hours at 60x: 4 wall-clock minutes

    client.force_login(researcher_a)
    panel = probe_estimate(client, monkeypatch, later(4), queue_a, service_class_std, flavor_h100)
    assert panel["outcome"] == "wait"
    assert panel["estimated_start"] is not None
    assert datetime.fromisoformat(panel["estimated_start"]) == ends  # 09:04:03, not 13:00:03

    waiting = submit(gpus=8, name="next", at=later(4), estimated_runtime=600)
    cycle(later(5))
    page = client.get(reverse("job-detail", args=[waiting.pk])).content.decode()
    assert f"Estimated start: {ends:%Y-%m-%d %H:%M:%S} UTC" in page

    api = APIClient()
    api.force_authenticate(researcher_a)
    body = api.get(f"/api/v1/jobs/{waiting.pk}/").json()
    assert datetime.fromisoformat(body["estimated_start"]) == ends

    label = client.get(reverse("job-detail", args=[long.pk])).content.decode()
    assert "4 h" in label
    assert "about 4 min of wall-clock time: cluster sim is simulated, 60x faster" in label

    # and it does start then: the estimate was right on the one clock
    cycle(ends)
    cycle(later(5 + FOUR_HOURS / 60))
    waiting.refresh_from_db()
    assert waiting.state == "running" and waiting.started_at == later(5 + FOUR_HOURS / 60)
