"""The measurements of ``live_e2e.py`` that are not the run itself: the queries of one
submission (through the REST API with Django's test client, and ``submit_job`` alone), a cProfile
of in-process POSTs, the cycle phases from the cycle's own counters, and pgbench's one-row
UPDATE rate on the same PostgreSQL as the yardstick.

Django must be set up (``live_cycle_bench.setup_django``) before any function here is called.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

PHASE_SUM = "gpuplatform_cycle_phase_seconds_sum"
PHASE_COUNT = "gpuplatform_cycle_phase_seconds_count"
ONE_ROW_UPDATE = (
    "\\set aid random(1, 100000 * :scale)\n"
    "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"
)


def post_job(token: str, body: dict[str, Any]) -> Any:
    """POST /api/v1/jobs/ in this process through Django's test client (no server)."""
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    return client.post(
        "/api/v1/jobs/",
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


def captured(action: Callable[[], Any]) -> list[str]:
    """The SQL of every query ``action`` runs (DEBUG or not)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as context:
        action()
    return [str(query["sql"]) for query in context.captured_queries]


def query_kinds(queries: list[str]) -> str:
    """``SELECT 9, UPDATE 3, ...``: the statements by their first word (SAVEPOINTs included)."""
    kinds = Counter(sql.lstrip("( ").split(None, 1)[0].upper() for sql in queries if sql.strip())
    return ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())


def shorten(sql: str, width: int = 150) -> str:
    text = re.sub(r"\s+", " ", sql)
    return text if len(text) <= width else text[: width - 3] + "..."


def profile_posts(token: str, body: Callable[[int], dict[str, Any]], count: int) -> str:
    """cProfile of ``count`` test-client POSTs: the top functions by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for index in range(count):
        post_job(token, body(index))
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(40)
    root = re.escape(str(Path(__file__).resolve().parent.parent))
    return re.sub(rf"{root}/(\.venv/lib/python[0-9.]+/site-packages/)?", "", out.getvalue())


def phase_counters() -> dict[str, tuple[float, int]]:
    """Each cycle phase's (seconds, cycles) so far, from the counters ``cycle._record`` keeps."""
    from queues.models import MetricCounter

    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in MetricCounter.objects.filter(name__in=[PHASE_SUM, PHASE_COUNT]):
        phase = row.labels.partition('phase="')[2].rstrip('"')
        if row.name == PHASE_SUM:
            seconds[phase] = row.value
        else:
            counts[phase] = int(row.value)
    return {phase: (seconds.get(phase, 0.0), counts.get(phase, 0)) for phase in seconds}


def phase_lines(
    before: dict[str, tuple[float, int]], after: dict[str, tuple[float, int]]
) -> list[str]:
    """Per phase, the seconds and cycles between two ``phase_counters`` readings."""
    lines = []
    for phase, (seconds, count) in after.items():
        earlier_seconds, earlier_count = before.get(phase, (0.0, 0))
        spent, cycles = seconds - earlier_seconds, count - earlier_count
        if cycles:
            lines.append(
                f"{phase} {spent:.2f} s in {cycles} cycles (mean {spent / cycles * 1000:.0f} ms)"
            )
    return lines


def pgbench_tps(database_url: str, seconds: int, clients: int, folder: Path) -> str:
    """pgbench's TPS of a one-row UPDATE (one autocommit transaction each), ``clients``
    connections for ``seconds`` s, on a scratch database next to the benchmark's."""
    import psycopg

    if shutil.which("pgbench") is None:
        return "pgbench not found"
    parts = urlsplit(database_url)
    scratch = parts.path.lstrip("/") + "_pgbench"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
        conn.execute(f'CREATE DATABASE "{scratch}"')
    target = urlunsplit(parts._replace(scheme="postgresql", path=f"/{scratch}"))
    script = folder / "one_row_update.sql"
    script.write_text(ONE_ROW_UPDATE)
    subprocess.run(["pgbench", "-i", "-q", "-s", "1", target], capture_output=True, check=True)
    run = subprocess.run(
        ["pgbench", "-n", "-T", str(seconds), "-c", str(clients), "-j", str(min(clients, 2)),
         "-f", str(script), target],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"tps = ([0-9.]+)", run.stdout)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
    if found is None:
        return f"pgbench printed no tps: {run.stdout[-300:]}"
    return f"{float(found.group(1)):,.0f} one-row UPDATE transactions/s ({clients} clients)"
