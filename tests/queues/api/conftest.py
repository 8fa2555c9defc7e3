"""The API's world: the root personas, one simulated cluster with two 8-GPU H100 nodes, an API
client per persona (``api(user)``), no Celery broker and a fresh throttle cache per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.test import APIClient

from queues.models import Cluster, Queue, ServiceClass
from tokens.models import ApiToken


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Submissions queue a cycle through Celery once committed; no worker runs in these tests."""
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)


@pytest.fixture(autouse=True)
def _fresh_throttle_counts() -> None:
    cache.clear()


@pytest.fixture
def api() -> Callable[[User | None], APIClient]:
    """``api(user)``: a client signed in as ``user`` with a real API token (``None``: anonymous)."""

    def make(user: User | None) -> APIClient:
        client = APIClient()
        if user is not None:
            _, secret = ApiToken.issue(user=user, name="tests")
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


@pytest.fixture
def job_body(
    queue_a: Queue, service_class_std: ServiceClass, sim_cluster: Cluster
) -> Callable[..., dict[str, Any]]:
    """``job_body(**changes)``: a valid submission to team A's queue (1 x 1 H100)."""

    def make(**changes: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "queue": queue_a.pk,
            "service_class": service_class_std.name,
            "flavors": ["h100"],
            "name": "train",
            "image": "pytorch/pytorch:2.4.0",
            "command": ["python", "train.py"],
            "workers": 1,
            "gpus_per_worker": 1,
        }
        body.update(changes)
        return {key: value for key, value in body.items() if value is not ...}

    return make
