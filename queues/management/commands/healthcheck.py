"""``python manage.py healthcheck [--cycle] [--wait SECONDS]``: the checks of ``/readyz``
(gpuplatform/health.py) from a shell, with the full error of each failing part.

Exit status 0 when every part is ready, 1 otherwise. The worker and beat containers use it as
their probe; ``--wait`` retries until ready, for an init container that waits for the migration
Job (and for the database) before the web, worker and beat start.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from gpuplatform import health


class Command(BaseCommand):
    help = (
        "Check that the database and the broker answer and every migration is applied (with "
        "--cycle: that a scheduling cycle finished within 3 x CYCLE_INTERVAL). Exit 1 if not."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--cycle", action="store_true", help="Also check that scheduling cycles run."
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="Retry every 2 s until ready, for at most this long (default: check once).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        deadline = time.monotonic() + max(0.0, options["wait"])
        while True:
            results = health.readiness(cycle=options["cycle"])
            failing = [result for result in results if not result.ok]
            if not failing or time.monotonic() >= deadline:
                break
            self.stderr.write("waiting: " + "; ".join(r.line(detailed=True) for r in failing))
            time.sleep(2.0)
        for result in results:
            self.stdout.write(result.line(detailed=True))
        if failing:
            raise CommandError("not ready: " + ", ".join(result.part for result in failing))
        self.stdout.write(self.style.SUCCESS("ready"))
