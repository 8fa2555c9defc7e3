"""Monthly statements per team.

A statement covers one UTC month. While the month is open it is a DRAFT, regenerated from the
ledger (usage lines per queue x flavor x service class, plus idle-share lines when idle sharing
is on); adjustment lines are kept across regenerations. Once the month is over, `close_month`
regenerates it one last time and makes it FINAL: a final statement and its lines never change
(the models refuse it); corrections are adjustment lines on a later, still open statement
(`add_adjustment`). The total is the plain sum of the lines' rounded costs.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from accounting import rating
from accounting.chargeback import Period, grouped_totals, month_of
from accounting.idle import idle_shares
from accounting.models import FinalStatementError, Statement, StatementLine, UsageRecord
from accounting.pricing import currency
from queues.models import Team

LINE_KEYS = ("queue", "flavor", "service_class")


def first_day(moment: datetime) -> date:
    return rating.month_start(moment).date()


def share_idle_default() -> bool:
    return bool(getattr(settings, "ACCOUNTING_SHARE_IDLE", False))


def generate_statement(
    team: Team, month: date, now: datetime, *, share_idle: bool | None = None
) -> Statement:
    """Create or regenerate the team's draft statement for `month`; a final one is returned
    unchanged."""
    period = month_of(month)
    with transaction.atomic():
        statement, _ = Statement.objects.select_for_update().get_or_create(
            team=team, month=period.start.date(), defaults={"currency": currency()}
        )
        if statement.status == Statement.Status.FINAL:
            return statement
        statement.lines.filter(
            kind__in=[StatementLine.Kind.USAGE, StatementLine.Kind.IDLE]
        ).delete()
        records = UsageRecord.objects.filter(team=team)
        lines = [
            StatementLine(
                statement=statement,
                kind=StatementLine.Kind.USAGE,
                queue_id=ids[0],
                flavor_id=ids[1],
                service_class_id=ids[2],
                gpu_hours=totals.gpu_hours,
                gpu_equivalent_hours=totals.gpu_equivalent_hours,
                cost=totals.cost,
            )
            for ids, totals in grouped_totals(records, _until(period, now), LINE_KEYS)
        ]
        if share_idle_default() if share_idle is None else share_idle:
            lines += [
                StatementLine(
                    statement=statement,
                    kind=StatementLine.Kind.IDLE,
                    description=f"Share of idle GPUs on cluster {share.cluster}",
                    cost=share.cost,
                )
                for share in idle_shares(_until(period, now))
                if share.team == team.name and share.cost
            ]
        StatementLine.objects.bulk_create(lines)
        statement.total = statement.lines.aggregate(total=Sum("cost"))["total"] or Decimal(0)
        statement.generated_at = now
        statement.save()
    return statement


def _until(period: Period, now: datetime) -> Period:
    """A draft counts usage up to now; a closed month all of it."""
    return Period(period.start, max(period.start, min(period.end, now)))


def finalize(statement: Statement, now: datetime) -> Statement:
    if statement.status == Statement.Status.FINAL:
        return statement
    period = month_of(statement.month)
    if now < period.end:
        raise FinalStatementError(
            f"The month {statement.month:%Y-%m} is still open until {period.end.isoformat()}: "
            "its statement stays a draft."
        )
    statement.status = Statement.Status.FINAL
    statement.finalized_at = now
    statement.save()
    return statement


def close_month(month: date, now: datetime, *, share_idle: bool | None = None) -> list[Statement]:
    """Regenerate and finalize the statements of every team with usage (or a statement) in
    `month`. Refuses a month that is not over. Re-running changes nothing."""
    period = month_of(month)
    if now < period.end:
        raise FinalStatementError(
            f"The month {month:%Y-%m} is not over until {period.end.isoformat()}; "
            "only past months can be closed."
        )
    used = UsageRecord.objects.filter(start__lt=period.end, end__gt=period.start).values("team_id")
    teams = Team.objects.filter(pk__in=used) | Team.objects.filter(
        statements__month=period.start.date()
    )
    closed = []
    for team in teams.distinct().order_by("name"):
        statement = generate_statement(team, period.start.date(), now, share_idle=share_idle)
        closed.append(finalize(statement, now))
    return closed


def add_adjustment(team: Team, cost: Decimal, description: str, now: datetime) -> StatementLine:
    """A correction on the team's statement of the current (open) month."""
    if not description.strip():
        raise FinalStatementError("Say what the adjustment corrects (description).")
    with transaction.atomic():
        statement, _ = Statement.objects.select_for_update().get_or_create(
            team=team, month=first_day(now), defaults={"currency": currency()}
        )
        line = StatementLine.objects.create(
            statement=statement,
            kind=StatementLine.Kind.ADJUSTMENT,
            description=description,
            cost=rating.quantize_money(cost),
        )
        statement.total = statement.lines.aggregate(total=Sum("cost"))["total"] or Decimal(0)
        statement.save()
    return line
