"""Accounting fixtures: a cluster, an H100 price, and `script(job)` to walk a job through the
same state changes and events the live cycle writes (queues/services/transitions.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from accounting.models import FlavorPrice
from queues.models import Cluster, Flavor, Job, JobEvent, Queue
from queues.services.transitions import move, set_runtime
from tests.accounting.helpers import T0


@pytest.fixture
def cluster(db: None) -> Cluster:
    return Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)


@pytest.fixture
def h100_price(flavor_h100: Flavor) -> FlavorPrice:
    """2.00 USD per H100-hour from long before the tests' times."""
    return FlavorPrice.objects.create(
        flavor=flavor_h100,
        price_per_unit_hour=Decimal("2.00"),
        effective_from=datetime(2020, 1, 1, tzinfo=T0.tzinfo),
    )


class Script:
    """Moves one job like the cycle does: conditional updates plus the JobEvent of each step."""

    def __init__(self, job: Job, cluster: Cluster, flavor: Flavor) -> None:
        self.job = job
        self.cluster = cluster
        self.flavor = flavor

    def _event(self, kind: str, at: datetime, **data: Any) -> None:
        JobEvent.objects.create(job=self.job, kind=kind, at=at, data=data)

    def admit(self, at: datetime, workers: int | None = None) -> Script:
        workers = workers or self.job.workers
        placement = {"n1": workers}
        self.job.cluster = self.cluster
        assert move(
            self.job,
            Job.State.ADMITTED,
            at,
            cluster_id=self.cluster.pk,
            placement=placement,
            current_workers=workers,
        )
        self.job.current_workers = workers
        set_runtime(self.job.pk, flavor=self.flavor)
        self._event(
            JobEvent.Kind.ADMITTED,
            at,
            workers=workers,
            cluster=self.cluster.name,
            flavor=self.flavor.name,
        )
        return self

    def start(self, at: datetime) -> Script:
        assert move(self.job, Job.State.RUNNING, at)
        self._event(JobEvent.Kind.STARTED, at)
        return self

    def run(self, at: datetime, workers: int | None = None) -> Script:
        return self.admit(at, workers).start(at)

    def scale(self, at: datetime, workers: int) -> Script:
        Job.objects.filter(pk=self.job.pk).update(current_workers=workers)
        self.job.current_workers = workers
        self._event(JobEvent.Kind.SCALED, at, workers=workers)
        return self

    def preempt(self, at: datetime) -> Script:
        assert move(self.job, Job.State.PREEMPTED, at)
        assert move(self.job, Job.State.PENDING, at)
        self._event(JobEvent.Kind.PREEMPTED, at)
        return self

    def end(self, at: datetime, state: str = Job.State.SUCCEEDED) -> Script:
        assert move(self.job, state, at)
        self._event(JobEvent.Kind(state), at)  # a job's end and its event share the name
        return self


@pytest.fixture
def script(
    make_job: Callable[..., Job], cluster: Cluster, flavor_h100: Flavor
) -> Callable[..., Script]:
    """``script(queue=..., owner=..., workers=1, gpus_per_worker=1)``: a pending job to move."""

    def make(*, queue: Queue, owner: User, flavor: Flavor | None = None, **fields: Any) -> Script:
        job = make_job(queue=queue, owner=owner, **fields)
        return Script(job, cluster, flavor or flavor_h100)

    return make
