"""``submit_job``: rights, field-named validation errors, an event, and a queued cycle."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from queues.models import Job
from queues.services import submit_job
from tests.queues.services.helpers import kinds


def test_submission_records_an_event_and_queues_a_cycle(
    world, submit, queued_cycles, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(gpus=2, workers=3)

    assert job.state == Job.State.PENDING
    assert kinds(job) == ["submitted"]
    assert "3 worker(s) x 2 h100" in job.events.get().message
    assert job.acceptable_flavor_names() == ["h100"]
    assert queued_cycles == [1]  # one cycle queued through Celery


def test_researcher_cannot_submit_to_another_teams_queue(world):
    with pytest.raises(ValidationError) as error:
        submit_job(
            owner=world.alice,
            queue=world.queue_b,
            service_class=world.standard,
            name="sneaky",
            image="busybox:1.36",
            flavors=[world.h100],
        )
    assert "belongs to another team" in error.value.message_dict["queue"][0]
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": 2, "min_workers": 3}, "min_workers"),
        ({"name": "Not A DNS Label"}, "name"),
        ({"topology_level": "rack"}, "topology_mode"),
        ({"flavors": []}, "flavors"),
    ],
)
def test_bad_submission_is_refused_with_an_error_naming_the_field(world, fields, field):
    values = {
        "owner": world.alice,
        "queue": world.queue_a,
        "service_class": world.standard,
        "name": "train",
        "image": "busybox:1.36",
        "flavors": [world.h100],
    }
    values.update(fields)

    with pytest.raises(ValidationError) as error:
        submit_job(**values)

    assert field in error.value.message_dict
    assert not Job.objects.exists()


def test_submission_succeeds_when_the_broker_is_down(
    world, submit, monkeypatch, django_capture_on_commit_callbacks
):
    from queues import tasks

    def broker_down():
        raise ConnectionError("redis: connection refused")

    monkeypatch.setattr(tasks.run_scheduling_cycle, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(gpus=1)

    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING


def test_a_burst_of_submissions_queues_one_cycle_until_it_starts(
    world, submit, queued_cycles, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    from queues import tasks
    from queues.services.jobs import CYCLE_QUEUED_KEY

    cache.delete(CYCLE_QUEUED_KEY)
    with django_capture_on_commit_callbacks(execute=True):
        for index in range(20):
            submit(gpus=1, name=f"burst-{index}")
    assert queued_cycles == [1]

    tasks.run_scheduling_cycle()  # the queued cycle starts: later changes need their own
    with django_capture_on_commit_callbacks(execute=True):
        submit(gpus=1, name="after-the-cycle-started")
        submit(gpus=1, name="and-another")
    assert queued_cycles == [1, 1]


def test_a_cycle_task_skipped_while_another_cycle_runs_keeps_the_burst_to_one_task(
    world, submit, queued_cycles, django_capture_on_commit_callbacks
):
    """With two worker processes, the second one takes a queued cycle while the first runs one:
    it skips (the lease is taken) and must not clear the mark, or every next submission would
    queue one more task that skips too (issue 27: one task per two or three POSTs)."""
    from django.core.cache import cache

    from queues import tasks
    from queues.models import CycleRun
    from queues.services import lease
    from queues.services.jobs import CYCLE_QUEUED_KEY

    cache.delete(CYCLE_QUEUED_KEY)
    with django_capture_on_commit_callbacks(execute=True):
        submit(gpus=1, name="first")
    assert queued_cycles == [1]
    running = lease.new_holder()
    assert lease.acquire(running)  # a cycle of another worker process runs
    runs = CycleRun.objects.count()
    tasks.run_scheduling_cycle()  # the queued task: skipped
    assert CycleRun.objects.count() == runs
    with django_capture_on_commit_callbacks(execute=True):
        for index in range(5):
            submit(gpus=1, name=f"meanwhile-{index}")
    assert queued_cycles == [1]  # still the one queued: no task per submission
    lease.release(running)
    tasks.run_scheduling_cycle()  # a cycle that runs clears it: later changes need their own
    with django_capture_on_commit_callbacks(execute=True):
        submit(gpus=1, name="after")
    assert queued_cycles == [1, 1]
