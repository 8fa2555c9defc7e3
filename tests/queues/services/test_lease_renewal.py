"""A cycle that works longer than its lease keeps it; a burst of submissions queues one cycle."""

from __future__ import annotations

import threading
import time

import pytest

from queues.clusters.factory import DRIVER_FACTORIES
from queues.models import SchedulerLease
from queues.services import lease, run_cycle
from queues.services.report import CycleReport
from tests.queues.services.helpers import build_world

LEASE_SECONDS = 1
SLOW_SYNC_SECONDS = 2.5  # two and a half lease periods


class SlowSync:
    """The simulated driver, with a sync that takes longer than the lease lasts."""

    def __init__(self, driver: object) -> None:
        self._driver = driver

    def sync(self):  # type: ignore[no-untyped-def]
        time.sleep(SLOW_SYNC_SECONDS)
        return self._driver.sync()  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._driver, name)


@pytest.mark.django_db(transaction=True)
def test_a_cycle_outliving_the_lease_period_keeps_it_and_no_second_cycle_starts(
    settings, monkeypatch
):
    settings.SCHEDULER_LEASE_SECONDS = LEASE_SECONDS
    build_world()
    simulated = DRIVER_FACTORIES["simulated"]
    monkeypatch.setitem(
        DRIVER_FACTORIES, "simulated", lambda cluster, now: SlowSync(simulated(cluster, now))
    )
    reports: list[CycleReport] = []

    def long_cycle() -> None:
        from django.db import connection

        try:
            reports.append(run_cycle())
        finally:
            connection.close()

    first = threading.Thread(target=long_cycle)
    first.start()
    time.sleep(LEASE_SECONDS * 1.6)  # without renewal the lease has expired by now
    second = run_cycle()
    first.join()

    assert not second.ran, "a second cycle started beside one that was still working"
    assert reports[0].ran and reports[0].cycle_run_id is not None
    released = SchedulerLease.objects.get(name=lease.CYCLE_LEASE)
    assert released.holder == ""  # given back at the end, not left to expire


@pytest.mark.django_db(transaction=True)
def test_renewal_stops_and_says_so_when_the_lease_was_taken_over(settings):
    settings.SCHEDULER_LEASE_SECONDS = 0.3
    assert lease.acquire("slow-worker")

    with lease.Renewal("slow-worker") as renewal:
        time.sleep(0.25)
        assert renewal.renewals >= 1
        SchedulerLease.objects.filter(name=lease.CYCLE_LEASE).update(holder="other-worker")
        time.sleep(0.3)

    assert renewal.lost
    assert SchedulerLease.objects.get(name=lease.CYCLE_LEASE).holder == "other-worker"
