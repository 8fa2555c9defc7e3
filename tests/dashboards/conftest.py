"""The dashboards' small world: the root personas and queues, one simulated cluster with two
8-GPU H100 nodes (n2 not Ready) and one MIG node (14 x 1g.10gb), jobs that hold GPUs, ledger
rows written directly (`ledger_row`), an H100 price, and `grow(n)` for n more busy teams."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounting.models import Budget, FlavorPrice, UsageRecord
from dashboards.rollup import record_cycle, sample_capacity
from queues.models import (
    Cluster,
    Cohort,
    CohortQuota,
    Flavor,
    Job,
    JobEvent,
    JobRuntime,
    Node,
    Queue,
    Quota,
    Team,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def cluster(db: None) -> Cluster:
    return Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)


@pytest.fixture
def flavor_mig(db: None) -> Flavor:
    return Flavor.objects.create(
        name="h100-1g.10gb",
        resource="nvidia.com/mig-1g.10gb",
        gpu_model="NVIDIA-H100-80GB-HBM3",
        mig_profile="1g.10gb",
        gpu_equivalent=1 / 7,
    )


@pytest.fixture
def nodes(cluster: Cluster, flavor_h100: Flavor, flavor_mig: Flavor) -> list[Node]:
    return [
        Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8}),
        Node.objects.create(cluster=cluster, name="n2", capacity={"h100": 8}, ready=False),
        Node.objects.create(
            cluster=cluster,
            name="mig-1",
            capacity={"h100-1g.10gb": 14},
            labels={"nvidia.com/mig.config": "all-1g.10gb"},
        ),
    ]


@pytest.fixture
def h100_price(flavor_h100: Flavor) -> FlavorPrice:
    """2.00 USD per H100-hour (MIG slices: 1/7 of it)."""
    return FlavorPrice.objects.create(
        flavor=flavor_h100,
        price_per_unit_hour=Decimal("2.00"),
        effective_from=datetime(2020, 1, 1, tzinfo=UTC),
    )


@pytest.fixture
def running_job(make_job: Callable[..., Job], cluster: Cluster) -> Callable[..., Job]:
    """``running_job(queue=, owner=, node=, workers=, gpus_per_worker=, flavor=)``: a job that
    runs now on ``node`` with its admitted flavor on its runtime row."""

    def make(
        *, queue: Queue, owner: User, node: str, flavor: Flavor | None = None, **fields: Any
    ) -> Job:
        job = make_job(queue=queue, owner=owner, **fields)
        if flavor is not None:
            job.set_acceptable_flavors([flavor])
        Job.objects.filter(pk=job.pk).update(
            state=Job.State.RUNNING,
            cluster=cluster,
            placement={node: job.workers},
            current_workers=job.workers,
            admitted_at=job.submitted_at,
            started_at=job.submitted_at,
        )
        JobRuntime.objects.create(job=job, flavor=flavor or job.acceptable_flavors()[0])
        job.refresh_from_db()
        return job

    return make


@pytest.fixture
def ledger_row(cluster: Cluster, flavor_h100: Flavor) -> Callable[..., UsageRecord]:
    """``ledger_row(job, start, end, units=1, flavor=None, closed=True)``: one ledger row as
    accounting writes it (cost left to the chargeback's pricing)."""

    def make(
        job: Job,
        start: datetime,
        end: datetime,
        units: int = 1,
        flavor: Flavor | None = None,
        closed: bool = True,
    ) -> UsageRecord:
        flavor = flavor or flavor_h100
        return UsageRecord.objects.create(
            job=job,
            team=job.queue.team,
            queue=job.queue,
            user=job.owner,
            cluster=cluster,
            flavor=flavor,
            service_class=job.service_class,
            workers=1,
            units=units,
            gpu_equivalent=Decimal(repr(flavor.gpu_equivalent)).quantize(Decimal("0.000001")),
            start=start,
            end=end,
            seconds=Decimal((end - start).total_seconds()),
            closed=closed,
        )

    return make


@pytest.fixture
def grow(
    running_job: Callable[..., Job],
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    flavor_h100: Flavor,
    flavor_mig: Flavor,
    nodes: list[object],
    h100_price: FlavorPrice,
    researcher_a: User,
) -> Callable[[int], None]:
    """``grow(n)``: n more teams, each with a queue, a budget, a running and a pending job,
    ledger rows, a preemption, then a roll-up."""
    counter = {"teams": 0}

    def add(n: int) -> None:
        now = timezone.now()
        month = now.date().replace(day=1)
        for _ in range(n):
            counter["teams"] += 1
            team = Team.objects.create(name=f"grown-{counter['teams']}")
            queue = Queue.objects.create(team=team, name="main")
            Quota.objects.create(queue=queue, flavor=flavor_h100, nominal=2)
            Quota.objects.create(queue=queue, flavor=flavor_mig, nominal=7)
            Budget.objects.create(team=team, month=month, amount=Decimal("500.00"))
            job = running_job(queue=queue, owner=researcher_a, node="n1")
            running_job(queue=queue, owner=researcher_a, node="mig-1", flavor=flavor_mig)
            pending = make_job(queue=queue, owner=researcher_a, name="waits")
            ledger_row(job, now - timedelta(hours=2), now - timedelta(minutes=1), 1)
            ledger_row(job, now - timedelta(days=40), now - timedelta(days=39), 2)
            JobEvent.objects.create(
                job=pending, kind=JobEvent.Kind.PREEMPTED, data={"reason": "reclaim"}
            )
        now = timezone.now()
        for minutes in range(60, 0, -5):  # the cycles of the last hour sampled the nodes
            sample_capacity(now - timedelta(minutes=minutes))
        record_cycle(now)

    return add


@pytest.fixture
def three_levels(
    queue_a: Queue, queue_b: Queue, team_b: Team, flavor_h100: Flavor, cohort: Cohort,
    running_job: Callable[..., Job], researcher_a: User, nodes: list[object],
) -> Queue:  # fmt: skip
    """``org`` over ``research`` (team-a/main 8, team-b/main 8; lends org at most 2, may borrow
    4) and ``biology`` (team-b/bio 6). team-a/main runs 12, team-b/bio runs 8."""
    org = Cohort.objects.create(name="org")
    cohort.parent = org
    cohort.save()
    CohortQuota.objects.create(
        cohort=cohort, flavor=flavor_h100, nominal=0, borrowing_limit=4, lending_limit=2
    )
    biology = Cohort.objects.create(name="biology", parent=org)
    bio = Queue.objects.create(team=team_b, name="bio", cohort=biology)
    Quota.objects.create(queue=bio, flavor=flavor_h100, nominal=6)
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=8)
    running_job(queue=queue_a, owner=researcher_a, node="n1", workers=1, gpus_per_worker=4)
    running_job(queue=bio, owner=researcher_a, node="n1", workers=1, gpus_per_worker=8)
    return bio
