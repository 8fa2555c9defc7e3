"""The ledger after many accruals (issue 27: open rows are extended by one set-based UPDATE, only
changed jobs are read): exactly the rows one accrual over the whole time writes, in a number of
queries that does not grow with the running jobs."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from accounting.ledger import accrue_usage
from accounting.models import AccrualMark, UsageRecord
from accounting.rating.money import exact_seconds
from tests.accounting.helpers import at


def ledger() -> list[tuple]:
    return list(
        UsageRecord.objects.order_by("job_id", "start").values_list(
            "job_id", "start", "end", "workers", "units", "seconds", "closed", "unit_hours", "cost"
        )
    )


def test_many_accruals_write_exactly_the_ledger_of_one(script, queue_a, researcher_a, h100_price):
    steps = [script(queue=queue_a, owner=researcher_a, gpus_per_worker=g) for g in (1, 2, 4, 8)]
    elastic = script(queue=queue_a, owner=researcher_a, workers=4, min_workers=1)
    plan = {  # hour -> what happens then (the accruals run every ~5 h 0.1 s, across April 1st)
        0.3: lambda t: steps[0].run(t),
        2.0: lambda t: steps[1].run(t),
        7.77: lambda t: elastic.run(t),
        40.0: lambda t: steps[1].preempt(t),
        41.5: lambda t: steps[1].run(t),
        90.25: lambda t: elastic.scale(t, 2),
        300.0: lambda t: steps[2].run(t),
        600.123: lambda t: steps[0].end(t),
        700.0: lambda t: steps[3].run(t),
        701.0: lambda t: steps[3].end(t),  # between two accruals
        950.0: lambda t: steps[2].end(t),
    }
    step = timedelta(hours=5, microseconds=100_003)
    moment = at(0)
    for _ in range(220):  # 1,100 hours: through the end of March
        moment += step
        for hour in sorted(plan):
            if at(hour) <= moment:
                plan.pop(hour)(at(hour))
        accrue_usage(moment)
    many = ledger()

    for row in many:  # open rows too: seconds always end - start, to the microsecond
        assert row[5] == exact_seconds(row[2] - row[1])
    assert [row[6] for row in many].count(False) == 2  # the restarted job and the elastic one
    assert any(row[1].month == 4 for row in many)  # cut at the month boundary

    UsageRecord.objects.all().delete()
    AccrualMark.objects.all().delete()
    accrue_usage(moment)
    assert ledger() == many


def test_an_accrual_reads_as_many_queries_with_30_running_jobs_as_with_3(
    script, queue_a, researcher_a, h100_price
):
    for _ in range(3):
        script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(0.5))
    accrue_usage(at(1))
    with CaptureQueriesContext(connection) as three:
        accrue_usage(at(1.5))

    for _ in range(27):
        script(queue=queue_a, owner=researcher_a).run(at(1.75))
    accrue_usage(at(2))  # opens their rows
    with CaptureQueriesContext(connection) as thirty:
        accrue_usage(at(2.5))

    assert UsageRecord.objects.filter(closed=False, end=at(2.5)).count() == 30
    assert len(thirty) == len(three)


def test_an_accrual_rolled_back_leaves_nothing_to_duplicate_or_lose(
    script, queue_a, researcher_a, h100_price
):
    steps = script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(1))
    steps.end(at(1.5))
    try:
        with transaction.atomic():  # the cycle's process dies after the accrual's writes
            accrue_usage(at(2))
            raise RuntimeError("crash")
    except RuntimeError:
        pass
    accrue_usage(at(1.75))  # a clock behind the failed one
    accrue_usage(at(3))
    accrue_usage(at(3))

    assert list(UsageRecord.objects.values_list("start", "end", "closed")) == [
        (at(0), at(1.5), True)
    ]


def test_the_accrual_after_jobs_start_extends_their_rows_in_as_many_queries_for_30_as_for_3(
    script, queue_a, researcher_a, h100_price
):
    """The accrual after jobs started reads them again (their run began at the last accrual)
    and extends their open rows: rows alike in one UPDATE, not one per job."""

    def started_together(count: int, hour: float) -> int:
        for _ in range(count):
            script(queue=queue_a, owner=researcher_a).run(at(hour))
        accrue_usage(at(hour))  # opens their rows
        with CaptureQueriesContext(connection) as queries:
            accrue_usage(at(hour + 0.5))
        return len(queries)

    few = started_together(3, 1)
    many = started_together(30, 3)

    assert many == few
    assert UsageRecord.objects.filter(closed=False, end=at(3.5)).count() == 33
    extended = ledger()
    for row in extended:
        assert row[5] == exact_seconds(row[2] - row[1])
    UsageRecord.objects.all().delete()
    AccrualMark.objects.all().delete()
    accrue_usage(at(3.5))
    assert ledger() == extended
