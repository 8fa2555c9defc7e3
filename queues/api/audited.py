"""API writes land in the change history (the ``audit`` app), as the management pages' do."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Model
from rest_framework.serializers import BaseSerializer

import audit
from audit.values import audited_values
from queues.services.quota_trail import COHORT_QUOTAS, QUEUE_QUOTAS, QuotaTrail


class AuditedWritesMixin:
    """Records who changed which field from what to what on create, update and delete."""

    audit_fields: tuple[str, ...] = ()
    audit_secrets: tuple[str, ...] = ()  # recorded as "(secret)", never their value
    request: Any

    def _values(self, instance: Model) -> dict[str, Any]:
        return audited_values(instance, self.audit_fields, self.audit_secrets)

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        with transaction.atomic():
            created = serializer.save()
            audit.record_changes(self.request.user, created, {}, self._values(created))
            self.record_related(created, {})

    def perform_update(self, serializer: BaseSerializer[Any]) -> None:
        with transaction.atomic():
            before = self._values(serializer.instance)
            related = self.related_before(serializer.instance)
            updated = serializer.save()
            audit.record_changes(self.request.user, updated, before, self._values(updated))
            self.record_related(updated, related)

    def perform_destroy(self, instance: Model) -> None:
        with transaction.atomic():
            before, pk, label = self._values(instance), instance.pk, str(instance)
            instance.delete()
            instance.pk = pk  # the history names the deleted object by its old id
            audit.record_changes(self.request.user, instance, before, {}, label=label)

    def related_before(self, instance: Model) -> dict[int, Any]:
        return {}

    def record_related(self, instance: Model, before: dict[int, Any]) -> None:
        """Nested objects written along with ``instance`` (a queue's quotas)."""


class AuditedNestedQuotasMixin(AuditedWritesMixin):
    """Quotas written nested in their owner (a queue's, a cohort's) are recorded one by one
    (queues/services/quota_trail.py, as the manage pages record them)."""

    trail: QuotaTrail = QUEUE_QUOTAS

    def related_before(self, instance: Model) -> dict[int, Any]:
        return self.trail.before(instance)

    def record_related(self, instance: Model, before: dict[int, Any]) -> None:
        self.trail.record(self.request.user, instance, before)


class AuditedQueueWritesMixin(AuditedNestedQuotasMixin):
    """A queue's quotas, written nested in the queue, are recorded one by one."""

    trail = QUEUE_QUOTAS


class AuditedCohortWritesMixin(AuditedNestedQuotasMixin):
    """A cohort's own quotas, written nested in the cohort, are recorded one by one."""

    trail = COHORT_QUOTAS
