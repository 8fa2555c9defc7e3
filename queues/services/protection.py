"""Until when preemption may not stop a running job (docs/SCHEDULING.md section 4, rule 1), in
the words its page shows: the class's ``min_runtime`` holds against every preemption, its
``preemption_protection`` (empty: the platform default ``PREEMPTION_PROTECTION_SECONDS``)
against fair sharing and priority, both counted from the job's last (re)start, as the engine
counts them. A class's durations are in job seconds; on simulated clusters the engine reads
them on the wall clock (queues/services/clock.py), and so does this."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from queues.models import Job
from queues.services import clock
from queues.services.messages import clock as when
from queues.templatetags.ui import duration


def protection_notes(job: Job, now: datetime) -> list[tuple[str, str]]:
    """(id, sentence) for each protection still running at ``now``; none for a job that is
    not running, or whose class is not preemptible (its page says so)."""
    cls = job.service_class
    if job.state != Job.State.RUNNING or job.started_at is None or not cls.preemptible:
        return []
    scale = clock.class_scale()
    notes = []
    minimum = job.started_at + timedelta(seconds=cls.min_runtime * scale)
    if minimum > now:
        notes.append(
            (
                "min-runtime",
                f"Not preempted before {when(minimum)}: class {cls.name}'s minimum runtime "
                f"({duration(cls.min_runtime)}). Only a node failure, a drain or a cancel stops "
                "it until then.",
            )
        )
    seconds = cls.preemption_protection
    if seconds is None:
        seconds = int(getattr(settings, "PREEMPTION_PROTECTION_SECONDS", 0))
    protected = job.started_at + timedelta(seconds=seconds * scale)
    if protected > now and protected > minimum:
        notes.append(
            (
                "preemption-protection",
                f"Not stopped for fair sharing or priority before {when(protected)}: "
                f"class {cls.name}'s preemption protection ({duration(seconds)} after each "
                "start). A reclaim of another queue's guaranteed quota may still stop it.",
            )
        )
    return notes
