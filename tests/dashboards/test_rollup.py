"""The rollups behind the time series: filled from the ledger and the nodes, idempotent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from accounting.models import UsageRecord
from dashboards.models import FIVE_MINUTES, ONE_HOUR, CapacitySample, UsageRollup
from dashboards.rollup import (
    _ledger_since,
    floor_to,
    rebuild_usage_rollups,
    roll_up_usage,
    sample_capacity,
    sample_capacity_between,
    split_into_buckets,
)
from queues.models import Job, Node, Queue
from tests.dashboards.conftest import T0, at

pytestmark = pytest.mark.django_db


def buckets(size: int = FIVE_MINUTES) -> dict[str, float]:
    return {
        f"{r.bucket_start:%H:%M}": round(r.gpu_equivalent_seconds, 6)
        for r in UsageRollup.objects.filter(bucket_seconds=size).order_by("bucket_start")
    }


def test_split_into_buckets_cuts_at_bucket_edges() -> None:
    parts = split_into_buckets(at(3), at(12), FIVE_MINUTES)
    assert [(f"{b:%H:%M}", s) for b, s in parts] == [
        ("09:00", 120.0),
        ("09:05", 300.0),
        ("09:10", 120.0),
    ]
    assert floor_to(at(59), ONE_HOUR) == T0


def test_ledger_rows_become_gpu_equivalent_seconds_per_five_minutes_and_hour(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    ledger_row(job, at(2), at(8), units=4)  # 4 GPUs for 6 minutes
    roll_up_usage(at(10))
    assert buckets() == {"09:00": 4 * 180.0, "09:05": 4 * 180.0}
    assert buckets(ONE_HOUR) == {"09:00": 4 * 360.0}


def test_rolling_up_twice_changes_nothing(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    ledger_row(job, at(0), at(30), units=2)
    roll_up_usage(at(30))
    first = (buckets(), buckets(ONE_HOUR))
    roll_up_usage(at(30))
    roll_up_usage(at(31))
    assert (buckets(), buckets(ONE_HOUR)) == first
    assert sum(first[0].values()) == 2 * 1800.0


def test_an_open_row_that_grows_is_counted_once_up_to_its_new_end(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    row = ledger_row(job, at(0), at(7), units=1, closed=False)
    roll_up_usage(at(7))
    UsageRecord.objects.filter(pk=row.pk).update(end=at(14))  # the next accrual
    roll_up_usage(at(14))
    assert buckets() == {"09:00": 300.0, "09:05": 300.0, "09:10": 240.0}


def test_a_roll_up_reads_the_open_rows_alike_since_its_hour_as_one(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    """Twelve jobs running since different earlier hours: each cycle's roll-up reads one row for
    all of them (alike from 09:00 on), and counts each of them."""
    for i in range(12):
        job = make_job(queue=queue_a, owner=researcher_a, name=f"run-{i}")
        ledger_row(job, T0 - timedelta(hours=i + 1, minutes=i), at(7), units=2, closed=False)
    roll_up_usage(at(7))
    UsageRecord.objects.update(end=at(14))  # the next accrual
    roll_up_usage(at(14))

    assert len(list(_ledger_since(T0))) == 1
    five = buckets()
    assert [five["09:00"], five["09:05"], five["09:10"]] == [12 * 600.0, 12 * 600.0, 12 * 480.0]
    assert "09:15" not in five
    assert buckets(ONE_HOUR)["09:00"] == 12 * 2 * 840.0
    assert buckets(ONE_HOUR)["08:00"] == 12 * 2 * 3600.0


def test_a_row_recorded_late_with_an_earlier_start_is_rolled_up(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    roll_up_usage(at(60))  # nothing yet: the mark stays unset until the ledger has rows
    first = make_job(queue=queue_a, owner=researcher_a)
    ledger_row(first, at(50), at(60))
    roll_up_usage(at(60))
    late = make_job(queue=queue_a, owner=researcher_a, name="late")
    ledger_row(late, at(5), at(10), units=3)  # began before the last roll-up's time
    roll_up_usage(at(65))
    assert buckets()["09:05"] == 3 * 300.0
    assert buckets(ONE_HOUR)["09:00"] == 600.0 + 3 * 300.0


def test_rebuild_recomputes_from_the_whole_ledger(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    ledger_row(job, at(0), at(5))
    roll_up_usage(at(5))
    UsageRollup.objects.update(gpu_equivalent_seconds=999.0)  # a damaged rollup
    rebuild_usage_rollups(at(5))
    assert buckets() == {"09:00": 300.0}


def test_five_minute_rows_older_than_three_days_are_pruned_but_hours_stay(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    job = make_job(queue=queue_a, owner=researcher_a)
    ledger_row(job, at(0), at(5))
    roll_up_usage(T0 + timedelta(days=4))
    assert buckets() == {}
    assert buckets(ONE_HOUR) == {"09:00": 300.0}


@pytest.mark.usefixtures("nodes")
def test_capacity_sample_counts_all_gpus_and_those_on_failed_nodes() -> None:
    sample_capacity(at(1))
    rows = {
        (s.flavor.name, s.bucket_seconds): (s.capacity_gpu_equivalent, s.failed_gpu_equivalent)
        for s in CapacitySample.objects.select_related("flavor")
    }
    assert rows[("h100", FIVE_MINUTES)] == (16.0, 8.0)
    assert rows[("h100", ONE_HOUR)] == (16.0, 8.0)
    assert rows[("h100-1g.10gb", FIVE_MINUTES)] == pytest.approx((2.0, 0.0))


@pytest.mark.usefixtures("nodes")
def test_capacity_sample_keeps_the_largest_failure_seen_in_the_bucket() -> None:
    sample_capacity(at(1))
    Node.objects.update(ready=True)
    sample_capacity(at(2))  # same 5-minute bucket: the failure seen at 09:01 stays
    sample_capacity(at(2))
    sample = CapacitySample.objects.get(flavor__name="h100", bucket_seconds=FIVE_MINUTES)
    assert sample.failed_gpu_equivalent == 8.0
    assert CapacitySample.objects.count() == 4  # 2 flavors x 2 bucket sizes, no duplicates
    sample_capacity(at(6))  # the next bucket sees no failure
    later = CapacitySample.objects.get(
        flavor__name="h100", bucket_seconds=FIVE_MINUTES, bucket_start=at(5)
    )
    assert later.failed_gpu_equivalent == 0.0


@pytest.mark.usefixtures("nodes")
def test_capacity_over_a_span_fills_every_hour_and_the_recent_five_minutes_once() -> None:
    now = T0 + timedelta(days=5, minutes=7)
    sample_capacity(now - timedelta(days=4))  # one bucket sampled already: kept, not doubled
    sample_capacity_between(T0, now)
    sample_capacity_between(T0, now)
    h100 = CapacitySample.objects.filter(flavor__name="h100")
    hours = sorted(h100.filter(bucket_seconds=ONE_HOUR).values_list("bucket_start", flat=True))
    assert hours == [T0 + timedelta(hours=h) for h in range(5 * 24 + 1)]
    fives = h100.filter(bucket_seconds=FIVE_MINUTES).values_list("bucket_start", flat=True)
    recent = [b for b in fives if b >= floor_to(now - timedelta(days=3), FIVE_MINUTES)]
    assert len(recent) == 3 * 12 * 24 + 1  # every bucket of the last three days, now's included
    assert len(fives) == len(recent) + 1  # and the one sampled before
    assert {(s.capacity_gpu_equivalent, s.failed_gpu_equivalent) for s in h100} == {(16.0, 8.0)}


@pytest.mark.usefixtures("nodes")
def test_each_scheduling_cycle_fills_the_rollups(
    make_job: Callable[..., Job],
    ledger_row: Callable[..., UsageRecord],
    queue_a: Queue,
    researcher_a: User,
) -> None:
    from django.utils import timezone

    from queues.services import run_cycle

    now = timezone.now()
    ledger_row(make_job(queue=queue_a, owner=researcher_a), now - timedelta(minutes=30), now)
    assert not UsageRollup.objects.exists()
    run_cycle(now)
    assert UsageRollup.objects.filter(bucket_seconds=ONE_HOUR).exists()
    assert CapacitySample.objects.filter(bucket_seconds=FIVE_MINUTES).count() == 2
