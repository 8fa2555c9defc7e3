"""Job state changes as conditional updates: a change applies only if the row is still in the
state the caller saw, so a re-run or a concurrent writer can never apply it twice."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from queues.models import Job, JobRuntime


def field_values(job: Job, fields: list[str]) -> dict[str, Any]:
    """The in-memory values of ``fields`` as ``update()`` keyword arguments."""
    return {
        ("cluster_id" if name == "cluster" else name): (
            job.cluster_id if name == "cluster" else getattr(job, name)
        )
        for name in fields
    }


def move(job: Job, new_state: str, now: datetime, **extra: Any) -> bool:
    """Move ``job`` to ``new_state`` if its row is still in the state it has in memory.

    Raises ``IllegalTransition`` for moves the state machine refuses. Returns False (and changes
    nothing in the database) when the row changed meanwhile.
    """
    old = job.state
    fields = job.transition_to(new_state, now=now)
    values = field_values(job, fields)
    values.update(extra)
    return Job.objects.filter(pk=job.pk, state=old).update(**values) == 1


def set_runtime(job_id: int, **values: Any) -> None:
    """Update the job's runtime row, creating it when the job has none yet."""
    if JobRuntime.objects.filter(job_id=job_id).update(**values) == 0:
        JobRuntime.objects.create(job_id=job_id, **values)


def job_label(job: Job) -> str:
    return f"{job.name} (#{job.pk})"
