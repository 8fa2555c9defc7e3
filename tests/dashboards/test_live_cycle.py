"""The rollups fed by the real live cycle: jobs run on the simulated cluster, the cycle writes
the accounting ledger, `record_cycle` after each cycle rolls it up -- and the dashboards show it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import Sum
from django.test import Client
from django.urls import reverse

from accounting.models import UsageRecord
from dashboards import data
from dashboards.models import FIVE_MINUTES, ONE_HOUR, UsageRollup
from dashboards.rollup import record_cycle
from queues.models import Cluster, Flavor, Node, Queue, ServiceClass
from queues.services import run_cycle, submit_job
from tests.dashboards.conftest import T0

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)
    settings.SIMULATION_SPEED = 1.0
    settings.SIMULATION_FAILURE_RATE = 0.0


@pytest.fixture
def sim(flavor_h100: Flavor) -> Cluster:
    cluster = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8})
    return cluster


def test_cycles_then_record_cycle_roll_up_exactly_what_the_ledger_holds(
    sim: Cluster,
    queue_a: Queue,
    queue_b: Queue,
    researcher_a: User,
    researcher_b: User,
    service_class_std: ServiceClass,
    flavor_h100: Flavor,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    for owner, queue, gpus in ((researcher_a, queue_a, 4), (researcher_b, queue_b, 2)):
        submit_job(
            owner=owner, queue=queue, service_class=service_class_std, name="train",
            image="pytorch/pytorch:2.4.0", flavors=[flavor_h100], workers=1,
            gpus_per_worker=gpus, now=T0, duration_hint=3 * 3600,
        )  # fmt: skip
    for minute in range(0, 50, 7):  # cycles every 7 minutes
        moment = T0 + timedelta(minutes=minute)
        with django_capture_on_commit_callbacks(execute=True):
            run_cycle(now=moment)
        record_cycle(moment)
    ledger = sum(
        r.units * float(r.gpu_equivalent) * (r.end - r.start).total_seconds()
        for r in UsageRecord.objects.all()
    )
    assert ledger > 0
    for size in (FIVE_MINUTES, ONE_HOUR):
        rolled = UsageRollup.objects.filter(bucket_seconds=size).aggregate(
            total=Sum("gpu_equivalent_seconds")
        )["total"]
        assert rolled == pytest.approx(ledger)
    end = T0 + timedelta(minutes=49)
    series = data.usage_series(end, data.RANGES["hour"])
    last_full = series.buckets.index(T0 + timedelta(minutes=40))
    assert series.stacks["team-a"][last_full] == pytest.approx(4.0)
    assert series.stacks["team-b"][last_full] == pytest.approx(2.0)
    assert series.capacity[last_full] == 8.0


def test_dashboards_render_on_an_empty_platform(client: Client, platform_admin: User) -> None:
    client.force_login(platform_admin)
    for slug in ("cluster", "quotas", "mig", "health", "charges"):
        response = client.get(reverse("dashboard", args=[slug]))
        assert response.status_code == 200, slug
    charges = client.get(reverse("dashboard-data", args=["charges"])).json()
    assert "No team has a budget for this month." in charges["notes"]
    mig = client.get(reverse("dashboard-data", args=["mig"])).json()
    assert mig["notes"] == ["No node exposes MIG slices."]


def test_charges_say_which_price_is_missing_instead_of_failing(
    client: Client,
    platform_admin: User,
    make_job: Callable[..., Any],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    from django.utils import timezone

    now = timezone.now()
    ledger_row(make_job(queue=queue_a, owner=researcher_a), now - timedelta(hours=1), now)
    client.force_login(platform_admin)
    body = client.get(reverse("dashboard-data", args=["charges"])).json()
    assert body["charts"] == []
    assert body["notes"][0].startswith("Charges cannot be computed:")
    assert "h100" in body["notes"][0]
