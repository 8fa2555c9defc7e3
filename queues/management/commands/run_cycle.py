"""``python manage.py run_cycle``: run one scheduling cycle now and print what it decided."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from gpusched.engine.policies import POLICIES
from queues.models import Job
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
        parser.add_argument(
            "--pending",
            type=int,
            default=0,
            metavar="N",
            help="Also print why the first N pending jobs (oldest first) are still waiting.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = run_cycle(policy=options["policy"], worker="manage.py run_cycle")
        for line in report.lines:
            self.stdout.write(line)
        summary = report.summary()
        if report.ran:
            summary += f" ({report.duration_seconds:.3f} s)"
        self.stdout.write(self.style.SUCCESS(summary) if report.ran else summary)
        if options["pending"] > 0:
            waiting = (
                Job.objects.filter(state=Job.State.PENDING)
                .select_related("runtime")
                .order_by("submitted_at", "pk")[: options["pending"]]
            )
            for job in waiting:
                runtime = getattr(job, "runtime", None)
                message = runtime.pending_message if runtime is not None else ""
                self.stdout.write(
                    f"pending: {job.name} (#{job.pk}): {message or 'not explained yet'}"
                )
