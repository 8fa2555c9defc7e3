"""Job arrays (Slurm's ``--array``): many jobs from one request, all created or none.

``submit_array`` checks every job of the request as ``submit_job`` does (``prepare_job``: the
same rules, events and rows as a job submitted alone), then writes them together in one
transaction (``write_jobs``: a few INSERTs per 500 jobs, not a few per job) as one array: each
job's ``array_id`` is the first job's id and ``array_index`` its place (0, 1, ...). A job that
breaks a rule creates nothing. One scheduling cycle is queued for the lot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from queues.models import Job
from queues.services.jobs import prepare_job, write_jobs


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
    moment = timezone.now()
    prepared = [prepare_job(owner=owner, now=moment, **submission) for submission in submissions]
    return write_jobs(prepared, array=True)
