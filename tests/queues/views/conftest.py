"""The UI's world: the root personas plus one simulated cluster (two 8-GPU H100 nodes), a spot
class, a cycle runner with a controllable clock, and no Celery broker (tests run cycles)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queues.models import Flavor, Job, Queue, ServiceClass
from queues.services import estimate, submit_job

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def probe_estimate(
    client: Client, monkeypatch: pytest.MonkeyPatch, at: datetime, queue: Queue,
    service_class: ServiceClass, flavor: Flavor,
) -> dict[str, Any]:  # fmt: skip
    """The submit form's estimate panel for a 1 x 8-GPU probe of 10 s, asked at ``at``."""
    data = {
        "queue": queue.pk, "service_class": service_class.pk, "name": "probe",
        "image": "pytorch/pytorch:2.4.0", "command": "python train.py", "workers": 1,
        "gpus_per_worker": 8, "flavor": flavor.pk, "estimated_runtime": 10,
    }  # fmt: skip
    monkeypatch.setattr(estimate.timezone, "now", lambda: at)  # the panel's "now"
    panel: dict[str, Any] = client.get(reverse("submit-estimate"), data).json()["estimate"]
    return panel


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Submissions queue a cycle through Celery; here tests run cycles themselves."""
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)


@pytest.fixture(autouse=True)
def _simulation(settings: Any) -> None:
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def spot(db: None) -> ServiceClass:
    # 1800 job seconds: 30 wall-clock seconds at SIMULATION_SPEED 60 (queues/services/clock.py)
    return ServiceClass.objects.create(name="spot", priority=10, grace_period=1800)


@pytest.fixture
def submit(
    researcher_a: User, researcher_b: User, queue_a: Queue, queue_b: Queue,
    service_class_std: ServiceClass, flavor_h100: Flavor,
) -> Callable[..., Job]:  # fmt: skip
    """``submit(team="a", gpus=8, workers=1, at=T0, **fields)`` through services.submit_job."""

    def make(
        *, team: str = "a", gpus: int = 8, workers: int = 1, at: datetime = T0,
        name: str = "train", service_class: ServiceClass | None = None, **fields: Any,
    ) -> Job:  # fmt: skip
        fields.setdefault("duration_hint", 3600)
        return submit_job(
            owner=researcher_a if team == "a" else researcher_b,
            queue=queue_a if team == "a" else queue_b,
            service_class=service_class or service_class_std,
            name=name,
            image="pytorch/pytorch:2.4.0",
            flavors=[flavor_h100],
            workers=workers,
            gpus_per_worker=gpus,
            now=at,
            **fields,
        )

    return make
