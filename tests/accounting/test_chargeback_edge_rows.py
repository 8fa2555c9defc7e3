"""The chargeback's edge rows (open, unpriced or cut by the period) are rated once per set of
equal rating inputs; the sums stay those of rating every row on its own, to the cent."""

from __future__ import annotations

from decimal import Decimal

from accounting import rating
from accounting.chargeback import Period, grouped_totals
from accounting.ledger import accrue_usage
from accounting.models import ClassMultiplier, FlavorPrice, UsageRecord
from accounting.pricing import interval_of, load_price_list
from gpuplatform import fast_rows
from tests.accounting.helpers import at


def _rated_row_by_row(period: Period) -> dict[int, tuple[Decimal, Decimal, Decimal]]:
    """Per team: every overlapping row clipped to the period and rated alone."""
    prices = load_price_list()
    out: dict[int, tuple[Decimal, Decimal, Decimal]] = {}
    records = UsageRecord.objects.filter(start__lt=period.end, end__gt=period.start)
    for record in records.select_related("team", "queue", "user", "cluster", "flavor"):
        charges = rating.rate([interval_of(record, period.start, period.end)], prices)
        hours, equivalent, cost = out.get(record.team_id, (Decimal(0),) * 3)
        for charge in charges:
            hours += charge.unit_hours
            equivalent += charge.gpu_equivalent_hours
            cost += charge.cost
        out[record.team_id] = (hours, equivalent, cost)
    return out


def test_jobs_started_by_one_cycle_cost_what_each_costs_rated_alone(
    script, queue_a, queue_b, researcher_a, researcher_b, h100_price, flavor_h100
):
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("3.337"), effective_from=at(1.3)
    )
    # three jobs of team-a and two of team-b start in the same cycle, the others alone
    for n, (queue, owner, units, start) in enumerate(
        [
            (queue_a, researcher_a, 1, 0.0),
            (queue_a, researcher_a, 1, 0.0),
            (queue_a, researcher_a, 1, 0.0),
            (queue_a, researcher_a, 3, 0.0),
            (queue_b, researcher_b, 1, 0.0),
            (queue_b, researcher_b, 1, 0.0),
            (queue_b, researcher_b, 2, 0.2777),
            (queue_a, researcher_a, 1, 1.1111),
        ]
    ):
        script(queue=queue, owner=owner, gpus_per_worker=units, name=f"j{n}").run(at(start))
    accrue_usage(at(0.5))
    accrue_usage(at(2.0123))  # every row still open, ending at the last accrual
    # a period cutting the rows' start off, and one holding them whole
    for period in (Period(at(0.1234), at(5)), Period(at(-24), at(5))):
        ours = {
            ids[0]: (totals.gpu_hours, totals.gpu_equivalent_hours, totals.cost)
            for ids, totals in grouped_totals(UsageRecord.objects.all(), period, ("team",))
        }

        assert ours == _rated_row_by_row(period)
        assert all(cost > 0 for _, _, cost in ours.values())


def test_open_rows_rated_sums_are_kept_while_the_prices_stay_and_rated_anew_after_a_change(
    script, queue_a, researcher_a, h100_price, flavor_h100, monkeypatch
):
    for n, start in enumerate((0.0, 0.0, 0.5)):
        script(queue=queue_a, owner=researcher_a, name=f"j{n}").run(at(start))
    accrue_usage(at(3.25))
    period = Period(at(-24), at(5))

    def totals() -> dict[int, tuple[Decimal, Decimal, Decimal]]:
        return {
            ids[0]: (t.gpu_hours, t.gpu_equivalent_hours, t.cost)
            for ids, t in grouped_totals(UsageRecord.objects.all(), period, ("team",))
        }

    first = totals()
    assert first == _rated_row_by_row(period)
    real_rate = rating.rate

    def no_rating(*args: object, **kwargs: object) -> None:
        raise AssertionError("rated again under the same prices")

    monkeypatch.setattr(rating, "rate", no_rating)
    assert totals() == first  # the same price list: the kept sums, nothing rated
    monkeypatch.setattr(rating, "rate", real_rate)
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("7.77"), effective_from=at(1)
    )
    repriced = totals()
    assert repriced == _rated_row_by_row(period)
    assert repriced[queue_a.team_id][2] > first[queue_a.team_id][2]
    service_class = UsageRecord.objects.first().service_class
    ClassMultiplier.objects.create(
        service_class=service_class, multiplier=Decimal("0.5"), effective_from=at(2)
    )
    discounted = totals()
    assert discounted == _rated_row_by_row(period)
    assert discounted[queue_a.team_id][2] < repriced[queue_a.team_id][2]


def test_edge_rows_read_past_djangos_timestamp_loader_are_what_the_orm_reads(
    script, queue_a, queue_b, researcher_a, researcher_b, h100_price, monkeypatch
):
    """On PostgreSQL the edge rows' timestamps come from psycopg's own loader
    (gpuplatform/fast_rows.py); elsewhere the ORM reads them. Either way: the ORM's values."""
    script(queue=queue_a, owner=researcher_a, name="a").run(at(0.1))
    script(queue=queue_b, owner=researcher_b, name="b").run(at(0.7))
    accrue_usage(at(1.5))
    accrue_usage(at(2.25))
    rows = UsageRecord.objects.order_by("pk").values_list(
        "team_id", "flavor_id", "units", "gpu_equivalent", "start", "end", "cost", "closed"
    )
    assert len(rows) >= 2
    assert fast_rows.fetched(rows) == list(rows)
    period = Period(at(0.5), at(5))
    for keys in (("team",), ("user", "flavor", "service_class"), ("queue",), ("job",)):
        ours = dict(grouped_totals(UsageRecord.objects.all(), period, keys))
        with monkeypatch.context() as patched:
            patched.setattr(fast_rows, "fetched", list)
            theirs = dict(grouped_totals(UsageRecord.objects.all(), period, keys))
        assert ours == theirs and ours, keys


def test_no_jobs_no_edge_rows(h100_price):
    """A page without jobs asks for the costs of none: nothing to read (no query is made)."""
    rows = UsageRecord.objects.filter(job_id__in=[]).values_list("start", "end")
    assert fast_rows.fetched(rows) == [] == list(rows)
    assert (
        dict(
            grouped_totals(
                UsageRecord.objects.filter(job_id__in=[]), Period(at(0), at(5)), ("job",)
            )
        )
        == {}
    )
