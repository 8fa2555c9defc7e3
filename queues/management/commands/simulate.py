"""``python manage.py simulate SCENARIO.yaml [--output F] [--policy P]`` (docs/SCENARIOS.md).

A thin wrapper over ``gpusched.sim.simulate``: it never touches the database, the broker or
a cluster.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from gpusched.sim.simulate import run_command


class Command(BaseCommand):
    help = "Replay a scenario file through the scheduling engine and write a JSON report."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("scenario", help="scenario YAML file (docs/SCENARIOS.md)")
        parser.add_argument("--output", help="write the report here instead of stdout")
        parser.add_argument("--policy", default="default", help="default, fifo or greedy")

    def handle(self, *args: Any, **options: Any) -> None:
        code = run_command(
            options["scenario"], options["output"], options["policy"], self.stdout, self.stderr
        )
        if code != 0:
            raise CommandError("simulation not run (see the message above)", returncode=code)
