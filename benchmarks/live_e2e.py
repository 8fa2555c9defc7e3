"""The live path end to end (issue 27): submissions until every job runs, on real servers.

    .venv/bin/python benchmarks/live_e2e.py                  # REST, 2,000 jobs, 1,300 nodes
    .venv/bin/python benchmarks/live_e2e.py --mode both --rounds 3   # REST / in-process alternated
    .venv/bin/python benchmarks/live_e2e.py --jobs 10000 --array 10000 --concurrency 1
                                                             # one array request of 10,000 jobs

Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) and Redis on 127.0.0.1:6379.
Each round:

1. rebuilds the world in a database of its own (``--database-url``, default
   ``gpuplatform_e2e_bench``, created and migrated if missing; its scheduling data is DESTROYED):
   one simulated cluster of ``--nodes`` nodes x 8 GPUs (room for every job), ``--teams`` teams
   with one queue each in one cohort, a researcher in every team with one API token per client
   thread;
2. empties its Redis databases (``--redis-db`` for the broker, ``--cache-db`` for the cache,
   by default the next one; both may be the same) and
   starts ``celery -A gpuplatform worker -B`` with ``CYCLE_INTERVAL=1`` and, in ``rest`` mode,
   gunicorn with ``--web-workers`` workers on 127.0.0.1, configured as deployed
   (gunicorn.conf.py: threaded workers with keep-alive; the old sync workers:
   ``--web-options '--worker-class sync --threads 1'``);
3. submits ``--jobs`` 1-GPU jobs from ``--concurrency`` threads: ``POST /api/v1/jobs/`` with a
   token over keep-alive HTTP/1.1 (``rest``), or ``queues.services.submit_job`` (``inprocess``);
   with ``--array N`` each POST is a job array of N jobs (``{"array": N, ...}``, the last one
   the rest);
4. polls the database until every job is admitted, then running; stops the servers (also on an
   error, Ctrl-C or SIGTERM).

It prints, per round: jobs/s submitted, admitted and running (from the first POST), the
submission latency p50/p95/p99, the cycles that ran meanwhile and their phases (the cycle's
``gpuplatform_cycle_phase_seconds`` counters), the queries of one POST (Django's test client
with ``CaptureQueriesContext``) and of one ``submit_job``, and the load average; then pgbench's
one-row UPDATE rate on the same PostgreSQL as the yardstick. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import e2e_probes as probes  # noqa: E402
from benchmarks.e2e_clients import Submissions, rest_clients, service_clients  # noqa: E402
from benchmarks.e2e_stack import Stack, free_port  # noqa: E402
from benchmarks.live_cycle_bench import (  # noqa: E402
    clear_scheduling_data,
    ensure_database,
    setup_django,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/gpuplatform_e2e_bench"
IMAGE = "pytorch/pytorch:2.4.0"
LONG_RUN = 10**6  # simulated seconds: no job ends during a round
POLL_SECONDS = 0.2


@dataclass
class World:
    queues: dict[int, Any]  # by id
    tokens: list[str]
    user: Any
    service_class: Any
    flavor: Any


@dataclass
class Round:
    mode: str
    number: int
    submitted: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # submitted / admitted / running
    load: list[float] = field(default_factory=list)
    closed_by_server: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of each process group


def job_body(world: World, index: int) -> dict[str, Any]:
    return {
        "queue": list(world.queues)[index % len(world.queues)],
        "service_class": "standard",
        "flavors": ["h100"],
        "name": f"e2e-{index}",
        "image": IMAGE,
        "workers": 1,
        "gpus_per_worker": 1,
        "duration_hint": LONG_RUN,
    }


def request_bodies(world: World, jobs: int, array: int) -> list[dict[str, Any]]:
    """One body per job, or with ``array``: one array body per ``array`` jobs."""
    if not array:
        return [job_body(world, i) for i in range(jobs)]
    return [
        {**job_body(world, start), "array": min(array, jobs - start)}
        for start in range(0, jobs, array)
    ]


def build_world(nodes: int, teams: int, tokens: int) -> World:
    from django.contrib.auth.models import User
    from django.db import transaction

    from queues.models import (
        Cluster,
        Cohort,
        Flavor,
        Membership,
        Node,
        Queue,
        Quota,
        ServiceClass,
        Team,
    )
    from tokens.models import ApiToken

    with transaction.atomic():
        clear_scheduling_data()
        user, _ = User.objects.get_or_create(username="e2e-researcher")
        ApiToken.objects.filter(user=user).delete()
        flavor = Flavor.objects.create(name="h100", resource="nvidia.com/gpu")
        service_class = ServiceClass.objects.create(name="standard", priority=100)
        cluster = Cluster.objects.create(name="e2e", driver="simulated")
        Node.objects.bulk_create(
            Node(cluster=cluster, name=f"node-{i:05d}", capacity={"h100": 8}) for i in range(nodes)
        )
        cohort = Cohort.objects.create(name="e2e")
        queues = {}
        for t in range(teams):
            team = Team.objects.create(name=f"e2e-team-{t}")
            Membership.objects.create(user=user, team=team)
            queue = Queue.objects.create(team=team, name="main", cohort=cohort)
            Quota.objects.create(queue=queue, flavor=flavor, nominal=nodes * 8 // teams)
            queues[queue.pk] = queue
        issued = [ApiToken.issue(user=user, name=f"e2e client {n}")[1] for n in range(tokens)]
    return World(queues, issued, user, service_class, flavor)


def server_env(args: argparse.Namespace, folder: Path) -> dict[str, str]:
    """The settings of every process of the run (this one included): production-like (DEBUG
    off), its own database, Redis databases and Celery queue, no submission rate limit in the
    way, simulated jobs that never fail."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "gpuplatform.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),  # this run's only
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": args.database_url,
        "REDIS_URL": f"redis://127.0.0.1:6379/{args.redis_db}",
        "CACHE_URL": f"redis://127.0.0.1:6379/{args.cache_db}",
        "CELERY_QUEUE": f"e2e-bench-{uuid.uuid4().hex[:8]}",
        "CYCLE_INTERVAL": "1",
        "JOB_SUBMIT_RATE": "1000000/second",
        "SIMULATION_FAILURE_RATE": "0",
        "VAR_DIR": str(folder),
        "LOG_LEVEL": "WARNING",  # this process; the servers log at INFO (Stack's environment)
    }


def empty_redis(redis_url: str) -> None:
    """FLUSHDB the broker's and the cache's databases (both the benchmark's own)."""
    import redis
    from django.conf import settings

    for url in (redis_url, settings.CACHE_URL):
        redis.Redis.from_url(url).flushdb()


def job_counts() -> tuple[int, int, int]:
    """(jobs, admitted or running, running) in the database now."""
    from django.db.models import Count, Q

    from queues.models import Job

    counts = Job.objects.aggregate(
        total=Count("pk"),
        placed=Count("pk", filter=Q(state__in=["admitted", "running"])),
        running=Count("pk", filter=Q(state="running")),
    )
    return counts["total"], counts["placed"], counts["running"]


def run_round(args: argparse.Namespace, mode: str, number: int, folder: Path) -> Round:
    from django.db import close_old_connections
    from django.utils import timezone

    from queues.models import CycleRun

    result = Round(mode, number)
    world = build_world(args.nodes, args.teams, args.concurrency)
    empty_redis(os.environ["REDIS_URL"])
    shape = f", arrays of {args.array}" if args.array else ""
    print(
        f"\n== round {number}, {mode}: {args.jobs} jobs{shape}, {args.concurrency} threads",
        flush=True,
    )
    with Stack({**os.environ, "LOG_LEVEL": "INFO"}, folder / f"round{number}-{mode}") as stack:
        stack.folder.mkdir(parents=True, exist_ok=True)
        stack.start_worker(args.worker_concurrency)
        options = args.web_options.split() if args.web_options else []
        base = stack.start_web(free_port(), args.web_workers, options) if mode == "rest" else ""
        stack.wait_until("worker", CycleRun.objects.exists, timeout=90)  # beat ticks: cycles run
        phases_before = probes.phase_counters()
        cpu_before = {name: stack.cpu_seconds(name) for name in stack.children}
        cpu_before["this process"] = time.process_time()
        result.load.append(os.getloadavg()[0])
        bodies = request_bodies(world, args.jobs, args.array)
        submissions = Submissions(bodies, len(world.tokens))
        if mode == "rest":
            threads = rest_clients(base, world.tokens, submissions)
        else:
            threads = service_clients(
                world.user, world.queues, world.service_class, world.flavor, submissions
            )
        started_at = timezone.now()
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        deadline = started + args.timeout
        while time.perf_counter() < deadline:
            stack.check_alive()
            total, placed, running = job_counts()
            now = time.perf_counter() - started
            done = not any(t.is_alive() for t in threads)
            if done and "submitted" not in result.seconds:
                result.seconds["submitted"] = submissions.last_end - started
            if done and placed == total and "admitted" not in result.seconds:
                result.seconds["admitted"] = now
            if done and total and running == total:
                result.seconds["running"] = now
                break
            time.sleep(POLL_SECONDS)
        result.load.append(os.getloadavg()[0])
        result.cpu = {name: stack.cpu_seconds(name) - cpu_before[name] for name in stack.children}
        result.cpu["this process"] = time.process_time() - cpu_before["this process"]
        close_old_connections()
        result.submitted = total
        result.errors = submissions.errors
        result.latencies = submissions.latencies
        result.closed_by_server = submissions.closed_by_server
        report_round(result, args, started_at, phases_before, (total, placed, running))
        report_queries(world, args)
    return result


def report_round(
    result: Round, args: argparse.Namespace, started_at: Any, phases_before: Any, last: Any
) -> None:
    from queues.models import CycleRun

    total, placed, running = last
    for stage in ("submitted", "admitted", "running"):
        seconds = result.seconds.get(stage)
        if seconds is None:
            print(f"  {stage}: not all in {args.timeout:.0f} s ({placed} placed, {running} run)")
            continue
        print(f"  all {stage} after {seconds:.1f} s: {total / seconds:.1f} jobs/s")
    if result.mode == "rest":
        print(
            f"  the server closed the connection after {result.closed_by_server} of "
            f"{len(result.latencies)} answers (a new TCP connection for the next POST)"
        )
    if result.errors:
        print(f"  {len(result.errors)} submissions failed; first: {result.errors[0]}")
    if len(result.latencies) == 1:
        print(f"  the one request answered in {result.latencies[0] * 1000:.0f} ms")
    if len(result.latencies) >= 2:
        cuts = statistics.quantiles(result.latencies, n=100, method="inclusive")
        print(
            f"  submission latency ms: p50 {cuts[49] * 1000:.1f}, p95 {cuts[94] * 1000:.1f}, "
            f"p99 {cuts[98] * 1000:.1f}, max {max(result.latencies) * 1000:.1f}"
        )
    runs = list(CycleRun.objects.filter(started_at__gte=started_at).order_by("started_at"))
    if runs:
        durations = [(r.finished_at - r.started_at).total_seconds() for r in runs]
        mean = statistics.fmean(durations)
        print(
            f"  {len(runs)} cycles since the first submission: mean {mean:.2f} s, "
            f"max {max(durations):.2f} s"
        )
        for run, seconds in zip(runs[: args.show_cycles], durations, strict=False):
            offset = (run.started_at - started_at).total_seconds()
            print(f"    +{offset:6.1f} s  {seconds:6.2f} s  {run.outcome.partition(': ')[2]}")
    print("  phases: " + "; ".join(probes.phase_lines(phases_before, probes.phase_counters())))
    print(f"  load average (1 min) at start / end: {result.load[0]:.2f} / {result.load[1]:.2f}")
    cpu = ", ".join(
        f"{name} {seconds:.1f} s ({seconds / max(total, 1) * 1000:.0f} ms per job)"
        for name, seconds in result.cpu.items()
    )
    print(f"  CPU from the first submission until all ran: {cpu} (PostgreSQL's not counted)")


def report_queries(world: World, args: argparse.Namespace) -> None:
    from queues.services import submit_job

    token = world.tokens[0]
    probes.post_job(token, job_body(world, 10**6))  # warms up this process
    rest = probes.captured(lambda: probes.post_job(token, job_body(world, 10**6 + 1)))
    service = probes.captured(
        lambda: submit_job(
            owner=world.user,
            queue=next(iter(world.queues.values())),
            service_class=world.service_class,
            name="e2e-probe",
            image=IMAGE,
            flavors=[world.flavor],
            duration_hint=LONG_RUN,
        )
    )
    print(f"  queries of one POST /api/v1/jobs/: {len(rest)} ({probes.query_kinds(rest)})")
    print(f"  queries of one submit_job: {len(service)} ({probes.query_kinds(service)})")
    if args.show_queries:
        for n, sql in enumerate(rest, 1):
            print(f"    {n:2d}. {probes.shorten(sql)}")


def summary(rounds: list[Round]) -> None:
    print("\n== summary (jobs/s from the first submission; latency ms)")
    print("| round | mode | submitted/s | admitted/s | running/s | p50 | p95 | p99 | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rounds:
        rates = [
            f"{r.submitted / r.seconds[s]:.1f}" if s in r.seconds else "-"
            for s in ("submitted", "admitted", "running")
        ]
        cuts = statistics.quantiles(r.latencies * 2, n=100, method="inclusive")  # 1 request too
        ms = [f"{cuts[i] * 1000:.1f}" for i in (49, 94, 98)]
        load = "-".join(f"{x:.1f}" for x in r.load)
        print(f"| {r.number} | {r.mode} | {' | '.join(rates)} | {' | '.join(ms)} | {load} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["rest", "inprocess", "both"], default="rest")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=1300)
    parser.add_argument("--teams", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--rounds", type=int, default=1, help="with --mode both: rest, inprocess")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--web-options",
        default="",
        help="more gunicorn options, e.g. '--worker-class sync --threads 1' "
        "(default: gunicorn.conf.py's)",
    )
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery pool size")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--redis-db", type=int, default=12, help="the broker's")
    parser.add_argument("--cache-db", type=int, default=None, help="default: --redis-db + 1")
    parser.add_argument("--array", type=int, default=0, help="jobs per POST (a job array)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per round")
    parser.add_argument("--pgbench-seconds", type=int, default=10, help="0: no pgbench")
    parser.add_argument("--show-cycles", type=int, default=30, help="cycles listed per round")
    parser.add_argument("--show-queries", action="store_true", help="the SQL of one POST")
    parser.add_argument("--profile-posts", type=int, default=0, help="cProfile N POSTs at end")
    parser.add_argument("--logs", type=Path, default=None, help="keep the servers' logs here")
    args = parser.parse_args()
    if args.cache_db is None:
        args.cache_db = args.redis_db + 1
    if args.array and args.mode != "rest":
        parser.error("--array is for --mode rest")
    if args.jobs > args.nodes * 8:
        parser.error("--nodes too small: every job must be able to run")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: servers stopped
    warnings.filterwarnings("ignore", "No directory at")  # no collectstatic: the API needs none
    folder = args.logs or Path(tempfile.mkdtemp(prefix="live_e2e-"))
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.update(server_env(args, folder))
    ensure_database(args.database_url)
    setup_django(args.database_url)
    from django.db import connection

    print(
        f"database {connection.settings_dict['NAME']} (PostgreSQL {connection.pg_version}), "
        f"Redis db {args.redis_db}/{args.cache_db}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; logs in {folder}"
    )
    modes = ["rest", "inprocess"] if args.mode == "both" else [args.mode]
    rounds = [
        run_round(args, mode, number, folder)
        for number in range(1, args.rounds + 1)
        for mode in modes
    ]
    if len(rounds) > 1:
        summary(rounds)
    if args.profile_posts:
        world = build_world(args.nodes, args.teams, 1)
        print(f"\n== cProfile of {args.profile_posts} POSTs through the test client")
        body = lambda i: job_body(world, i)  # noqa: E731
        print(probes.profile_posts(world.tokens[0], body, args.profile_posts))
    if args.pgbench_seconds:
        tps = probes.pgbench_tps(args.database_url, args.pgbench_seconds, 4, folder)
        print(f"\npgbench, {args.pgbench_seconds} s: {tps}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:  # the servers were stopped on the way out
        print("\ninterrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None
