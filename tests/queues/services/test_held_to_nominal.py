"""Rule 1's stop bound in the live cycle (docs/SCHEDULING.md section 4): a job the platform has
stopped and requeued three times (its ``preemption_count``) starts again only within its
queue's nominal quota, and its explanation says why."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from queues.models import Job, JobRuntime
from tests.queues.services.helpers import later


def test_a_job_stopped_three_times_waits_for_its_queues_nominal_and_says_why(
    submit: Callable[..., Job], cycle: Callable[[datetime], Any]
) -> None:
    """Team a's 8-GPU job fills its nominal 8; the cohort has 8 more free. A 4-GPU job stopped
    twice before borrows them; the same job stopped three times waits, and is told why."""
    submit(team="a", gpus=8, name="fills-nominal")
    cycle(later(1))
    twice = submit(team="a", gpus=4, name="twice", at=later(2))
    thrice = submit(team="a", gpus=4, name="thrice", at=later(2))
    Job.objects.filter(pk=twice.pk).update(preemption_count=2)
    Job.objects.filter(pk=thrice.pk).update(preemption_count=3)

    cycle(later(3))

    twice.refresh_from_db()
    thrice.refresh_from_db()
    assert twice.state != Job.State.PENDING  # admitted, borrowing from the cohort
    assert thrice.state == Job.State.PENDING
    runtime = JobRuntime.objects.get(job=thrice)
    assert "Stopped and requeued 3 times already" in runtime.pending_message
    assert "only within its queue's nominal quota" in runtime.pending_message
