"""Render time of the web UI's main pages with 10,000 jobs in the database.

    .venv/bin/python benchmarks/ui_pages_bench.py                 # 10,000 jobs, 5 runs a page
    .venv/bin/python benchmarks/ui_pages_bench.py --jobs 2000 --runs 3

Builds a fresh SQLite database under var/ (the demo world of ``seed_demo`` plus ``--jobs`` jobs:
mostly finished, some running, a few thousand pending), runs one real scheduling cycle so the
pending jobs carry the engine's why-pending text, then renders each page through Django's test
client (the whole request: middleware, views, queries, templates) and prints the median and
worst time and the number of queries. Target: every page under 300 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from page_timing import measure, setup_django  # noqa: E402 (after the path set-up)

TARGET_MS = 300.0


def seed(jobs: int, pending_share: float) -> dict[str, Any]:
    from django.core.management import call_command
    from django.utils import timezone

    from queues import tasks
    from queues.models import (
        Flavor,
        Job,
        JobEvent,
        JobFlavor,
        JobRuntime,
        Node,
        Queue,
        ServiceClass,
    )
    from queues.services import run_cycle

    tasks.run_scheduling_cycle.delay = lambda: None  # no broker: this script runs the cycle
    call_command("migrate", verbosity=0)
    call_command("seed_demo", history=0, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    from django.contrib.auth import get_user_model

    users = list(get_user_model().objects.filter(username__in=["alice", "bob"]))
    queues = list(Queue.objects.select_related("team"))
    classes = list(ServiceClass.objects.all())
    h100 = Flavor.objects.get(name="h100")
    nodes = list(Node.objects.filter(capacity__has_key="h100"))
    now = timezone.now()
    pending = int(jobs * pending_share)
    running = min(24, jobs - pending)
    rows = []
    for i in range(jobs):
        user = users[i % len(users)]
        queue = queues[0] if user.username == "alice" else queues[1]
        state = "pending" if i < pending else "running" if i < pending + running else "succeeded"
        if i % 7 == 0 and state == "succeeded":
            state = "cancelled"
        job = Job(
            owner=user,
            queue=queue,
            service_class=classes[i % len(classes)],
            name=f"job-{i}",
            image="pytorch/pytorch:2.4.0",
            command=["python", "train.py"],
            workers=1 + (i % 3 == 0),
            gpus_per_worker=1 + i % 4,
            state=state,
            submitted_at=now - timedelta(seconds=jobs - i),
            estimated_runtime=3600,
            duration_hint=3600,
        )
        if state == "running":
            node = nodes[(i - pending) % len(nodes)]
            job.workers, job.gpus_per_worker, job.current_workers = 1, 1, 1
            job.cluster_id = node.cluster_id
            job.placement = {node.name: 1}
            job.started_at = job.admitted_at = now - timedelta(minutes=5)
        elif state != "pending":
            job.started_at = job.submitted_at + timedelta(seconds=30)
            job.finished_at = job.started_at + timedelta(hours=1)
        rows.append(job)
    created = Job.objects.bulk_create(rows, batch_size=1000)
    JobFlavor.objects.bulk_create(
        (JobFlavor(job=job, flavor=h100, rank=0) for job in created), batch_size=2000
    )
    JobRuntime.objects.bulk_create(
        (JobRuntime(job=job, flavor=h100 if job.state == "running" else None) for job in created),
        batch_size=2000,
    )
    JobEvent.objects.bulk_create(
        (
            JobEvent(
                job=job, at=job.submitted_at, kind=JobEvent.Kind.SUBMITTED, message="Submitted."
            )
            for job in created
        ),
        batch_size=2000,
    )
    started = time.perf_counter()
    run_cycle(now=now + timedelta(seconds=1))
    cycle_ms = (time.perf_counter() - started) * 1000
    return {
        "pending": Job.objects.filter(state="pending", queue=queues[0]).first(),
        "running": Job.objects.filter(state__in=["admitted", "running"]).first(),
        "queue": queues[0],
        "flavor": h100,
        "class": classes[0],
        "cycle_ms": cycle_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--pending-share", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", type=Path, default=ROOT / "var" / "ui-bench.sqlite3")
    args = parser.parse_args(argv)
    args.db.parent.mkdir(parents=True, exist_ok=True)
    args.db.unlink(missing_ok=True)
    setup_django(args.db)

    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    started = time.perf_counter()
    world = seed(args.jobs, args.pending_share)
    print(f"seeded {args.jobs} jobs in {time.perf_counter() - started:.1f} s; "
          f"one live cycle took {world['cycle_ms']:.0f} ms")  # fmt: skip
    estimate = (
        f"{reverse('submit-estimate')}?queue={world['queue'].pk}&service_class="
        f"{world['class'].pk}&flavor={world['flavor'].pk}&workers=1&gpus_per_worker=2"
    )
    pages = [
        ("alice", "jobs list", reverse("jobs")),
        ("alice", "jobs list, pending, by queue", f"{reverse('jobs')}?state=pending&sort=-queue"),
        ("admin", "jobs list (all teams), page 100", f"{reverse('jobs')}?page=100"),
        ("alice", "job detail (pending)", reverse("job-detail", args=[world["pending"].pk])),
        ("alice", "job detail (running)", reverse("job-detail", args=[world["running"].pk])),
        ("alice", "queues", reverse("queues")),
        ("alice", "queue detail", reverse("queue-detail", args=[world["queue"].pk])),
        ("alice", "submit form", reverse("submit")),
        ("alice", "live estimate (JSON, runs the engine)", estimate),
        ("admin", "manage: queues", reverse("manage-queues")),
        ("admin", "manage: queue + quotas", reverse("manage-queue-edit", args=[world["queue"].pk])),
        ("admin", "manage: teams", reverse("manage-teams")),
    ]
    clients = {}
    for username in ("alice", "admin"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        clients[username] = client

    print(f"{'page':<42} {'median ms':>10} {'max ms':>8} {'queries':>8}  status")
    worst = 0.0
    for user, label, url in pages:
        median, slowest, queries, status = measure(clients[user], url, args.runs)
        worst = max(worst, median)
        flag = "" if median < TARGET_MS else "  over target"
        print(f"{label:<42} {median:>10.1f} {slowest:>8.1f} {queries:>8}  {status}{flag}")
    print(f"slowest median {worst:.1f} ms (target < {TARGET_MS:.0f} ms)")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
