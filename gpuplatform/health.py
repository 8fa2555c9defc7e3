"""Probes: is the process up, can it do its work.

- ``/healthz``: the process answers (reads nothing): a liveness probe.
- ``/readyz``: the database answers, the Celery broker answers, every migration is applied:
  200, or 503 naming each failing part. A readiness probe (and the compose healthchecks).
- ``/readyz?cycle=1``: also a scheduling cycle finished within ``3 x CYCLE_INTERVAL`` seconds
  (beat queues cycles and a worker runs them: both are alive).
- ``python manage.py healthcheck [--cycle] [--wait N]``: the same checks from a shell, for the
  worker and beat containers and for waiting on the migration Job.

``HealthProbeMiddleware`` answers these paths (and ``/metrics``) before Django checks the Host
header or redirects to HTTPS: kubelet and Prometheus reach a pod by its IP address, which is no
name in ``ALLOWED_HOSTS``, over plain HTTP. The answer names the failing part and a short reason;
the full error goes to the log (an unauthenticated caller learns no host name or address).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

logger = logging.getLogger(__name__)

CYCLE_STALE_INTERVALS = 3
"""``/readyz?cycle=1`` fails when no cycle finished within this many CYCLE_INTERVALs."""
BROKER_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class Result:
    """One part's answer: ``reason`` is what a probe may show, ``detail`` what a log may."""

    part: str
    ok: bool
    reason: str = "ok"
    detail: str = ""

    def line(self, *, detailed: bool = False) -> str:
        text = f"{self.part}: {self.reason}"
        if detailed and self.detail and self.detail != self.reason:
            text += f" ({self.detail})"
        return text


def check_database() -> Result:
    connection = connections["default"]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any driver error: refused, timeout, authentication, missing file
        connection.close_if_unusable_or_obsolete()
        return Result("database", False, "unreachable", f"{type(error).__name__}: {error}")
    return Result("database", True)


def check_broker() -> Result:
    from gpuplatform.celery import app

    url = str(settings.CELERY_BROKER_URL)
    if url.startswith("filesystem://"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", "")
        if not (os.path.isdir(str(folder)) and os.access(str(folder), os.W_OK)):
            return Result("broker", False, "unreachable", f"{folder} is not a writable folder")
        return Result("broker", True)
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS
            )
    except Exception as error:  # kombu wraps refused, timeout and authentication errors
        return Result("broker", False, "unreachable", f"{type(error).__name__}: {error}")
    return Result("broker", True)


_migrations_applied = False  # once true in a process it stays true: new migrations need new code


def check_migrations() -> Result:
    global _migrations_applied
    if _migrations_applied:
        return Result("migrations", True)
    connection = connections["default"]
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        connection.close_if_unusable_or_obsolete()
        return Result("migrations", False, "unknown", f"{type(error).__name__}: {error}")
    if plan:
        names = [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return Result("migrations", False, f"{len(names)} not applied: {shown}")
    _migrations_applied = True
    return Result("migrations", True)


def check_cycle() -> Result:
    from queues.models import CycleRun

    limit = CYCLE_STALE_INTERVALS * settings.CYCLE_INTERVAL
    try:
        last = (
            CycleRun.objects.filter(finished_at__isnull=False)
            .order_by("-finished_at")
            .values_list("finished_at", flat=True)
            .first()
        )
    except DatabaseError as error:
        connections["default"].close_if_unusable_or_obsolete()
        return Result("cycle", False, "unknown", f"{type(error).__name__}: {error}")
    if last is None:
        return Result("cycle", False, "no scheduling cycle has finished yet")
    age = (timezone.now() - last).total_seconds()
    if age > limit:
        return Result(
            "cycle",
            False,
            f"no scheduling cycle finished in the last {limit} s (3 x CYCLE_INTERVAL); "
            f"the last one {age:.0f} s ago",
        )
    return Result("cycle", True, f"ok (the last one finished {max(age, 0):.0f} s ago)")


def readiness(*, cycle: bool = False) -> list[Result]:
    """Database, broker and migrations (when the database answers), and the cycle if asked."""
    results = [check_database(), check_broker()]
    if results[0].ok:
        results.append(check_migrations())
        if cycle:
            results.append(check_cycle())
    else:
        results.append(Result("migrations", False, "unknown (no database)"))
        if cycle:
            results.append(Result("cycle", False, "unknown (no database)"))
    return results


def _text(body: str, status: int) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def healthz_view(request: HttpRequest) -> HttpResponse:
    return _text("ok\n", 200)


def readyz_view(request: HttpRequest) -> HttpResponse:
    cycle = request.GET.get("cycle", "").lower() in {"1", "true", "yes", "on"}
    results = readiness(cycle=cycle)
    failing = [result for result in results if not result.ok]
    for result in failing:
        logger.warning("not ready: %s", result.line(detailed=True))
    head = "ready" if not failing else "not ready: " + ", ".join(r.part for r in failing)
    body = "\n".join([head, *(result.line() for result in results)]) + "\n"
    return _text(body, 503 if failing else 200)


class HealthProbeMiddleware:
    """Answers ``/healthz``, ``/readyz`` and ``/metrics`` first in the chain: no Host check, no
    HTTPS redirect, no session (probes and scrapers address the pod itself, over plain HTTP)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = self._views().get(request.path_info.rstrip("/"))
        if view is not None:
            return view(request)
        return self.get_response(request)

    @staticmethod
    def _views() -> dict[str, Callable[[HttpRequest], HttpResponse]]:
        from queues.metrics import metrics_view

        return {"/healthz": healthz_view, "/readyz": readyz_view, "/metrics": metrics_view}
