"""``python manage.py rollup_usage [--rebuild]``: bring the dashboards' rollups up to date."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from dashboards.rollup import rebuild_usage_rollups, roll_up_usage, sample_capacity


class Command(BaseCommand):
    help = "Roll the accounting ledger up into the dashboards' usage time series."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rebuild", action="store_true", help="Forget the mark and roll up the whole ledger."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        written = rebuild_usage_rollups(now) if options["rebuild"] else roll_up_usage(now)
        sampled = sample_capacity(now)
        self.stdout.write(
            f"{written} five-minute usage buckets written, {sampled} capacity samples."
        )
