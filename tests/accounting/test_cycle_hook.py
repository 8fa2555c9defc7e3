"""The live scheduling cycle accrues the ledger at its end (queues/services/cycle.py)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from accounting.models import FlavorPrice, UsageRecord
from queues.models import Cluster, Job, Node
from queues.services import run_cycle, submit_job
from tests.accounting.helpers import T0


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    from queues import tasks

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", lambda: None)
    settings.SIMULATION_SPEED = 60.0
    settings.SIMULATION_FAILURE_RATE = 0.0


def test_live_cycles_record_a_job_from_its_start_to_its_success(
    queue_a, researcher_a, flavor_h100, service_class_std, django_capture_on_commit_callbacks
):
    cluster = Cluster.objects.create(name="sim", driver=Cluster.Driver.SIMULATED)
    Node.objects.create(cluster=cluster, name="n1", capacity={"h100": 8})
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("3.60"), effective_from=T0
    )
    job = submit_job(
        owner=researcher_a,
        queue=queue_a,
        service_class=service_class_std,
        name="train",
        image="pytorch/pytorch:2.4.0",
        flavors=[flavor_h100],
        gpus_per_worker=4,
        duration_hint=600,  # 10 simulated minutes: 10 s at 60x
        now=T0,
    )

    def cycle(seconds: float) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            run_cycle(now=T0 + timedelta(seconds=seconds))

    cycle(0)  # admitted
    cycle(1)  # started
    cycle(5)
    open_row = UsageRecord.objects.get()
    assert (open_row.start, open_row.end, open_row.closed) == (
        T0 + timedelta(seconds=1),
        T0 + timedelta(seconds=5),
        False,
    )
    cycle(11)  # succeeded
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED

    row = UsageRecord.objects.get()
    assert (row.start, row.end, row.closed) == (job.started_at, job.finished_at, True)
    assert row.units == 4
    assert row.cost == Decimal("0.04")  # 4 GPUs x 10 s x 3.60 / h
