"""Live demo traffic (Celery beat, only with DEMO_TRAFFIC on) and the home page's guide."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.test import Client, override_settings

from demo.tasks import submit_demo_traffic
from demo.traffic import DEMO_MAX_PENDING, simulated_clock, submit_traffic
from demo.workload import DEMO_SEED, draw_requests
from queues.models import Cluster, Job

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo_world(db: None) -> None:
    call_command("seed_demo", history=0, stdout=StringIO(), allow_production=True)


def weekday_daytime_tick() -> datetime:
    """A real moment whose simulated time (speed 60) is a weekday at 10:00 UTC."""
    moment = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    while not (
        simulated_clock(moment, 60).weekday() < 5 and simulated_clock(moment, 60).hour == 10
    ):
        moment += timedelta(seconds=15)
    return moment


@override_settings(DEMO_TRAFFIC=False)
def test_traffic_task_submits_nothing_when_demo_traffic_is_off(demo_world: None) -> None:
    assert submit_demo_traffic() == 0
    assert not Job.objects.exists()


@override_settings(DEMO_TRAFFIC=True, DEMO_TRAFFIC_INTERVAL=600, SIMULATION_SPEED=60)
def test_traffic_task_submits_jobs_of_the_demo_researchers_when_on(demo_world: None) -> None:
    assert submit_demo_traffic() > 0  # 600 s x 60: ten simulated hours of work
    owners = set(Job.objects.values_list("owner__username", flat=True))
    assert owners and owners <= {"alice", "bob", "carol", "dave"}
    assert set(Job.objects.values_list("state", flat=True)) == {"pending"}


@override_settings(DEMO_TRAFFIC=True, DEMO_TRAFFIC_INTERVAL=3600, SIMULATION_SPEED=60)
def test_traffic_never_fills_a_queue_beyond_the_pending_cap(demo_world: None) -> None:
    tick = weekday_daytime_tick()
    for index in range(6):  # no cycle runs here: nothing drains
        submit_traffic(tick + timedelta(seconds=15 * index))
    per_queue = Job.objects.values("queue").annotate(n=Count("pk")).values_list("n", flat=True)
    assert max(per_queue) == DEMO_MAX_PENDING


def test_daytime_brings_more_work_than_night() -> None:
    monday = datetime(2026, 11, 23, tzinfo=UTC)
    day = night = 0
    for week in range(20):
        start = monday + timedelta(weeks=week)
        rng = random.Random(DEMO_SEED + week)
        day += len(draw_requests(rng, start + timedelta(hours=12), timedelta(hours=4)))
        night += len(draw_requests(rng, start + timedelta(hours=1), timedelta(hours=4)))
    assert day > 2 * night


def test_the_same_seed_draws_the_same_work() -> None:
    start = datetime(2026, 11, 23, 9, tzinfo=UTC)
    first = draw_requests(random.Random(DEMO_SEED), start, timedelta(hours=6))
    again = draw_requests(random.Random(DEMO_SEED), start, timedelta(hours=6))
    assert first == again and first


@pytest.mark.parametrize("value, scheduled", [("1", True), ("0", False)])
def test_beat_schedules_demo_traffic_only_with_demo_traffic_set(
    value: str, scheduled: bool
) -> None:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print('demo-traffic' in settings.CELERY_BEAT_SCHEDULE)"
    )
    env = os.environ | {"DEMO_TRAFFIC": value, "DJANGO_SETTINGS_MODULE": "gpuplatform.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(scheduled)


@pytest.mark.parametrize(
    "username, advice",
    [
        ("alice", "Submit a job and read why it waits"),
        ("admin", "Lower a quota and watch the reclaim"),
        ("fiona", "Export last month&#x27;s chargeback"),
    ],
)
def test_home_page_tells_each_demo_role_what_to_try(
    demo_world: None, username: str, advice: str
) -> None:
    client = Client()
    client.force_login(User.objects.get(username=username))
    page = client.get("/").content.decode()
    assert advice in page


def test_finance_guide_links_to_last_months_chargeback(demo_world: None) -> None:
    client = Client()
    client.force_login(User.objects.get(username="fiona"))
    page = client.get("/").content.decode()
    assert "/api/v1/chargeback/?start=" in page
    assert "format=csv" in page
    assert "Lower a quota" not in page and "Submit a job" not in page


def test_seed_demo_refuses_a_negative_history(demo_world: None) -> None:
    with pytest.raises(CommandError, match="--history"):
        call_command("seed_demo", history=-1, stdout=StringIO(), allow_production=True)


def test_history_is_never_replayed_onto_a_real_cluster(demo_world: None) -> None:
    Cluster.objects.create(name="prod", driver=Cluster.Driver.KUBERNETES)
    out = StringIO()
    call_command("seed_demo", history=1, stdout=out, allow_production=True)
    assert "real (non-simulated) cluster" in out.getvalue()
    assert not Job.objects.exists()
