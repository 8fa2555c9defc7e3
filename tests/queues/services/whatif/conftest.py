"""A small known history for the what-if replay: the root world's two queues (8 H100 nominal
each, one cohort) on the simulated cluster's two 8-GPU H100 nodes, and ``ran(...)`` to write a
job as the live services would have left it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from queues.models import Cluster, Job, Queue

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
HOUR = 3600.0


def hours_ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


@pytest.fixture(autouse=True)
def _simulation(settings: Any) -> None:
    settings.SIMULATION_SPEED = 60.0
    settings.CYCLE_INTERVAL = 10


@pytest.fixture
def ran(
    make_job: Callable[..., Job], researcher_a: User, researcher_b: User, sim_cluster: Cluster
) -> Callable[..., Job]:
    """``ran(queue, submitted=h, started=h, finished=h, gpus=8)``: a job submitted ``h`` hours
    ago that ran from ``started`` to ``finished`` hours ago (``finished=None``: still running;
    ``started=None``: still pending)."""

    def make(
        queue: Queue, *, submitted: float, started: float | None = None,
        finished: float | None = None, gpus: int = 8, **fields: Any,
    ) -> Job:  # fmt: skip
        state = Job.State.PENDING
        if started is not None:
            state = Job.State.RUNNING if finished is None else Job.State.SUCCEEDED
        owner = researcher_a if queue.team.name == "team-a" else researcher_b
        return make_job(
            queue=queue, owner=owner, state=state, gpus_per_worker=gpus,
            submitted_at=hours_ago(submitted),
            started_at=hours_ago(started) if started is not None else None,
            finished_at=hours_ago(finished) if finished is not None else None,
            cluster=sim_cluster if started is not None else None, **fields,
        )  # fmt: skip

    return make
