"""Live demo traffic: the demo researchers keep submitting work while ``make demo`` runs.

``submit_traffic(now)`` is the body of the Celery beat task ``demo.tasks.submit_demo_traffic``
(scheduled only when ``DEMO_TRAFFIC=1``, which ``make demo`` sets). Each tick covers
``DEMO_TRAFFIC_INTERVAL`` real seconds, which are ``SIMULATION_SPEED`` times as many simulated
seconds: the rates, day/night pattern and bursts of ``demo.workload`` are applied in that
simulated time (at speed 60 a simulated day passes in 24 minutes), so queues fill and drain.
Bounded: a queue that already has ``DEMO_MAX_PENDING`` pending jobs gets nothing more.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Count

from demo.submit import Submitter
from demo.workload import DEMO_SEED, draw_requests
from queues.models import Job
from queues.services import queue_cycle
from queues.services.jobs import cycles_run_by_caller

DEMO_MAX_PENDING = 8  # pending jobs per queue above which the demo submits nothing more there
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


WEEKDAY = datetime(2026, 11, 23, tzinfo=UTC)  # a Monday: the live demo has no weekends


def simulated_clock(now: datetime, speed: float) -> datetime:
    """The demo's simulated time of day at ``now`` (time since 1970 x speed), on a weekday."""
    simulated = EPOCH + (now - EPOCH) * speed
    return WEEKDAY + (simulated - simulated.replace(hour=0, minute=0, second=0, microsecond=0))


def submit_traffic(now: datetime, *, force: bool = False) -> list[Job]:
    """Submit one tick of demo work; nothing unless ``DEMO_TRAFFIC`` is on (or ``force``)."""
    if not (settings.DEMO_TRAFFIC or force):
        return []
    speed = float(settings.SIMULATION_SPEED)
    span = timedelta(seconds=settings.DEMO_TRAFFIC_INTERVAL * speed)
    rng = random.Random(f"{DEMO_SEED}:{now.isoformat()}")
    requests = draw_requests(rng, now, span, clock=simulated_clock(now, speed))
    if not requests:
        return []
    submitter = Submitter()
    pending = dict(
        Job.objects.filter(state=Job.State.PENDING)
        .values_list("queue_id")
        .annotate(n=Count("pk"))
        .values_list("queue_id", "n")
    )
    jobs = []
    with cycles_run_by_caller():  # one cycle for the whole tick, queued below
        for request in requests:
            queue = submitter.queue_of(request)
            if queue is None or pending.get(queue.pk, 0) >= DEMO_MAX_PENDING:
                continue
            jobs.append(submitter.submit(request, now))
            pending[queue.pk] = pending.get(queue.pk, 0) + 1
    if jobs:
        queue_cycle()
    return jobs
