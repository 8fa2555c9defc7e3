"""Benchmark the full live cycle (cluster sync + snapshot + engine + apply) on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_live_bench \\
        .venv/bin/python benchmarks/live_cycle_bench.py --jobs 5000

Creates the database if it is missing, migrates it, replaces its scheduling data with a
generated world (one simulated cluster, ``--nodes`` nodes of 8 GPUs, ``--queues`` queues in
``--cohorts`` cohorts, ``--jobs`` pending jobs of mixed sizes), then prints:

- the first cycle (it admits what fits and explains every job left pending);
- the third cycle (the accrual reads the jobs that started in the second once more);
- with ``--overdue S``: the clock moved on S seconds (600: every running job past its estimated
  runtime, still running), and one cycle there;
- ``--cycles`` steady-state cycles (the cluster full, every job still pending) as cycles/second,
  with the mean of each phase by the cycle's own timers;
- one steady-state cycle split into its phases: sync, snapshot, engine, apply, and how many
  pending jobs' stored explanations (sentence or estimated start) it rewrote;
- the queries of one steady-state cycle, and of its ledger accrual alone (``accrue_usage``);
- with ``--keep-cycles N``: N steady cycles each without and with the ``SnapshotKeep`` the
  Celery worker keeps between cycles (gpusched/engine/snapshot_keep.py), alternated, CPU of the
  cycle, its snapshot read and its decision.

``--gpus 1`` makes every job one worker of one GPU (with ``--nodes`` large enough, everything
runs: the accrual and launch paths at N running jobs).

Nothing here is a test: it prints numbers. DESTROYS the scheduling data of the database it uses,
so give it a database of its own (the default, ``gpuplatform_live_bench``, is created if missing).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/gpuplatform_live_bench"


def ensure_database(url: str) -> None:
    """CREATE DATABASE when the URL's PostgreSQL database does not exist yet."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}")


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def clear_scheduling_data() -> None:
    """Delete every job, queue, team, node, cluster, flavor, class, ledger row, cycle run and
    counter of the database (users and their tokens stay)."""
    from accounting.models import AccrualMark, Statement, UsageRecord
    from queues.models import (
        Cluster,
        Cohort,
        CycleRun,
        Flavor,
        Job,
        JobFlavor,
        JobRuntime,
        MetricCounter,
        Node,
        Queue,
        Quota,
        SchedulerLease,
        ServiceClass,
        SimulatedWorkload,
        Team,
    )

    for model in (SimulatedWorkload, JobRuntime, JobFlavor):
        model.objects.all().delete()
    for model in (UsageRecord, Statement, AccrualMark):  # ledger rows protect their jobs
        model.objects.all().delete()
    Job.objects.all().delete()
    for model in (Quota, Queue, Team, Cohort, Node, Cluster, ServiceClass, Flavor):
        model.objects.all().delete()
    for model in (CycleRun, MetricCounter, SchedulerLease):
        model.objects.all().delete()


def build_world(
    nodes: int, queues: int, cohorts: int, jobs: int, seed: int, gpus: int | None = None
) -> None:
    from django.contrib.auth.models import User
    from django.db import transaction

    from queues.models import (
        Cluster,
        Cohort,
        Flavor,
        Job,
        JobFlavor,
        JobRuntime,
        Node,
        Queue,
        Quota,
        ServiceClass,
        Team,
    )

    rng = random.Random(seed)
    with transaction.atomic():
        clear_scheduling_data()
        owner, _ = User.objects.get_or_create(username="bench")
        h100 = Flavor.objects.create(name="h100", resource="nvidia.com/gpu")
        a100 = Flavor.objects.create(name="a100", resource="nvidia.com/gpu")
        classes = [
            ServiceClass.objects.create(
                name="production",
                priority=1000,
                preemptible=False,
                can_borrow=False,
                grace_period=300,
            ),
            ServiceClass.objects.create(
                name="standard", priority=100, min_runtime=600, grace_period=120
            ),
            ServiceClass.objects.create(name="spot", priority=10, grace_period=30),
        ]
        cluster = Cluster.objects.create(name="bench", driver="simulated")
        Node.objects.bulk_create(
            Node(
                cluster=cluster,
                name=f"node-{i:04d}",
                capacity={"h100" if i % 4 else "a100": 8},
                labels={"rack": f"r{i // 8}", "block": f"b{i // 64}"},
            )
            for i in range(nodes)
        )
        cohort_rows = [Cohort.objects.create(name=f"cohort-{c}") for c in range(cohorts)]
        total_h100 = sum(8 for i in range(nodes) if i % 4)
        total_a100 = nodes * 8 - total_h100
        queue_rows = []
        for q in range(queues):
            team = Team.objects.create(name=f"team-{q}")
            queue = Queue.objects.create(
                team=team, name="main", cohort=cohort_rows[q % cohorts], weight=1.0 + (q % 3)
            )
            Quota.objects.create(queue=queue, flavor=h100, nominal=total_h100 // queues)
            Quota.objects.create(queue=queue, flavor=a100, nominal=total_a100 // queues)
            queue_rows.append(queue)
        start = datetime(2026, 1, 1, tzinfo=UTC)
        job_rows = []
        for j in range(jobs):
            workers = 1 if gpus else rng.choice([1, 1, 1, 2, 4, 8])
            job_rows.append(
                Job(
                    owner=owner,
                    queue=rng.choice(queue_rows),
                    service_class=rng.choice(classes),
                    name=f"job-{j}",
                    image="pytorch/pytorch:2.4.0",
                    workers=workers,
                    gpus_per_worker=gpus or (rng.choice([1, 2, 4, 8]) if workers == 1 else 8),
                    submitted_at=start + timedelta(seconds=j),
                    estimated_runtime=rng.choice([None, 1800, 3600, 4 * 3600]),
                    duration_hint=10**6,  # long: nothing finishes during the benchmark
                )
            )
        Job.objects.bulk_create(job_rows, batch_size=1000)
        links = []
        for job in job_rows:
            choice = rng.random()
            ranked = [h100] if choice < 0.6 else [a100] if choice < 0.8 else [h100, a100]
            links += [JobFlavor(job=job, flavor=f, rank=r) for r, f in enumerate(ranked)]
        JobFlavor.objects.bulk_create(links, batch_size=2000)
        JobRuntime.objects.bulk_create((JobRuntime(job=job) for job in job_rows), batch_size=2000)


@contextmanager
def counting(connection: Any) -> Iterator[list[int]]:
    """Count the queries run inside the block (no query log: it keeps only 9,000)."""
    count = [0]

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        count[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield count


def phase_sums() -> dict[str, float]:
    """Seconds spent in each phase of the cycles so far (``gpuplatform_cycle_phase_seconds``)."""
    from queues.models import MetricCounter

    rows = MetricCounter.objects.filter(name="gpuplatform_cycle_phase_seconds_sum")
    return {
        labels.split('"')[1]: value
        for labels, value in rows.order_by("pk").values_list("labels", "value")
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--cohorts", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpus", type=int, default=None, help="every job: 1 worker x this")
    parser.add_argument(
        "--keep-cycles",
        type=int,
        default=0,
        help="then this many steady cycles each without and with the worker's SnapshotKeep",
    )
    parser.add_argument(
        "--overdue",
        type=int,
        default=0,
        help="move the clock this many seconds on before the steady cycles (600: every running "
        "job past its estimated runtime, the longest 4 h being 4 wall minutes at 60x)",
    )
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    if url.startswith(("postgres://", "postgresql://")):
        ensure_database(url)
    setup_django(url)

    from django.db import connection, reset_queries, transaction

    from accounting.ledger import accrue_usage
    from gpusched.engine.cycle import run_cycle as decide
    from queues.models import Job
    from queues.services import build_snapshot, run_cycle
    from queues.services.apply import apply_result
    from queues.services.observe import sync_clusters
    from queues.services.report import CycleReport

    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
    t = time.perf_counter()
    build_world(args.nodes, args.queues, args.cohorts, args.jobs, args.seed, args.gpus)
    print(
        f"world: {args.jobs} pending jobs, {args.nodes} nodes x 8 GPUs, {args.queues} queues "
        f"in {args.cohorts} cohorts (built in {time.perf_counter() - t:.1f} s)"
    )

    now = datetime(2026, 1, 2, tzinfo=UTC)
    t = time.perf_counter()
    with counting(connection) as first_queries:
        report = run_cycle(now=now)
    first = time.perf_counter() - t
    admitted = report.counts["admitted"]
    print(
        f"first cycle: {first:.3f} s ({admitted} admitted, {report.pending} pending "
        f"explained), {first_queries[0]} queries ({first_queries[0] / max(1, admitted):.2f} "
        "per admitted job, launches included)"
    )
    now += timedelta(seconds=1)
    t = time.perf_counter()
    with counting(connection) as start_queries:
        run_cycle(now=now)  # the launched jobs start running, the ledger opens their rows
    print(
        f"second cycle (the launched jobs start): {time.perf_counter() - t:.3f} s, "
        f"{start_queries[0]} queries"
    )

    now += timedelta(seconds=1)
    t = time.perf_counter()
    with counting(connection) as third_queries:
        run_cycle(now=now)  # the accrual reads the jobs that started last cycle once more
    print(
        f"third cycle (after the starts): {time.perf_counter() - t:.3f} s, "
        f"{third_queries[0]} queries"
    )
    if args.overdue:
        now += timedelta(seconds=args.overdue)
        run_cycle(now=now)  # the estimates become overdue: every explanation changes once
        print(f"clock moved on {args.overdue} s: the running jobs are past their estimated ends")

    durations = []
    before = phase_sums()
    cpu = time.process_time()
    for _ in range(args.cycles):
        now += timedelta(seconds=1)
        t = time.perf_counter()
        report = run_cycle(now=now)
        durations.append(time.perf_counter() - t)
    cpu_per_cycle = (time.process_time() - cpu) / args.cycles
    after = phase_sums()
    mean = statistics.fmean(durations)
    pending = Job.objects.filter(state="pending").count()
    active = Job.objects.filter(state__in=["admitted", "running"]).count()
    print(
        f"steady state ({active} running, {pending} pending): {args.cycles} cycles, "
        f"mean {mean * 1000:.0f} ms, max {max(durations) * 1000:.0f} ms, "
        f"{1 / mean:.2f} cycles/s; this process's CPU {cpu_per_cycle * 1000:.0f} ms per cycle "
        "(the rest is waiting for PostgreSQL and for the machine's other load)"
    )
    print(
        "steady cycles' phase means (the cycle's own timers): "
        + ", ".join(
            f"{phase} {(seconds - before.get(phase, 0.0)) / args.cycles * 1000:.0f} ms"
            for phase, seconds in after.items()
        )
    )

    now += timedelta(seconds=1)
    with counting(connection) as cycle_queries:
        run_cycle(now=now)
    now += timedelta(seconds=1)
    with counting(connection) as accrual_queries:
        t = time.perf_counter()
        accrue_usage(now)
        accrual = time.perf_counter() - t
    print(
        f"queries of one steady-state cycle: {cycle_queries[0]}; of one accrual alone: "
        f"{accrual_queries[0]} ({accrual * 1000:.0f} ms)"
    )

    now += timedelta(seconds=1)
    told = explanations()
    phases: dict[str, float] = {}
    t = time.perf_counter()
    sync_clusters(now, CycleReport(now=now))
    phases["sync"] = time.perf_counter() - t
    t = time.perf_counter()
    reset_queries()
    live = build_snapshot(now)
    phases["snapshot"] = time.perf_counter() - t
    t = time.perf_counter()
    result = decide(live.snapshot)
    phases["engine"] = time.perf_counter() - t
    t = time.perf_counter()
    with transaction.atomic():
        apply_result(live, result, CycleReport(now=now))
    phases["apply"] = time.perf_counter() - t
    print(
        "one steady-state cycle by phase: "
        + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in phases.items())
    )
    after_told = explanations()
    rewritten = sum(1 for pk, said in after_told.items() if told.get(pk) != said)
    print(
        f"explanations rewritten by that cycle: {rewritten} of {len(after_told)} pending jobs "
        f"({sum(1 for said in after_told.values() if said[1] is None)} without an estimated "
        "start)"
    )
    if args.keep_cycles:
        keep_or_not(now, args.keep_cycles)
    return 0


def explanations() -> dict[int, tuple[str, Any]]:
    """Each pending job's stored explanation and estimated start, by job id."""
    from queues.models import JobRuntime

    rows = JobRuntime.objects.filter(job__state="pending")
    return {
        pk: (m, e) for pk, m, e in rows.values_list("job_id", "pending_message", "estimated_start")
    }


def keep_or_not(now: datetime, rounds: int) -> None:
    """Steady cycles alternated without and with a ``SnapshotKeep`` (what the Celery worker
    keeps between its cycles): CPU of the whole cycle, of reading the snapshot and of deciding
    (medians; the first round is a warm-up)."""
    import queues.services.cycle as live_cycle
    from gpusched.engine.snapshot_keep import SnapshotKeep
    from queues.services import run_cycle

    spent: dict[str, float] = {}
    build, decide = live_cycle.build_snapshot, live_cycle.decide

    def timed(name: str, call: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            cpu = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name] = time.process_time() - cpu

        return run

    keep = SnapshotKeep()
    seen: dict[str, list[tuple[float, float, float]]] = {"fresh": [], "kept": []}
    live_cycle.build_snapshot = timed("snapshot", build)  # type: ignore[assignment]
    live_cycle.decide = timed("decide", decide)
    try:
        for number in range(rounds + 1):
            for mode in seen:
                now += timedelta(seconds=1)
                cpu = time.process_time()
                run_cycle(now=now, keep=keep if mode == "kept" else None)
                if number:
                    cycle = time.process_time() - cpu
                    seen[mode].append((cycle, spent["snapshot"], spent["decide"]))
    finally:
        live_cycle.build_snapshot, live_cycle.decide = build, decide  # type: ignore[assignment]
    for mode, runs in seen.items():
        cycle, snapshot, decided = (statistics.median(r[i] for r in runs) * 1000 for i in range(3))
        print(
            f"steady cycle {mode} ({len(runs)} cycles, CPU ms medians): cycle {cycle:.0f}, "
            f"snapshot {snapshot:.0f}, decide {decided:.0f}; load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
