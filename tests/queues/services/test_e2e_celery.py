"""End to end on the real stack: a Celery worker with beat (a separate process) runs the cycles
against the configured broker and the test database, on the simulated cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from queues.models import Job, JobEvent, Node
from queues.services import submit_job
from tests.queues.services.helpers import build_world

pytestmark = pytest.mark.e2e

DEADLINE_SECONDS = 60
# events after which a job's GPUs are free
RELEASING = {JobEvent.Kind.SUCCEEDED, JobEvent.Kind.FAILED, JobEvent.Kind.REQUEUED}


def database_url() -> str:
    """The URL of the database this test runs on (the test database), for the worker."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(db["NAME"])
        assert name != ":memory:" and "mode=memory" not in name, "the test DB must be a file"
        return f"sqlite:///{Path(name).resolve()}"
    user = quote(db.get("USER") or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}{port}/{db['NAME']}"


@pytest.fixture
def worker(transactional_db, tmp_path):
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        VAR_DIR=str(tmp_path),  # its own filesystem broker folders and beat schedule
        CYCLE_INTERVAL="1",
        CELERY_QUEUE=f"e2e-{uuid.uuid4().hex[:12]}",  # no other worker on a shared Redis takes it
        SIMULATION_SPEED="3600",  # an hour of simulated work per real second
        SIMULATION_FAILURE_RATE="0",
        DJANGO_SETTINGS_MODULE="gpuplatform.settings",
    )
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "gpuplatform",
            "worker",
            "-B",
            "--pool=solo",
            "--loglevel=INFO",
            f"--schedule={tmp_path / 'celerybeat-schedule'}",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


def test_beat_driven_cycles_admit_and_finish_jobs_without_overcommitting_nodes(worker, tmp_path):
    world = build_world()
    sizes = [(8, 2), (4, 1), (8, 1), (2, 3), (4, 2), (1, 4)]  # (gpus per worker, workers)
    jobs = [
        submit_job(
            owner=world.alice if i % 2 == 0 else world.bob,
            queue=world.queue_a if i % 2 == 0 else world.queue_b,
            service_class=world.standard,
            name=f"e2e-{i}",
            image="busybox:1.36",
            flavors=[world.h100],
            workers=workers,
            gpus_per_worker=gpus,
            duration_hint=3600,
        )
        for i, (gpus, workers) in enumerate(sizes)
    ]

    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        states = set(
            Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("state", flat=True)
        )
        if states == {"succeeded"} or worker.poll() is not None:
            break
        time.sleep(0.5)
    log = (tmp_path / "worker.log").read_text()
    assert worker.poll() is None, f"the worker died:\n{log[-3000:]}"
    finished = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "state"))
    assert set(finished.values()) == {"succeeded"}, f"{finished}\n{log[-3000:]}"
    assert "scheduling cycle skipped" in log or "cycle at" in log

    for job in jobs:
        history = list(job.events.order_by("at", "pk").values_list("kind", flat=True))
        assert history[0] == "submitted"
        assert history[-3:] == ["admitted", "started", "succeeded"], history

    capacity = {n.name: n.capacity["h100"] for n in Node.objects.all()}
    used: dict[str, int] = defaultdict(int)
    holding: dict[int, dict[str, int]] = {}
    for event in JobEvent.objects.order_by("at", "pk"):
        if event.kind == "admitted":
            holding[event.job_id] = event.data["placement"]
            for node, units in event.data["placement"].items():
                used[node] += units
                assert used[node] <= capacity[node], f"{node} overcommitted at {event.at}"
        elif event.kind in RELEASING and event.job_id in holding:
            for node, units in holding.pop(event.job_id).items():
                used[node] -= units
