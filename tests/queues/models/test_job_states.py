"""A job moves pending -> admitted -> running -> succeeded/failed/cancelled, and a preempted
job goes back to pending; every other move is refused with a clear error."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User

from queues.models import IllegalTransition, Job, Queue

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def job(make_job: Callable[..., Job], queue_a: Queue, researcher_a: User) -> Job:
    return make_job(queue=queue_a, owner=researcher_a, submitted_at=T0, workers=2)


def test_job_starts_pending(job: Job) -> None:
    assert job.state == Job.State.PENDING


def test_happy_path_sets_each_timestamp(job: Job) -> None:
    job.save(update_fields=job.transition_to("admitted", now=T0 + timedelta(seconds=10)))
    job.save(update_fields=job.transition_to("running", now=T0 + timedelta(seconds=20)))
    job.save(update_fields=job.transition_to("succeeded", now=T0 + timedelta(seconds=99)))
    job.refresh_from_db()
    assert job.state == "succeeded"
    assert job.admitted_at == T0 + timedelta(seconds=10)
    assert job.started_at == T0 + timedelta(seconds=20)
    assert job.finished_at == T0 + timedelta(seconds=99)
    assert job.is_finished


def test_preempted_job_returns_to_pending_keeping_its_submission_time(job: Job) -> None:
    job.transition_to("admitted", now=T0)
    job.transition_to("running", now=T0)
    job.placement = {"h100-0": 2}
    job.current_workers = 2
    job.save()
    job.save(update_fields=job.transition_to("preempted", now=T0 + timedelta(hours=1)))
    job.save(update_fields=job.transition_to("pending", now=T0 + timedelta(hours=1)))
    job.refresh_from_db()
    assert job.state == "pending"
    assert job.submitted_at == T0
    assert job.preemption_count == 1
    assert (job.admitted_at, job.started_at, job.placement, job.current_workers) == (
        None,
        None,
        {},
        0,
    )


@pytest.mark.parametrize("final", ["succeeded", "failed", "cancelled"])
def test_running_job_can_end_in_each_final_state(job: Job, final: str) -> None:
    job.transition_to("admitted")
    job.transition_to("running")
    job.transition_to(final)
    assert job.state == final
    assert job.finished_at is not None


def test_pending_job_can_be_cancelled(job: Job) -> None:
    job.transition_to("cancelled")
    assert job.state == "cancelled"


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ([], "running"),
        ([], "succeeded"),
        ([], "preempted"),
        (["admitted"], "pending"),
        (["admitted", "running"], "admitted"),
        (["admitted", "running", "preempted"], "running"),
        (["cancelled"], "pending"),
    ],
)
def test_illegal_moves_are_refused(job: Job, path: list[str], illegal: str) -> None:
    for state in path:
        job.transition_to(state)
    before = job.state
    with pytest.raises(IllegalTransition, match=f"cannot go from {before} to {illegal}"):
        job.transition_to(illegal)
    assert job.state == before


def test_finished_job_error_says_it_has_ended(job: Job) -> None:
    job.transition_to("cancelled")
    with pytest.raises(IllegalTransition, match=r"it can go to: nothing \(it has ended\)"):
        job.transition_to("admitted")


def test_unknown_state_is_refused_listing_the_states(job: Job) -> None:
    with pytest.raises(IllegalTransition, match="'paused' is not a job state; states are: pending"):
        job.transition_to("paused")
