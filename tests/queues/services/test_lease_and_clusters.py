"""Single flight (the lease) and unreachable clusters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queues.clusters.base import ClusterUnavailable
from queues.clusters.factory import DRIVER_FACTORIES
from queues.models import Cluster, Job
from queues.services import lease, run_cycle
from tests.queues.services.helpers import T0, later


def test_second_holder_cannot_take_a_held_lease(db):
    assert lease.acquire("worker-1")

    assert not lease.acquire("worker-2")


def test_expired_lease_is_taken_over(db):
    now = timezone.now()
    assert lease.acquire("worker-1", now=now, seconds=30)

    assert not lease.acquire("worker-2", now=now + timedelta(seconds=29))
    assert lease.acquire("worker-2", now=now + timedelta(seconds=31))
    with pytest.raises(lease.LeaseLost):
        lease.confirm("worker-1")


def test_released_lease_is_free_for_the_next_worker(db):
    assert lease.acquire("worker-1")
    lease.release("worker-1")

    assert lease.acquire("worker-2")


def test_cycle_does_nothing_while_another_worker_holds_the_lease(world, submit):
    job = submit(gpus=8)
    assert lease.acquire("someone-else")

    report = run_cycle(now=later(1))

    assert not report.ran
    assert "another worker holds the scheduling lease" in report.summary()
    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING


class UnreachableDriver:
    def sync(self):
        raise ClusterUnavailable("list nodes: connection refused")

    def launch(self, spec):
        raise ClusterUnavailable("connection refused")

    def stop(self, job_id, namespace, grace_period_seconds):
        raise ClusterUnavailable("connection refused")

    def scale(self, spec):
        raise ClusterUnavailable("connection refused")

    def close(self):
        return None


def test_unreachable_cluster_is_degraded_its_jobs_untouched_and_it_recovers(
    world, submit, cycle, reload, monkeypatch
):
    running = submit(gpus=8, name="running")
    cycle(T0)
    cycle(later(1))
    waiting = submit(gpus=8, name="waiting", at=later(2))
    working = DRIVER_FACTORIES["simulated"]
    monkeypatch.setitem(DRIVER_FACTORIES, "simulated", lambda cluster, now: UnreachableDriver())

    report = cycle(later(3))

    cluster = Cluster.objects.get(pk=world.cluster.pk)
    assert cluster.status == Cluster.Status.DEGRADED
    assert "connection refused" in cluster.status_message
    assert report.degraded == ["sim"]
    assert reload(running).state == Job.State.RUNNING
    assert reload(waiting).state == Job.State.PENDING

    monkeypatch.setitem(DRIVER_FACTORIES, "simulated", working)
    cycle(later(4))

    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.OK
    assert cluster.status_message == ""
    assert cluster.last_sync_at == later(4)
    assert reload(waiting).state == Job.State.ADMITTED
    assert reload(running).state == Job.State.RUNNING


@pytest.mark.django_db(transaction=True)
def test_only_one_of_many_racing_workers_gets_the_lease():
    import threading

    from django.db import connection

    barrier = threading.Barrier(6)
    winners: list[str] = []

    def race(holder: str) -> None:
        try:
            barrier.wait()
            if lease.acquire(holder):
                winners.append(holder)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(f"worker-{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1


def test_crash_while_applying_leaves_no_decision_half_applied(world, submit, cycle, monkeypatch):
    from queues.services import apply as apply_module

    jobs = [submit(gpus=8, name=f"job-{i}", at=later(i)) for i in range(2)]

    def crash(live):
        raise RuntimeError("worker killed mid-apply")

    monkeypatch.setattr(apply_module, "update_decayed_usage", crash)
    with pytest.raises(RuntimeError):
        cycle(later(5))

    assert set(Job.objects.values_list("state", flat=True)) == {"pending"}
    assert not Job.objects.filter(events__kind="admitted").exists()
    monkeypatch.undo()
    report = cycle(later(6))  # the lease was given back: the next cycle runs and admits
    assert report.counts["admitted"] == 2
    assert {j.state for j in Job.objects.filter(pk__in=[j.pk for j in jobs])} == {"admitted"}


def test_cycle_that_lost_its_lease_applies_nothing(world, submit, cycle, monkeypatch):
    job = submit(gpus=8)

    def taken_over(holder, **kwargs):
        raise lease.LeaseLost("taken over")

    monkeypatch.setattr(lease, "confirm", taken_over)
    with pytest.raises(lease.LeaseLost):
        cycle(later(1))

    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING
