"""Load time of every dashboard page and JSON endpoint with a month of usage for 50 teams.

    .venv/bin/python benchmarks/dashboards_bench.py                 # 50 teams, 30 days, 5 runs
    .venv/bin/python benchmarks/dashboards_bench.py --teams 20 --days 7 --runs 3

Builds a fresh SQLite database under var/ (the demo world of ``seed_demo`` plus ``--teams``
teams, each with a queue, quotas, a budget, and a month of finished jobs whose ledger rows are
closed and priced as accounting writes them; some jobs running now; preemption events), rolls the
ledger up with ``rebuild_usage_rollups`` (timed), writes one capacity sample per 5 minutes (last
3 days) and per hour (the month), then loads each dashboard through Django's test client (the
whole request) and prints the median and worst time and the number of queries.
Target: every page and endpoint under 500 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from page_timing import measure, setup_django  # noqa: E402 (after the path set-up)

TARGET_MS = 500.0
PRICE = Decimal("2.00")


def seed(teams: int, days: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from accounting.models import Budget, FlavorPrice, UsageRecord
    from dashboards.models import FIVE_MINUTES, ONE_HOUR, CapacitySample
    from dashboards.rollup import floor_to
    from queues.models import (
        Cluster,
        Flavor,
        Job,
        JobEvent,
        JobFlavor,
        JobRuntime,
        Membership,
        Node,
        Queue,
        Quota,
        ServiceClass,
        Team,
    )

    call_command("migrate", verbosity=0)
    call_command("seed_demo", history=0, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    rng = random.Random(8)
    now = timezone.now()
    start = now - timedelta(days=days)
    flavors = list(Flavor.objects.all())
    whole = [f for f in flavors if not f.is_mig]
    for flavor in whole:
        FlavorPrice.objects.get_or_create(
            flavor=flavor,
            effective_from=start - timedelta(days=400),
            defaults={"price_per_unit_hour": PRICE},
        )
    classes = list(ServiceClass.objects.all())
    cluster = Cluster.objects.first()
    assert cluster is not None
    nodes = list(Node.objects.filter(cluster=cluster))
    user = get_user_model().objects.get(username="alice")
    month = now.date().replace(day=1)
    team_rows = Team.objects.bulk_create(Team(name=f"bench-{i:02d}") for i in range(teams))
    for team in team_rows:
        Membership.objects.create(user=user, team=team)
    queues = Queue.objects.bulk_create(
        Queue(team=team, name="main", decayed_usage=rng.uniform(0, 5e6)) for team in team_rows
    )
    Quota.objects.bulk_create(
        Quota(queue=q, flavor=f, nominal=rng.randint(0, 8)) for q in queues for f in flavors
    )
    Budget.objects.bulk_create(
        Budget(team=team, month=month, amount=Decimal(rng.randint(500, 5000))) for team in team_rows
    )
    jobs, segments = [], []
    for queue in queues:
        moment = start
        while moment < now - timedelta(hours=1):
            hours = rng.uniform(1, 12)
            flavor = rng.choice(flavors)
            units = rng.choice([1, 2, 4, 8]) if not flavor.is_mig else rng.randint(1, 7)
            submitted = moment - timedelta(minutes=rng.uniform(0, 90))
            end = min(moment + timedelta(hours=hours), now - timedelta(minutes=1))
            cls = rng.choice(classes)
            jobs.append(
                Job(
                    owner=user, queue=queue, service_class=cls, name="train", image="img",
                    state="succeeded", submitted_at=submitted, admitted_at=moment,
                    started_at=moment, finished_at=end, gpus_per_worker=units,
                    cluster=cluster, placement={},
                )
            )  # fmt: skip
            segments.append((queue, flavor, cls, units, moment, end))
            moment += timedelta(hours=hours * rng.uniform(0.3, 1.2))
    created = Job.objects.bulk_create(jobs, batch_size=2000)
    records = []
    for job, (queue, flavor, cls, units, begin, end) in zip(created, segments, strict=True):
        seconds = Decimal((end - begin).total_seconds())
        geq = Decimal(repr(flavor.gpu_equivalent)).quantize(Decimal("0.000001"))
        price = PRICE * (geq if flavor.is_mig else 1)
        hours = seconds / 3600
        records.append(
            UsageRecord(
                job=job, team_id=queue.team_id, queue=queue, user=user, cluster=cluster,
                flavor=flavor, service_class=cls, workers=1, units=units, gpu_equivalent=geq,
                start=begin, end=end, seconds=seconds, closed=True,
                unit_hours=(units * hours).quantize(Decimal("0.000001")),
                gpu_equivalent_hours=(units * geq * hours).quantize(Decimal("0.000001")),
                cost=(units * price * cls.price_multiplier * hours).quantize(Decimal("0.01")),
                currency="USD",
            )
        )  # fmt: skip
    UsageRecord.objects.bulk_create(records, batch_size=2000)
    JobFlavor.objects.bulk_create(
        (
            JobFlavor(job=job, flavor=seg[1], rank=0)
            for job, seg in zip(created, segments, strict=True)
        ),
        batch_size=2000,
    )
    JobEvent.objects.bulk_create(
        (
            JobEvent(
                job=job, kind=JobEvent.Kind.PREEMPTED, at=job.finished_at,
                data={"reason": rng.choice(["reclaim", "fair-share", "priority"])},
            )
            for job in created[:: max(1, len(created) // 400)]
        ),
        batch_size=2000,
    )  # fmt: skip
    # some jobs holding GPUs now, on the demo nodes (for the slice map and utilization)
    for i, node in enumerate(nodes):
        for name, units in node.capacity.items():
            flavor = next(f for f in flavors if f.name == name)
            job = Job.objects.create(
                owner=user, queue=queues[i % len(queues)], service_class=classes[0],
                name="now", image="img", state="running", cluster=cluster,
                placement={node.name: 1}, gpus_per_worker=max(1, units // 2), current_workers=1,
                submitted_at=now - timedelta(minutes=20), started_at=now - timedelta(minutes=5),
            )  # fmt: skip
            JobFlavor.objects.create(job=job, flavor=flavor, rank=0)
            JobRuntime.objects.create(job=job, flavor=flavor)
    capacity = [
        (flavor, sum(n.capacity.get(flavor.name, 0) for n in nodes) * flavor.gpu_equivalent)
        for flavor in flavors
    ]
    samples = []
    for size, span in ((FIVE_MINUTES, timedelta(days=min(days, 3))), (ONE_HOUR, now - start)):
        bucket = floor_to(now - span, size)
        while bucket <= now:
            for flavor, total in capacity:
                samples.append(
                    CapacitySample(
                        bucket_start=bucket, bucket_seconds=size, cluster=cluster, flavor=flavor,
                        capacity_gpu_equivalent=total, failed_gpu_equivalent=0.0,
                    )
                )  # fmt: skip
            bucket += timedelta(seconds=size)
    CapacitySample.objects.bulk_create(samples, batch_size=5000)
    return {"now": now, "records": len(records), "team": team_rows[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", type=Path, default=ROOT / "var" / "dashboards-bench.sqlite3")
    args = parser.parse_args(argv)
    args.db.parent.mkdir(parents=True, exist_ok=True)
    args.db.unlink(missing_ok=True)
    setup_django(args.db)

    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from dashboards.models import UsageRollup
    from dashboards.rollup import rebuild_usage_rollups, roll_up_usage

    started = time.perf_counter()
    world = seed(args.teams, args.days)
    print(f"seeded {args.teams} teams, {world['records']} ledger rows over {args.days} days "
          f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
    started = time.perf_counter()
    rebuild_usage_rollups(world["now"])
    print(f"rollup rebuild of the whole ledger: {time.perf_counter() - started:.1f} s, "
          f"{UsageRollup.objects.count()} rollup rows")  # fmt: skip
    started = time.perf_counter()
    roll_up_usage(world["now"])
    print(f"incremental roll-up (what each cycle pays): "
          f"{(time.perf_counter() - started) * 1000:.1f} ms")  # fmt: skip

    clients = {}
    for username in ("admin", "alice"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        clients[username] = client
    team = f"team={world['team'].pk}"
    targets: list[tuple[str, str, str]] = []
    for slug in ("cluster", "quotas", "mig", "health", "charges", "team"):
        user = "alice" if slug == "team" else "admin"
        ranges = ["day", "month"] if slug in ("cluster", "team") else [""]
        for span in ranges:
            query = "&".join(q for q in (f"range={span}" if span else "", team if slug == "team"
                                          else "") if q)  # fmt: skip
            suffix = f"?{query}" if query else ""
            label = f"{slug}{' ' + span if span else ''}"
            targets.append((user, f"{label} page", reverse("dashboard", args=[slug]) + suffix))
            targets.append((user, f"{label} JSON", reverse("dashboard-data", args=[slug]) + suffix))
    print(f"{'dashboard':<28} {'median ms':>10} {'max ms':>8} {'queries':>8}  status")
    worst = 0.0
    for user, label, url in targets:
        median, slowest, queries, status = measure(clients[user], url, args.runs)
        worst = max(worst, median)
        flag = "" if median < TARGET_MS else "  over target"
        print(f"{label:<28} {median:>10.1f} {slowest:>8.1f} {queries:>8}  {status}{flag}")
    print(f"slowest median {worst:.1f} ms (target < {TARGET_MS:.0f} ms)")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
