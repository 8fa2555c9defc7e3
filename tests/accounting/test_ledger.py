"""The usage ledger: exact segments from job timelines, idempotent accrual, pricing at closing."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from accounting.ledger import accrue_usage
from accounting.models import ClassMultiplier, FlavorPrice, UsageRecord
from queues.models import Flavor, Job, ServiceClass
from tests.accounting.helpers import at, rows


def test_running_job_has_one_open_row_extended_to_each_accrual(
    script, queue_a, researcher_a, h100_price
):
    job = script(queue=queue_a, owner=researcher_a, gpus_per_worker=4).run(at(0)).job

    accrue_usage(at(1))
    accrue_usage(at(2.5))

    assert rows(job.pk) == [(at(0), at(2.5), 4, False, None)]
    record = UsageRecord.objects.get()
    assert record.seconds == Decimal(9000)
    assert (record.team, record.queue, record.user) == (queue_a.team, queue_a, researcher_a)
    assert record.cluster.name == "sim"
    assert record.flavor.name == "h100"
    assert record.service_class.name == "standard"


def test_segments_follow_start_preemption_restart_and_finish_exactly(
    script, queue_a, researcher_a, h100_price
):
    steps = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2)
    steps.run(at(0.25))
    accrue_usage(at(1))
    steps.preempt(at(1.4))  # between two accruals: the row ends at the preemption, not at 2
    accrue_usage(at(2))
    steps.run(at(2.75))
    accrue_usage(at(3))
    steps.end(at(3.5))
    accrue_usage(at(4))

    assert rows(steps.job.pk) == [
        (at(0.25), at(1.4), 2, True, Decimal("4.60")),  # 2 GPUs x 1.15 h x 2.00
        (at(2.75), at(3.5), 2, True, Decimal("3.00")),
    ]


def test_preemption_and_restart_between_two_accruals_keep_both_runs_exact(
    script, queue_a, researcher_a, h100_price
):
    steps = script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(1))
    steps.preempt(at(1.5))
    steps.run(at(1.75))

    accrue_usage(at(2))

    assert [(s, e, closed) for s, e, _, closed, _ in rows()] == [
        (at(0), at(1.5), True),
        (at(1.75), at(2), False),
    ]


def test_restart_at_the_instant_of_the_requeue_starts_a_new_billed_run(
    script, queue_a, researcher_a, h100_price
):
    # requeued and restarted in the same instant (the demo's replay decides it so): the stop
    # recorded before the new `started` event ends the first run only
    steps = script(queue=queue_a, owner=researcher_a).run(at(0))
    steps.preempt(at(1)).run(at(1))
    steps.end(at(2.5))

    accrue_usage(at(3))

    assert [(s, e, closed) for s, e, _, closed, _ in rows()] == [
        (at(0), at(1), True),
        (at(1), at(2.5), True),
    ]


def test_cancelled_and_failed_jobs_close_at_their_finish_time(
    script, queue_a, researcher_a, h100_price
):
    cancelled = script(queue=queue_a, owner=researcher_a, name="a").run(at(0))
    failed = script(queue=queue_a, owner=researcher_a, name="b").run(at(0))
    accrue_usage(at(0.5))
    cancelled.end(at(0.75), Job.State.CANCELLED)
    failed.end(at(1), Job.State.FAILED)

    accrue_usage(at(3))

    assert rows(cancelled.job.pk) == [(at(0), at(0.75), 1, True, Decimal("1.50"))]
    assert rows(failed.job.pk) == [(at(0), at(1), 1, True, Decimal("2.00"))]


def test_job_running_across_a_month_boundary_is_split_at_midnight_utc(
    script, queue_a, researcher_a, h100_price
):
    start = datetime(2026, 3, 31, 22, 0, tzinfo=UTC)
    steps = script(queue=queue_a, owner=researcher_a).run(start)
    accrue_usage(datetime(2026, 3, 31, 23, 0, tzinfo=UTC))
    steps.end(datetime(2026, 4, 1, 3, 0, tzinfo=UTC))

    accrue_usage(datetime(2026, 4, 1, 3, 0, 30, tzinfo=UTC))

    april = datetime(2026, 4, 1, tzinfo=UTC)
    assert rows() == [
        (start, april, 1, True, Decimal("4.00")),
        (april, datetime(2026, 4, 1, 3, 0, tzinfo=UTC), 1, True, Decimal("6.00")),
    ]


def test_open_row_is_closed_at_the_month_boundary_and_continued_open(
    script, queue_a, researcher_a, h100_price
):
    start = datetime(2026, 3, 31, 23, 0, tzinfo=UTC)
    script(queue=queue_a, owner=researcher_a).run(start)
    accrue_usage(datetime(2026, 3, 31, 23, 30, tzinfo=UTC))

    accrue_usage(datetime(2026, 4, 1, 0, 30, tzinfo=UTC))

    april = datetime(2026, 4, 1, tzinfo=UTC)
    assert [(s, e, closed) for s, e, _, closed, _ in rows()] == [
        (start, april, True),
        (april, datetime(2026, 4, 1, 0, 30, tzinfo=UTC), False),
    ]


def test_scale_closes_the_segment_and_opens_one_with_the_new_worker_count(
    script, queue_a, researcher_a, h100_price
):
    steps = script(
        queue=queue_a, owner=researcher_a, workers=4, min_workers=1, gpus_per_worker=2
    ).run(at(0), workers=2)
    accrue_usage(at(1))
    steps.scale(at(1.5), 4)
    accrue_usage(at(2))
    steps.scale(at(2.25), 1)
    steps.end(at(3))

    accrue_usage(at(4))

    assert rows() == [
        (at(0), at(1.5), 4, True, Decimal("12.00")),
        (at(1.5), at(2.25), 8, True, Decimal("12.00")),
        (at(2.25), at(3), 2, True, Decimal("3.00")),
    ]


def test_accruing_twice_at_the_same_moment_changes_nothing(
    script, queue_a, researcher_a, h100_price
):
    steps = script(queue=queue_a, owner=researcher_a, workers=2, min_workers=1).run(at(0))
    accrue_usage(at(1))
    steps.scale(at(1.5), 1)
    steps.end(at(2))
    accrue_usage(at(2.5))
    before = list(UsageRecord.objects.order_by("pk").values())

    report = accrue_usage(at(2.5))
    accrue_usage(at(5))

    assert list(UsageRecord.objects.order_by("pk").values()) == before
    assert (report.opened, report.closed) == (0, 0)


def test_the_database_refuses_a_second_row_for_the_same_job_and_start(
    script, queue_a, researcher_a, h100_price
):
    script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(1))
    original = UsageRecord.objects.get()
    copy = UsageRecord.objects.get()
    copy.pk = None
    copy.closed = True

    with pytest.raises(IntegrityError), transaction.atomic():
        copy.save()

    assert UsageRecord.objects.get() == original


def test_closed_rows_are_never_rewritten(script, queue_a, researcher_a, h100_price):
    steps = script(queue=queue_a, owner=researcher_a).run(at(0))
    accrue_usage(at(0.5))
    steps.end(at(1))
    accrue_usage(at(1.5))
    Job.objects.filter(pk=steps.job.pk).update(finished_at=at(3))  # a later, wrong correction
    h100_price.price_per_unit_hour = Decimal("9")
    h100_price.save()

    accrue_usage(at(4))

    assert rows() == [(at(0), at(1), 1, True, Decimal("2.00"))]


def test_admitted_job_that_has_not_started_is_not_billed(script, queue_a, researcher_a, h100_price):
    script(queue=queue_a, owner=researcher_a).admit(at(0))

    accrue_usage(at(1))

    assert rows() == []


def test_price_change_mid_job_charges_each_part_at_its_own_price(
    script, queue_a, researcher_a, h100_price, flavor_h100
):
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("3.50"), effective_from=at(1)
    )
    steps = script(queue=queue_a, owner=researcher_a, gpus_per_worker=2).run(at(0))
    steps.end(at(3))

    accrue_usage(at(3))

    record = UsageRecord.objects.get()
    assert record.cost == Decimal("18.00")  # 2 x 1 h x 2.00 + 2 x 2 h x 3.50
    assert record.unit_hours == Decimal(6)
    assert record.gpu_equivalent_hours == Decimal(6)


def test_service_class_multiplier_defaults_to_its_price_multiplier_then_follows_history(
    script, queue_a, researcher_a, h100_price
):
    premium = ServiceClass.objects.create(name="premium", price_multiplier=Decimal("1.5"))
    ClassMultiplier.objects.create(
        service_class=premium, multiplier=Decimal("2"), effective_from=at(1)
    )
    steps = script(queue=queue_a, owner=researcher_a, service_class=premium).run(at(0))
    steps.end(at(2))

    accrue_usage(at(2))

    assert UsageRecord.objects.get().cost == Decimal("7.00")  # 1 h x 2 x 1.5 + 1 h x 2 x 2


def test_mig_slices_are_priced_at_their_share_of_the_parent_gpu_price(
    script, queue_a, researcher_a, h100_price
):
    mig = Flavor.objects.create(
        name="h100-1g.10gb",
        resource="nvidia.com/mig-1g.10gb",
        gpu_model="NVIDIA-H100-80GB-HBM3",
        gpu_equivalent=1 / 7,
    )
    steps = script(queue=queue_a, owner=researcher_a, flavor=mig, gpus_per_worker=7).run(at(0))
    steps.end(at(1))

    accrue_usage(at(1))

    record = UsageRecord.objects.get()
    assert record.units == 7
    assert record.gpu_equivalent == Decimal("0.142857")
    assert record.unit_hours == Decimal(7)  # slice-hours
    assert record.gpu_equivalent_hours == Decimal("0.999999")
    assert record.cost == Decimal("2.00")  # 7 x 0.142857 x 2.00 = 1.999998 -> 2.00


def test_row_closed_without_a_price_in_force_stays_unpriced(
    script, queue_a, researcher_a, flavor_h100
):
    steps = script(queue=queue_a, owner=researcher_a).run(at(0))
    steps.end(at(1))

    report = accrue_usage(at(1))

    assert rows() == [(at(0), at(1), 1, True, None)]
    assert "no price in force for flavor 'h100'" in report.unpriced[0]


def test_run_that_began_and_was_preempted_between_two_accruals_is_still_recorded(
    script, queue_a, researcher_a, h100_price
):
    accrue_usage(at(0))
    steps = script(queue=queue_a, owner=researcher_a).run(at(0.25)).preempt(at(0.75))
    assert Job.objects.get(pk=steps.job.pk).cluster is None  # requeued: no cluster any more

    accrue_usage(at(1))

    assert rows() == [(at(0.25), at(0.75), 1, True, Decimal("1.00"))]
    assert UsageRecord.objects.get().cluster.name == "sim"
