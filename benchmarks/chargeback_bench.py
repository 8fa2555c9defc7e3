"""Benchmark chargeback and the allocation API on a large usage ledger (SQLite or PostgreSQL).

    .venv/bin/python benchmarks/chargeback_bench.py --rows 1000000          # SQLite
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_bench \\
        .venv/bin/python benchmarks/chargeback_bench.py --rows 1000000

Without DATABASE_URL the database is a SQLite file of its own, $VAR_DIR/chargeback-bench.sqlite3
(never the development database). A PostgreSQL database is created if it is missing. Both are
migrated, then (unless the ledger already holds exactly the requested generated rows; --rebuild
forces it) ALL accounting rows and the benchmark's own `cbbench-*` teams, users and jobs are
replaced with a generated year of usage (2025, UTC): `--rows` ledger rows (closed and priced,
never crossing a month boundary, as the accrual writes them) plus `--open` open rows priced at
query time, over 40 teams (queues in 5 cohorts, 5 queues without one), 400 users, jobs with a
`project` label (one job in 10 without it), 4 flavors (two MIG), 3 service classes and 3
clusters, loaded with COPY (PostgreSQL) or bulk_create (SQLite). Then prints:

- the chargeback REST request for one month grouped by team and flavor (JSON), best and median
  of `--repeat` runs (target: under 2 s);
- the streamed CSV for the whole year grouped by team, user and flavor: seconds, lines, bytes,
  and the peak Python memory while streaming (tracemalloc) next to the same for one month, to
  show that memory stays flat as the period grows (the aggregation runs in the database and the
  rows are streamed from a server-side cursor);
- the chargeback for June grouped by team (the issue's closing numbers);
- the allocation API (GET /api/v1/allocation/) for June: one set by team, by day (30 sets) by
  team, by department and by label:project, by team,flavor, and with shareIdle (a request the
  code under test refuses is printed as such, so the script also times older code).

Nothing here is a test: it prints numbers. DESTROYS the accounting data of the database it uses.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
YEAR = 2025
PREFIX = "cbbench"
FLAVORS = [  # name, resource, gpu_model, gpu_equivalent, price per unit-hour (None: MIG parent)
    ("cb-h100", "nvidia.com/gpu", "CB-H100", 1.0, Decimal("2.50")),
    ("cb-a100", "nvidia.com/gpu", "CB-A100", 1.0, Decimal("1.20")),
    ("cb-h100-1g.10gb", "nvidia.com/mig-1g.10gb", "CB-H100", 1 / 7, None),
    ("cb-h100-3g.40gb", "nvidia.com/mig-3g.40gb", "CB-H100", 3 / 7, Decimal("1.00")),
]
CLASSES = [("cb-spot", Decimal("0.5")), ("cb-standard", Decimal("1")), ("cb-premium", Decimal("2"))]


def ensure_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}")


def default_url() -> str:
    var = Path(os.environ.get("VAR_DIR", ROOT / "var"))
    return f"sqlite:///{var / 'chargeback-bench.sqlite3'}"


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def month_bounds(moment: datetime) -> tuple[datetime, datetime]:
    first = datetime(moment.year, moment.month, 1, tzinfo=UTC)
    nxt = (first + timedelta(days=32)).replace(day=1)
    return first, nxt


COLUMNS = (
    "job_id",
    "team_id",
    "queue_id",
    "user_id",
    "cluster_id",
    "flavor_id",
    "service_class_id",
    "workers",
    "units",
    "gpu_equivalent",
    "start",
    "end",
    "seconds",
    "closed",
    "unit_hours",
    "gpu_equivalent_hours",
    "cost",
    "currency",
)


def build(rows: int, open_rows: int, seed: int) -> None:
    """Replace the accounting data with a generated year; COPY (PostgreSQL) or bulk_create."""
    from django.contrib.auth.models import User
    from django.db import connection, transaction

    from accounting.models import (
        Budget,
        ClassMultiplier,
        FlavorPrice,
        Statement,
        UsageRecord,
    )
    from queues.models import Cluster, Cohort, Flavor, Job, Queue, ServiceClass, Team

    rng = random.Random(seed)
    started = time.perf_counter()
    with transaction.atomic():
        UsageRecord.objects.all().delete()
        Statement.objects.all().delete()
        Budget.objects.all().delete()
        FlavorPrice.objects.all().delete()
        ClassMultiplier.objects.all().delete()
        Job.objects.filter(queue__team__name__startswith=PREFIX).delete()
        Queue.objects.filter(team__name__startswith=PREFIX).delete()
        Team.objects.filter(name__startswith=PREFIX).delete()
        Cohort.objects.filter(name__startswith=PREFIX).delete()
        User.objects.filter(username__startswith=PREFIX).delete()
        Flavor.objects.filter(name__startswith="cb-").delete()
        ServiceClass.objects.filter(name__startswith="cb-").delete()
        Cluster.objects.filter(name__startswith="cb-").delete()

        flavors = [
            Flavor.objects.create(name=n, resource=r, gpu_model=m, gpu_equivalent=g)
            for n, r, m, g, _ in FLAVORS
        ]
        since = datetime(2020, 1, 1, tzinfo=UTC)
        for flavor, (_, _, _, _, price) in zip(flavors, FLAVORS, strict=True):
            if price is not None:
                FlavorPrice.objects.create(
                    flavor=flavor, price_per_unit_hour=price, effective_from=since
                )
        classes = [ServiceClass.objects.create(name=n, price_multiplier=m) for n, m in CLASSES]
        clusters = [Cluster.objects.create(name=f"cb-{i}") for i in range(3)]
        cohorts = [Cohort.objects.create(name=f"{PREFIX}-dept-{i}") for i in range(5)]
        teams = [Team.objects.create(name=f"{PREFIX}-{i:02d}") for i in range(40)]
        queues = [  # the last 5 teams' queues have no cohort (department __unallocated__)
            Queue.objects.create(team=t, name="main", cohort=cohorts[i % 5] if i < 35 else None)
            for i, t in enumerate(teams)
        ]
        users = User.objects.bulk_create(
            [User(username=f"{PREFIX}-user-{i:03d}") for i in range(400)]
        )
        job_count = max(1, rows // 50)
        jobs = Job.objects.bulk_create(
            [
                Job(
                    owner=users[i % len(users)],
                    queue=queues[(i % len(users)) % len(queues)],
                    service_class=classes[i % len(classes)],
                    name="cb-bench",
                    image="bench",
                    state="succeeded",
                    spec={"labels": {"project": f"p{i % 25}"}} if i % 10 else {},
                )
                for i in range(job_count)
            ],
            batch_size=5000,
        )
    print(f"world: {len(jobs)} jobs ({time.perf_counter() - started:.1f} s)")

    started = time.perf_counter()
    generated = ledger_rows(rows, open_rows, rng, jobs, queues, users, flavors, clusters, classes)
    if connection.vendor == "postgresql":
        raw = connection.cursor().connection  # psycopg 3 connection
        names = ", ".join(f'"{name}"' for name in COLUMNS)
        copying = f"COPY accounting_usagerecord ({names}) FROM STDIN"
        with transaction.atomic(), raw.cursor() as cursor, cursor.copy(copying) as copy:
            for row in generated:
                copy.write_row(row)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE accounting_usagerecord")
        how = "COPY"
    else:
        with transaction.atomic():
            batch: list[UsageRecord] = []
            for row in generated:
                batch.append(UsageRecord(**dict(zip(COLUMNS, row, strict=True))))
                if len(batch) == 10_000:
                    UsageRecord.objects.bulk_create(batch)
                    batch = []
            UsageRecord.objects.bulk_create(batch)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        how = "bulk_create"
    written = UsageRecord.objects.count()
    opened = UsageRecord.objects.filter(closed=False).count()
    print(
        f"ledger: {written} rows ({opened} open) loaded with {how} in "
        f"{time.perf_counter() - started:.1f} s"
    )


def ledger_rows(  # type: ignore[no-untyped-def]
    rows: int, open_rows: int, rng: random.Random, jobs, queues, users, flavors, clusters, classes
) -> Iterator[tuple[Any, ...]]:
    """The generated ledger rows, as tuples of COLUMNS."""
    price = {f.pk: p for f, (*_, p) in zip(flavors, FLAVORS, strict=True)}
    parent_price = FLAVORS[0][4]
    geq = {f.pk: Decimal(repr(f.gpu_equivalent)).quantize(Decimal("0.000001")) for f in flavors}
    mult = {c.pk: m for c, (_, m) in zip(classes, CLASSES, strict=True)}
    year_start = datetime(YEAR, 1, 1, tzinfo=UTC)
    year_end = datetime(YEAR + 1, 1, 1, tzinfo=UTC)
    year_hours = 365 * 24
    per_job = rows // len(jobs) + 1
    written = opened = 0
    for index, job in enumerate(jobs):
        queue = queues[(index % len(users)) % len(queues)]
        flavor = flavors[rng.randrange(len(flavors))]
        cluster = clusters[rng.randrange(len(clusters))]
        moment = year_start + timedelta(hours=rng.uniform(0, year_hours / per_job))
        segments = min(per_job, rows - written)
        for number in range(segments):
            workers = rng.choice((1, 1, 2, 4, 8))
            units = workers * (1 if flavor.gpu_equivalent == 1 else 2)
            hours = rng.uniform(0.2, 6.0)
            end = min(moment + timedelta(hours=hours), month_bounds(moment)[1], year_end)
            if end <= moment:
                break
            is_open = opened < open_rows and number == segments - 1
            seconds = Decimal((end - moment).total_seconds()).quantize(Decimal("0.000001"))
            unit_hours = (units * seconds / 3600).quantize(Decimal("0.000001"))
            geq_hours = (units * geq[flavor.pk] * seconds / 3600).quantize(Decimal("0.000001"))
            unit_price = price[flavor.pk] or geq[flavor.pk] * parent_price
            cost = (units * unit_price * mult[job.service_class_id] * seconds / 3600).quantize(
                Decimal("0.01"), rounding=ROUND_HALF_EVEN
            )
            yield (
                job.pk,
                queue.team_id,
                queue.pk,
                job.owner_id,
                cluster.pk,
                flavor.pk,
                job.service_class_id,
                workers,
                units,
                geq[flavor.pk],
                moment,
                end,
                seconds,
                not is_open,
                None if is_open else unit_hours,
                None if is_open else geq_hours,
                None if is_open else cost,
                "" if is_open else "USD",
            )
            written += 1
            opened += is_open
            moment = end + timedelta(hours=rng.uniform(0.1, 1.5 * year_hours / per_job))
            if moment >= year_end:
                break
        if written >= rows:
            return


def finance_user():  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Group, User

    from gpuplatform.access import FINANCE_GROUP

    user, _ = User.objects.get_or_create(username=f"{PREFIX}-finance")
    user.groups.add(Group.objects.get_or_create(name=FINANCE_GROUP)[0])
    return user


def request(params: dict[str, str], accept: str = "application/json"):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIRequestFactory, force_authenticate

    from accounting.api.views import ChargebackView

    factory = APIRequestFactory()
    req = factory.get("/api/v1/chargeback/", params, HTTP_ACCEPT=accept)
    force_authenticate(req, user=finance_user())
    return ChargebackView.as_view()(req)


def time_month_json(repeat: int) -> None:
    for group_by in ("team", "team,flavor"):
        params = {"start": f"{YEAR}-06-01", "end": f"{YEAR}-07-01", "group_by": group_by}
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            response = request(params)
            response.render()
            times.append(time.perf_counter() - started)
        body = response.data
        print(
            f"chargeback JSON, one month (June {YEAR}) by {group_by}: {len(body['rows'])} rows, "
            f"total {body['totals']['cost']} USD; best {min(times):.3f} s, "
            f"median {statistics.median(times):.3f} s over {repeat} runs (target < 2 s)"
        )


def allocation(params: dict[str, str]):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIRequestFactory, force_authenticate

    from accounting.api.finance import AllocationView

    req = APIRequestFactory().get("/api/v1/allocation/", params)
    force_authenticate(req, user=finance_user())
    return AllocationView.as_view()(req)


def time_allocation(repeat: int) -> None:
    """The allocation API (issue 25) on the same ledger for June: one set by team (the window
    "month" of a month that is over), by day (30 sets), by department and label, by
    team,flavor, and with shareIdle (every row rated for idle)."""
    june = f"{YEAR}-06-01T00:00:00Z,{YEAR}-07-01T00:00:00Z"
    for label, params, runs in (
        ("one set, June, by team", {"window": june, "aggregate": "team"}, repeat),
        ("June by day (30 sets), by team", {"window": june, "step": "day"}, repeat),
        ("June by hour (720 sets), by team", {"window": june, "step": "hour"}, 1),
        ("one set, June, by department", {"window": june, "aggregate": "department"}, repeat),
        (
            "June by day, by department",
            {"window": june, "aggregate": "department", "step": "day"},
            repeat,
        ),
        ("one set, June, by label:project", {"window": june, "aggregate": "label:project"}, repeat),
        (
            "June by day, by label:project",
            {"window": june, "aggregate": "label:project", "step": "day"},
            repeat,
        ),
        ("one set, June, by team,flavor", {"window": june, "aggregate": "team,flavor"}, repeat),
        ("June, shareIdle, by team", {"window": june, "shareIdle": "true"}, 1),
    ):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            response = allocation(params)
            response.render()
            times.append(time.perf_counter() - started)
        if response.status_code == 400:
            print(f"allocation JSON, {label}: refused (400) by the code under test")
            continue
        if response.status_code != 200:
            raise SystemExit(f"allocation failed: {response.status_code} {response.data}")
        sets = response.data["data"]
        print(
            f"allocation JSON, {label}: {len(sets)} sets, {sum(len(s) for s in sets)} "
            f"allocations; best {min(times):.3f} s, median {statistics.median(times):.3f} s "
            f"over {runs} runs"
        )


def stream_csv(start: str, end: str, group_by: str) -> tuple[float, int, int, float]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    response = request({"start": start, "end": end, "group_by": group_by, "format": "csv"})
    if not getattr(response, "streaming", False):
        raise SystemExit(f"CSV request failed: {response.status_code} {response.data}")
    lines = size = 0
    for chunk in response.streaming_content:  # keep nothing: only count
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        lines += text.count("\n")
        size += len(text)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, lines, size, peak / 2**20


def stream_year_csv() -> None:
    from accounting.models import UsageRecord

    group_by = "team,user,flavor,service_class,cluster"
    for label, start, end in (
        ("one month", f"{YEAR}-06-01", f"{YEAR}-07-01"),
        ("one year", f"{YEAR}-01-01", f"{YEAR + 1}-01-01"),
    ):
        lower, upper = (datetime.fromisoformat(d).replace(tzinfo=UTC) for d in (start, end))
        scanned = UsageRecord.objects.filter(start__lt=upper, end__gt=lower).count()
        seconds, lines, size, peak = stream_csv(start, end, group_by)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"CSV stream, {label} ({scanned} ledger rows) by {group_by}: {seconds:.3f} s, "
            f"{lines} lines, {size} bytes, "
            f"peak Python memory while streaming {peak:.2f} MiB (process max RSS so far "
            f"{rss:.0f} MiB)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=1000, help="open rows priced at query time")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rebuild", action="store_true", help="regenerate even if present")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the generated data for a faster re-run (it blocks deleting their jobs)",
    )
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or default_url()
    if url.startswith("postgres"):
        ensure_database(url)
    setup_django(url)
    from accounting.models import UsageRecord

    present = UsageRecord.objects.filter(team__name__startswith=PREFIX).count()
    if args.rebuild or present != args.rows:
        build(args.rows, args.open, args.seed)
    else:
        print(f"ledger: reusing {present} generated rows (--rebuild to regenerate)")
    time_month_json(args.repeat)
    time_allocation(args.repeat)
    stream_year_csv()
    if not args.keep:
        clean_up()
    return 0


def clean_up() -> None:
    """Remove the generated ledger and world, so other benchmarks can reset the database."""
    from django.contrib.auth.models import User
    from django.db import connection, transaction

    from queues.models import Cluster, Cohort, Flavor, Job, Queue, ServiceClass, Team

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM accounting_usagerecord")
        Job.objects.filter(queue__team__name__startswith=PREFIX).delete()
        Queue.objects.filter(team__name__startswith=PREFIX).delete()
        Team.objects.filter(name__startswith=PREFIX).delete()
        Cohort.objects.filter(name__startswith=PREFIX).delete()
        User.objects.filter(username__startswith=PREFIX).delete()
        from accounting.models import ClassMultiplier, FlavorPrice

        FlavorPrice.objects.filter(flavor__name__startswith="cb-").delete()
        ClassMultiplier.objects.filter(service_class__name__startswith="cb-").delete()
        Flavor.objects.filter(name__startswith="cb-").delete()
        ServiceClass.objects.filter(name__startswith="cb-").delete()
        Cluster.objects.filter(name__startswith="cb-").delete()
    print("generated data removed (--keep keeps it)")


if __name__ == "__main__":
    raise SystemExit(main())
