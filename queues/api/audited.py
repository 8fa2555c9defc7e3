"""API writes land in the change history (the ``audit`` app), as the management pages' do."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Model
from rest_framework.serializers import BaseSerializer

import audit
from audit.values import audited_values
from queues.models import Queue, Quota


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


class AuditedQueueWritesMixin(AuditedWritesMixin):
    """A queue's quotas, written nested in the queue, are recorded one by one."""

    def related_before(self, instance: Model) -> dict[int, Any]:
        assert isinstance(instance, Queue)
        quotas = instance.quotas.select_related("flavor", "queue__team")
        return {q.pk: (q, audited_values(q, Quota.AUDITED_FIELDS)) for q in quotas}

    def record_related(self, instance: Model, before: dict[int, Any]) -> None:
        user = self.request.user
        current = {
            q.pk: q
            for q in Quota.objects.filter(queue=instance).select_related("flavor", "queue__team")
        }
        for pk, (old, values) in before.items():
            if pk not in current:  # removed
                audit.record_changes(user, old, values, {}, label=_quota_label(old))
        for pk, quota in current.items():
            old_values = before[pk][1] if pk in before else {}
            after = audited_values(quota, Quota.AUDITED_FIELDS)
            audit.record_changes(user, quota, old_values, after, label=_quota_label(quota))


def _quota_label(quota: Quota) -> str:
    return f"{quota.queue} quota {quota.flavor.name}"
