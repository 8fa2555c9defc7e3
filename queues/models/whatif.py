"""A what-if replay asked for by a platform admin (queues/services/whatif/): its request, its
progress while a Celery worker replays it, and its result, kept for ``WhatIfRun.KEEP`` and then
deleted (expired runs answer 404 and are removed when the next run is asked for).

Not scheduling state: nothing here is read by the cycle; a replay writes only its own row.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

KEEP = timedelta(hours=24)


def expiry() -> datetime:
    """When a run asked for now expires."""
    return timezone.now() + KEEP


class WhatIfRun(models.Model):
    KEEP = KEEP

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="what_if_runs"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True, default=expiry)
    proposal = models.JSONField(help_text="The validated request body.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0 to 1.")
    message = models.CharField(max_length=300, blank=True)
    result = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"what-if {self.pk} ({self.state})"
