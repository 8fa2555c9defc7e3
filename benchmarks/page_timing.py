"""Shared by the page benchmarks (ui_pages_bench.py, dashboards_bench.py): a Django set-up on a
throw-away SQLite file and the timing of one page through the test client."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any


def setup_django(db_path: Path) -> None:
    """Configure Django on the SQLite file `db_path` and allow the test client's host."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    import django

    django.setup()
    from django.test.utils import setup_test_environment

    setup_test_environment()  # allows the test client's host, keeps e-mail local


def measure(client: Any, url: str, runs: int) -> tuple[float, float, int, int]:
    """(median ms, slowest ms, queries of the last run, status) of `runs` GETs after a warm-up."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm template and URL caches
    times: list[float] = []
    status, queries = 0, 0
    for _ in range(runs):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        status, queries = response.status_code, len(captured)
    return statistics.median(times), max(times), queries, status
