"""Chargeback and the jobs lists under concurrent readers, 20,000 jobs, on real servers
(issue 27: under 300 ms p50 at concurrency 8), this tree side by side with another checkout.

    .venv/bin/python benchmarks/busy_pages_bench.py                              # this tree
    .venv/bin/python benchmarks/busy_pages_bench.py --against ../cyclescale-base --rounds 2

PostgreSQL (``--database-url``; the database is made if missing, migrated and RESET: every job
and ledger row goes) holds the demo world (``seed_demo --history 0``) and ``--jobs`` jobs of
alice and bob: ``--running`` of them running since earlier this month (one open ledger row each,
priced at query time, as the live ledger keeps running jobs), the rest finished this month (one
closed, priced row each) or pending (a tenth of them); ``--start-groups N``: the running jobs
were started by N cycles (as a burst of submissions is, several jobs by each cycle) instead of
each at a moment of its own. Each tree's gunicorn (``--web-workers``
sync workers, that tree's code and interpreter) serves the same database in turn; for each URL
``--concurrency`` client threads GET it ``--requests`` times in all (after one warm-up GET per
thread) and the median, p95 and max latency are printed, rounds alternating between the trees
so both see the same machine load, with the CPU the requests cost (user and system time of
gunicorn's processes and of the local PostgreSQL server's processes serving the database, per
request: what latency on a machine shared with other work hides) and the load average. The
admin's token reads the REST API, the admin's session the HTML page. ``--production``: the
servers run with DEBUG off, as deployed (by default they inherit DEBUG, which is on unless set).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.e2e_stack import Stack, free_port  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/gpuplatform_busy_pages"
URLS = [
    ("chargeback by team (REST)", "/api/v1/chargeback/?group_by=team", "token"),
    ("jobs (REST)", "/api/v1/jobs/", "token"),
    ("jobs list (HTML)", "/jobs/", "session"),
]


def setup(url: str) -> None:
    from benchmarks.chargeback_bench import ensure_database

    ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def seed(jobs: int, running: int, seed_value: int, start_groups: int) -> dict[str, str]:
    """The world and the jobs (see the module doc); the admin's token and session cookie."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from accounting import rating
    from accounting.models import UsageRecord
    from accounting.pricing import gpu_equivalent_of, interval_of, load_price_list
    from queues.models import Flavor, Job, JobFlavor, JobRuntime, Node, Queue, ServiceClass
    from tokens.models import ApiToken

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:  # a reset: the demo seeds again below
        tables = connection.introspection.django_table_names(only_existing=True)
        quoted = ", ".join(connection.ops.quote_name(t) for t in tables if t != "django_migrations")
        cursor.execute(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE")
    call_command("seed_demo", history=0, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    rng = random.Random(seed_value)
    users = list(get_user_model().objects.filter(username__in=["alice", "bob"]))
    queues = {q.team_id: q for q in Queue.objects.select_related("team")}
    classes = list(ServiceClass.objects.all())
    h100 = Flavor.objects.get(name="h100")
    nodes = list(Node.objects.filter(capacity__has_key="h100"))
    now = timezone.now()
    month = rating.month_start(now)
    span = max(60.0, (now - month).total_seconds() - 60)
    rows = []
    queue_of = {}
    for user in users:
        mine = [q for q in queues.values() if q.team.memberships.filter(user=user).exists()]
        queue_of[user.pk] = mine[0] if mine else next(iter(queues.values()))
    cluster_of = {n.cluster_id: n.cluster for n in Node.objects.select_related("cluster")}
    for i in range(jobs):
        user = users[i % len(users)]
        queue = queue_of[user.pk]
        state = "running" if i < running else "pending" if i % 10 == 0 else "succeeded"
        submitted = month + timedelta(seconds=rng.uniform(0, span))
        if state == "running" and start_groups:  # started by one of start_groups cycles
            submitted = month + timedelta(seconds=span * (i % start_groups) / start_groups)
        job = Job(
            owner=user,
            queue=queue,
            service_class=classes[i % len(classes)],
            name=f"busy-{i}",
            image="pytorch/pytorch:2.4.0",
            command=["python", "train.py"],
            workers=1,
            gpus_per_worker=1,
            state=state,
            submitted_at=submitted,
            estimated_runtime=3600,
            duration_hint=3600,
        )
        if state == "running":
            node = nodes[i % len(nodes)]
            job.current_workers = 1
            job.cluster_id = node.cluster_id
            job.placement = {node.name: 1}
            job.started_at = job.admitted_at = submitted + timedelta(seconds=5)
        elif state == "succeeded":
            node = nodes[i % len(nodes)]
            job.cluster_id = node.cluster_id
            job.started_at = submitted + timedelta(seconds=5)
            job.finished_at = min(now, job.started_at + timedelta(seconds=rng.uniform(60, 7200)))
        rows.append(job)
    created = Job.objects.bulk_create(rows, batch_size=2000)
    JobFlavor.objects.bulk_create(
        (JobFlavor(job=job, flavor=h100, rank=0) for job in created), batch_size=5000
    )
    JobRuntime.objects.bulk_create(
        (JobRuntime(job=job, flavor=h100 if job.started_at else None) for job in created),
        batch_size=5000,
    )
    prices = load_price_list()
    geq = gpu_equivalent_of(h100)
    records = []
    for job in created:
        if job.started_at is None:
            continue
        end = job.finished_at or now
        record = UsageRecord(
            job=job,
            team_id=job.queue.team_id,
            queue=job.queue,
            user=job.owner,
            cluster_id=job.cluster_id,
            flavor=h100,
            service_class=job.service_class,
            workers=1,
            units=1,
            gpu_equivalent=geq,
            start=job.started_at,
            end=end,
            seconds=Decimal((end - job.started_at).total_seconds()).quantize(Decimal("0.000001")),
            closed=job.finished_at is not None,
        )
        if record.closed:
            record.team = job.queue.team
            record.cluster = cluster_of[job.cluster_id]
            charges = rating.rate([interval_of(record)], prices)
            record.unit_hours = sum((c.unit_hours for c in charges), Decimal(0))
            record.gpu_equivalent_hours = sum((c.gpu_equivalent_hours for c in charges), Decimal(0))
            record.cost = sum((c.cost for c in charges), Decimal(0))
            record.currency = prices.currency
        records.append(record)
    UsageRecord.objects.bulk_create(records, batch_size=5000)
    admin = get_user_model().objects.get(username="admin")
    _, token = ApiToken.issue(user=admin, name="busy-pages-bench")
    client = Client()
    client.force_login(admin)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"token": token, "session": client.cookies["sessionid"].value}


def fetch(base: str, path: str, auth: str, credentials: dict[str, str]) -> float:
    headers = {"Host": "127.0.0.1"}
    if auth == "token":
        headers["Authorization"] = f"Bearer {credentials['token']}"
    else:
        headers["Cookie"] = f"sessionid={credentials['session']}"
    request = urllib.request.Request(base + path, headers=headers)
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
        if response.status != 200 or urlsplit(response.geturl()).path != urlsplit(path).path:
            raise RuntimeError(f"{path}: HTTP {response.status} from {response.geturl()}")
    return (time.perf_counter() - began) * 1000


def hammer(
    base: str, path: str, auth: str, credentials: dict[str, str], concurrency: int, total: int
) -> list[float]:
    """``concurrency`` threads GET ``path`` ``total`` times in all; the latencies in ms."""
    times: list[float] = []
    lock = threading.Lock()
    left = [total]

    def work() -> None:
        fetch(base, path, auth, credentials)  # warm-up, not counted
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            took = fetch(base, path, auth, credentials)
            with lock:
                times.append(took)

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def _processes() -> list[tuple[int, bytes]]:
    """(pid, command line) of every process this user may read."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                found.append((int(entry.name), (entry / "cmdline").read_bytes()))
    return found


def in_group(group: int) -> list[int]:
    """The processes of process group ``group`` (gunicorn's arbiter and its workers)."""
    pids = []
    for pid, _ in _processes():
        try:
            if os.getpgid(pid) == group:
                pids.append(pid)
        except OSError:
            pass
    return pids


def backends(database: str) -> list[int]:
    """The local PostgreSQL server's processes serving ``database`` (none when it is remote):
    their title is "postgres: [cluster: ]user database host(port) state"."""
    pids = []
    for pid, line in _processes():
        words = line.rstrip(b"\0 ").split(b" ")
        if words[0] != b"postgres:":
            continue
        host = next((i for i, w in enumerate(words) if b"(" in w or w == b"[local]"), 0)
        if host > 1 and words[host - 1] == database.encode():
            pids.append(pid)
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes used so far (the CPU a request costs, which
    the latency of a machine shared with other work hides)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("BUSY_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--running", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=40, help="per URL and tree, in all")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", type=Path, help="another checkout, e.g. the old commit's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--start-groups",
        type=int,
        default=0,
        help="the running jobs started by this many cycles (0: each at its own moment)",
    )
    parser.add_argument(
        "--production",
        action="store_true",
        help="servers with DEBUG off, as deployed (each tree's static files collected first); "
        "by default they inherit DEBUG (on unless set: SQL of every query kept, debug templates)",
    )
    args = parser.parse_args(argv)
    if args.production:  # the session cookie made here must hold on the servers
        os.environ["SECRET_KEY"] = THROWAWAY_KEY
    setup(args.database_url)
    began = time.perf_counter()
    credentials = seed(args.jobs, args.running, args.seed, args.start_groups)
    groups = f"started by {args.start_groups} cycles" if args.start_groups else "all apart"
    print(
        f"seeded {args.jobs:,} jobs ({args.running:,} running, {groups}) in "
        f"{time.perf_counter() - began:.0f} s; {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; gunicorn {args.web_workers} sync workers, "
        f"concurrency {args.concurrency}, {args.requests} requests per URL",
        flush=True,
    )
    trees: list[tuple[str, Path]] = [("this", ROOT)]
    if args.against is not None:
        trees.insert(0, ("against", args.against.resolve()))
    print(
        "| round | tree | URL | p50 ms | p95 ms | max ms | web CPU ms/req | PostgreSQL CPU ms/req "
        "| load |\n|---|---|---|---|---|---|---|---|---|"
    )
    database = urlsplit(args.database_url).path.lstrip("/")
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "busy-pages-bench"
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for number in range(1, args.rounds + 1):
        for label, tree in trees:
            env = dict(os.environ, DATABASE_URL=args.database_url, LOG_LEVEL="WARNING")
            env.pop("DJANGO_SETTINGS_MODULE", None)
            python = tree / ".venv" / "bin" / "python"
            if args.production:
                env.update(_production(python, tree, folder / f"static-{label}", env))
            with Stack(env, folder) as stack:
                base = _start_web(stack, tree, python, args.web_workers)
                group = stack.children["web"].pid  # gunicorn's session: its workers too
                for name, path, auth in URLS:
                    hammer(base, path, auth, credentials, args.concurrency, args.concurrency)
                    web, server = cpu_seconds(in_group(group)), cpu_seconds(backends(database))
                    times = hammer(base, path, auth, credentials, args.concurrency, args.requests)
                    web = (cpu_seconds(in_group(group)) - web) * 1000 / args.requests
                    server = (cpu_seconds(backends(database)) - server) * 1000 / args.requests
                    results.setdefault((label, name), []).extend(times)
                    cpu.setdefault((label, name), []).append((web, server))
                    print(
                        f"| {number} | {label} | {name} | {statistics.median(times):,.0f} | "
                        f"{percentile(times, 0.95):,.0f} | {max(times):,.0f} | {web:.1f} | "
                        f"{server:.1f} | {os.getloadavg()[0]:.1f} |",
                        flush=True,
                    )
    print(
        f"\nload average at the end {os.getloadavg()[0]:.1f}; over all rounds: p50 / p95 ms, "
        "median of the rounds' web and PostgreSQL CPU ms per request:"
    )
    for (label, name), times in results.items():
        web = statistics.median(used[0] for used in cpu[(label, name)])
        server = statistics.median(used[1] for used in cpu[(label, name)])
        print(
            f"  {label} {name}: {statistics.median(times):,.0f} / "
            f"{percentile(times, 0.95):,.0f}; CPU {web:.1f} + {server:.1f}"
        )
    return 0


THROWAWAY_KEY = "busy-pages-bench-throwaway-key-" + "x" * 40


def _production(python: Path, tree: Path, static: Path, env: dict[str, str]) -> dict[str, str]:
    """The settings of a deployment (DEBUG off; a throwaway secret key), with ``tree``'s static
    files collected into ``static`` (the manifest its templates need with DEBUG off)."""
    settings = {
        "DEBUG": "false",
        "SECRET_KEY": THROWAWAY_KEY,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "STATIC_ROOT": str(static),
    }
    subprocess.run(
        [str(python), "manage.py", "collectstatic", "--no-input", "--verbosity", "0"],
        cwd=tree, env=dict(env, **settings), check=True,
    )  # fmt: skip
    return settings


def _start_web(stack: Any, tree: Path, python: Path, workers: int) -> str:
    """gunicorn of ``tree`` (its code, its interpreter) on a free port; its base URL."""
    port = free_port()
    with stack.log("web").open("ab") as log:
        child = subprocess.Popen(
            [
                str(python), "-m", "gunicorn", "gpuplatform.wsgi",
                "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
                "--worker-class", "sync", "--timeout", "120",
            ],
            cwd=tree, env=stack.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    stack.children["web"] = child
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    stack.wait_until("web", answers, timeout=90)
    return base


if __name__ == "__main__":
    raise SystemExit(main())
