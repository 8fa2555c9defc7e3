"""Job arrays (Slurm's ``--array``): many jobs from one request, all created or none.

``submit_array`` creates every job of the request in one transaction through ``submit_job``
(the same rules, events and rows as a job submitted alone), then marks them as one array: each
job's ``array_id`` is the first job's id and ``array_index`` its place (0, 1, ...). A job that
breaks a rule rolls back the whole array. One scheduling cycle is queued for the lot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from queues.models import Job
from queues.services.jobs import cycles_run_by_caller, queue_cycle, submit_job


def check_array_size(count: int) -> None:
    """An array holds 1 to ``JOB_ARRAY_MAX_SIZE`` jobs."""
    limit = settings.JOB_ARRAY_MAX_SIZE
    if not 1 <= count <= limit:
        raise ValidationError(
            {"array": [f"An array holds 1 to {limit} jobs (JOB_ARRAY_MAX_SIZE); got {count}."]}
        )


def submit_array(*, owner: Any, submissions: Sequence[Mapping[str, Any]]) -> list[Job]:
    """Create one job per submission (``submit_job``'s keyword arguments), all or none."""
    check_array_size(len(submissions))
    with transaction.atomic():
        with cycles_run_by_caller():
            jobs = [submit_job(owner=owner, **submission) for submission in submissions]
        for index, job in enumerate(jobs):
            job.array_id, job.array_index = jobs[0].pk, index
        Job.objects.bulk_update(jobs, ["array_id", "array_index"], batch_size=1000)
        queue_cycle()
    return jobs
