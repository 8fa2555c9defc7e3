"""``python manage.py run_cycle``: run one scheduling cycle now and print what it decided."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from queues.scheduling.policies import POLICIES
from queues.services import run_cycle


class Command(BaseCommand):
    help = (
        "Run one scheduling cycle now (sync clusters, decide, apply) and print its decisions. "
        "Does nothing if another worker is running a cycle."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--policy",
            default="default",
            choices=sorted(POLICIES),
            help="Scheduling policy (default: %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = run_cycle(policy=options["policy"], worker="manage.py run_cycle")
        for line in report.lines:
            self.stdout.write(line)
        summary = report.summary()
        if report.ran:
            summary += f" ({report.duration_seconds:.3f} s)"
        self.stdout.write(self.style.SUCCESS(summary) if report.ran else summary)
