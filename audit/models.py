"""One changed field of one object: who, when, old -> new."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_entries",
    )
    actor_name = models.CharField(max_length=150, blank=True, help_text="Kept if the user goes.")
    at = models.DateTimeField(default=timezone.now)
    object_type = models.CharField(max_length=100, help_text="app_label.model, e.g. queues.quota")
    object_id = models.CharField(max_length=64)
    object_label = models.CharField(max_length=200)
    field = models.CharField(max_length=100)
    old = models.JSONField(null=True, blank=True)
    new = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["object_type", "object_id", "at"], name="audit_object_at_idx"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.actor_name or 'system'} changed {self.object_label} {self.field}: "
            f"{self.old!r} -> {self.new!r}"
        )
