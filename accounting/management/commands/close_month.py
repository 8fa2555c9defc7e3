"""``manage.py close_month [--month YYYY-MM] [--share-idle]``: finalize a month's statements."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounting.models import FinalStatementError
from accounting.statements import close_month, first_day


def last_month() -> date:
    return first_day(timezone.now()) - timedelta(days=1)


class Command(BaseCommand):
    help = "Regenerate and finalize every team's statement of a past month (default: last month)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", help="YYYY-MM (UTC); default: last month.")
        parser.add_argument(
            "--share-idle",
            action="store_true",
            default=None,
            help="Add idle-share lines (default: the ACCOUNTING_SHARE_IDLE setting).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        month = options["month"]
        if month:
            try:
                year, number = (int(part) for part in month.split("-"))
                day = date(year, number, 1)
            except ValueError:
                raise CommandError(f"--month={month!r} is not a month: use YYYY-MM.") from None
        else:
            day = last_month().replace(day=1)
        try:
            statements = close_month(day, timezone.now(), share_idle=options["share_idle"])
        except FinalStatementError as error:
            raise CommandError(error.messages[0]) from None
        for statement in statements:
            self.stdout.write(
                f"{statement.team.name} {statement.month:%Y-%m}: {statement.total} "
                f"{statement.currency} ({statement.status})"
            )
        self.stdout.write(f"{len(statements)} statement(s) final for {day:%Y-%m}.")
