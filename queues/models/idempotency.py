"""Idempotent job submission: the ``Idempotency-Key`` a user sent with ``POST /api/v1/jobs/``.

A client that retries a submission (its first answer was lost to a timeout) sends the same key
again and gets the job the first request created, never a second job (queues/api/idempotency.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SubmissionKey(models.Model):
    """One user's key and the job its first submission created."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(
        max_length=64, help_text="SHA-256 of the submitted body: a reused key must resend it."
    )
    job = models.ForeignKey("queues.Job", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "key"], name="submission_key_unique"),
        ]

    def __str__(self) -> str:
        return f"submission key {self.key!r} of user {self.owner_id} -> job {self.job_id}"
