"""``python manage.py import_trace {philly,alibaba,itp} --output scenario.yaml [options]``.

A thin wrapper over :mod:`gpusched.sim.traces.cli` (the same arguments as
``python -m gpusched.sim.traces``); it touches no database.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from gpusched.sim.traces.cli import add_arguments, run_import, write_result
from gpusched.sim.traces.common import TraceOptionError


class Command(BaseCommand):
    help = "Turn a public GPU-cluster trace (philly, alibaba, itp) into a scenario YAML file."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = run_import(options)
        except TraceOptionError as exc:
            raise CommandError(str(exc)) from exc
        write_result(result, options["trace"], options.get("output"), self.stdout)
