"""Monthly statements: drafts regenerated while the month is open, final ones never change."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from accounting.ledger import accrue_usage
from accounting.models import FinalStatementError, Statement, StatementLine
from accounting.statements import add_adjustment, close_month, generate_statement
from queues.models import Node
from tests.accounting.helpers import at

MARCH = date(2026, 3, 1)
MID_MARCH = datetime(2026, 3, 20, tzinfo=UTC)
APRIL_2ND = datetime(2026, 4, 2, tzinfo=UTC)


@pytest.fixture
def march_usage(script, queue_a, researcher_a, h100_price):
    """team-a: 2 GPUs x 2 h (8.00) and 1 GPU x 1 h (2.00) in March."""
    script(queue=queue_a, owner=researcher_a, gpus_per_worker=2).run(at(0)).end(at(2))
    script(queue=queue_a, owner=researcher_a, name="b").run(at(3)).end(at(4))
    accrue_usage(at(5))


def test_draft_statement_has_usage_lines_and_their_total(march_usage, team_a):
    statement = generate_statement(team_a, MARCH, MID_MARCH)

    assert statement.status == Statement.Status.DRAFT
    assert statement.total == Decimal("10.00")
    (line,) = statement.lines.all()
    assert (line.kind, line.queue.name, line.flavor.name, line.service_class.name) == (
        "usage",
        "main",
        "h100",
        "standard",
    )
    assert (line.gpu_hours, line.cost) == (Decimal(5), Decimal("10.00"))


def test_draft_is_regenerated_with_new_usage(march_usage, team_a, script, queue_a, researcher_a):
    generate_statement(team_a, MARCH, MID_MARCH)
    script(queue=queue_a, owner=researcher_a, name="c").run(at(6)).end(at(7))
    accrue_usage(at(8))

    statement = generate_statement(team_a, MARCH, MID_MARCH)

    assert statement.total == Decimal("12.00")
    assert statement.lines.count() == 1


def test_close_month_finalizes_and_a_final_statement_never_changes(
    march_usage, team_a, script, queue_a, researcher_a
):
    (statement,) = close_month(MARCH, APRIL_2ND)
    assert (statement.status, statement.total) == ("final", Decimal("10.00"))
    # late usage appearing for March (e.g. a correction in the ledger) does not alter it
    script(queue=queue_a, owner=researcher_a, name="late").run(at(10)).end(at(11))
    accrue_usage(at(12))

    again = generate_statement(team_a, MARCH, APRIL_2ND)
    close_month(MARCH, APRIL_2ND)

    assert again.total == Decimal("10.00")
    assert Statement.objects.get().total == Decimal("10.00")
    assert StatementLine.objects.count() == 1


def test_models_refuse_to_change_a_final_statement_or_its_lines(march_usage):
    (statement,) = close_month(MARCH, APRIL_2ND)
    line = statement.lines.get()

    statement.total = Decimal(0)
    with pytest.raises(FinalStatementError):
        statement.save()
    line.cost = Decimal(0)
    with pytest.raises(FinalStatementError):
        line.save()
    with pytest.raises(FinalStatementError):
        line.delete()
    with pytest.raises(FinalStatementError):
        StatementLine.objects.create(statement=statement, kind="adjustment", cost=Decimal(1))


def test_an_open_month_cannot_be_closed(march_usage):
    with pytest.raises(FinalStatementError, match="not over"):
        close_month(MARCH, MID_MARCH)


def test_corrections_are_adjustment_lines_on_the_next_statement(march_usage, team_a):
    close_month(MARCH, APRIL_2ND)

    add_adjustment(team_a, Decimal("-2.50"), "Refund: node n1 failed on 2026-03-02", APRIL_2ND)
    april = generate_statement(team_a, date(2026, 4, 1), APRIL_2ND)

    assert april.total == Decimal("-2.50")
    assert [(line.kind, line.cost) for line in april.lines.all()] == [
        ("adjustment", Decimal("-2.50"))
    ]
    assert Statement.objects.get(month=MARCH).total == Decimal("10.00")


def test_idle_share_lines_spread_unused_capacity_over_the_teams(march_usage, team_a, cluster):
    Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 1})
    (statement,) = close_month(MARCH, APRIL_2ND, share_idle=True)

    idle = statement.lines.get(kind="idle")

    # one H100 for March's 744 h; idle whenever nothing runs on it (over-allocation while
    # 2 GPUs ran counts as no idle): 744 - 2 - 1 = 741 idle hours at 2.00, all to team-a
    assert idle.cost == Decimal("1482.00")
    assert statement.total == Decimal("10.00") + idle.cost


def test_close_month_command_finalizes_the_given_month(march_usage, team_a):
    call_command("close_month", "--month", "2026-03")

    assert Statement.objects.get(team=team_a).status == "final"


def test_close_month_command_rejects_a_bad_month():
    with pytest.raises(CommandError, match="YYYY-MM"):
        call_command("close_month", "--month", "March")


def test_beat_finalizes_last_month_early_on_the_first():
    entry = settings.CELERY_BEAT_SCHEDULE["close-last-month"]

    assert entry["task"] == "accounting.tasks.close_last_month"
    assert entry["schedule"].day_of_month == {1}


def test_beat_task_finalizes_the_statements_of_the_month_before_now(
    script, queue_a, researcher_a, h100_price, team_a
):
    from datetime import timedelta

    from django.utils import timezone

    from accounting import rating
    from accounting.tasks import close_last_month

    last_month = rating.month_start(rating.month_start(timezone.now()) - timedelta(days=1))
    steps = script(queue=queue_a, owner=researcher_a).run(last_month + timedelta(days=3))
    steps.end(last_month + timedelta(days=3, hours=2))
    accrue_usage(last_month + timedelta(days=4))

    assert close_last_month() == 1

    statement = Statement.objects.get(team=team_a)
    assert (statement.month, statement.status, statement.total) == (
        last_month.date(),
        "final",
        Decimal("4.00"),
    )
