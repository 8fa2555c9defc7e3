"""One meaning of fair share (issue 24): the queue page shows the engine's share (usage above
nominal / cohort pool / weight, the number fair-sharing preemption compares) and says what it
is in one sentence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Cluster, Job, Queue
from queues.services.queue_status import SHARE_MEANING
from tests.queues.views.conftest import later

pytestmark = pytest.mark.django_db


def test_queue_page_shows_the_engines_share_and_says_what_it_means(
    client: Client, researcher_a: User, queue_a: Queue, queue_b: Queue, sim_cluster: Cluster,
    submit: Callable[..., Job], cycle: Callable[..., Any],
) -> None:  # fmt: skip
    submit(gpus=4, workers=3, name="wide")  # 12 h100: 4 above nominal 8, pool 16
    cycle(later(1))
    cycle(later(2))
    client.force_login(researcher_a)
    html = client.get(reverse("queue-detail", args=[queue_a.pk])).content.decode()
    assert '<dd id="queue-share">0.25: over its share, borrowing' in html
    assert "the GPUs it uses above its nominal quota, divided by its cohort" in html
    assert html.count("share is the scheduler") == 1
    assert "share is the scheduler" in SHARE_MEANING
