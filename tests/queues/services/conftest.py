"""A small live world: one simulated cluster with two 8-GPU H100 nodes, two teams in one
cohort (8 H100 nominal each), three service classes, and a controllable cycle clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from queues.models import (
    Job,
)
from queues.services import submit_job
from tests.queues.services.helpers import T0, build_world


@pytest.fixture(autouse=True)
def queued_cycles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Submissions queue a cycle through Celery; here tests run cycles themselves."""
    queued: list[int] = []
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: queued.append(1))
    return queued


@pytest.fixture(autouse=True)
def _simulation(settings: Any) -> None:
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def world(db: None) -> SimpleNamespace:
    return build_world()


@pytest.fixture
def submit(world: SimpleNamespace) -> Callable[..., Job]:
    """``submit(team="a", gpus=8, workers=1, cls="standard", at=T0, **fields)``."""

    def make(
        *,
        team: str = "a",
        gpus: int = 8,
        workers: int = 1,
        cls: str = "standard",
        at: datetime = T0,
        name: str = "train",
        **fields: Any,
    ) -> Job:
        fields.setdefault("duration_hint", 3600)
        return submit_job(
            owner=world.alice if team == "a" else world.bob,
            queue=world.queue_a if team == "a" else world.queue_b,
            service_class=getattr(world, cls),
            name=name,
            image="pytorch/pytorch:2.4.0",
            flavors=[world.h100],
            workers=workers,
            gpus_per_worker=gpus,
            now=at,
            **fields,
        )

    return make


@pytest.fixture
def reload() -> Callable[[Job], Job]:
    return lambda job: Job.objects.select_related("runtime").get(pk=job.pk)
