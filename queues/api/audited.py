"""API writes land in the change history (the ``audit`` app), as the management pages' do."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Model
from rest_framework.serializers import BaseSerializer

import audit
from audit.values import audited_values
from queues.models import CohortQuota, Quota


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
    """Quotas written nested in their owner (a queue's, a cohort's) are recorded one by one."""

    quota_model: type[Quota] | type[CohortQuota] = Quota
    owner_field = "queue"

    def _quotas(self, owner: Model) -> Any:
        return self.quota_model.objects.filter(**{self.owner_field: owner}).select_related(
            "flavor", self.owner_field
        )

    def related_before(self, instance: Model) -> dict[int, Any]:
        fields = self.quota_model.AUDITED_FIELDS
        return {q.pk: (q, audited_values(q, fields)) for q in self._quotas(instance)}

    def record_related(self, instance: Model, before: dict[int, Any]) -> None:
        user = self.request.user
        current = {q.pk: q for q in self._quotas(instance)}
        for pk, (old, values) in before.items():
            if pk not in current:  # removed
                audit.record_changes(user, old, values, {}, label=self._label(old))
        for pk, quota in current.items():
            old_values = before[pk][1] if pk in before else {}
            after = audited_values(quota, self.quota_model.AUDITED_FIELDS)
            audit.record_changes(user, quota, old_values, after, label=self._label(quota))

    def _label(self, quota: Any) -> str:
        return f"{getattr(quota, self.owner_field)} quota {quota.flavor.name}"


class AuditedQueueWritesMixin(AuditedNestedQuotasMixin):
    """A queue's quotas, written nested in the queue, are recorded one by one."""

    quota_model = Quota
    owner_field = "queue"

    def _quotas(self, owner: Model) -> Any:
        return Quota.objects.filter(queue=owner).select_related("flavor", "queue__team")


class AuditedCohortWritesMixin(AuditedNestedQuotasMixin):
    """A cohort's own quotas, written nested in the cohort, are recorded one by one."""

    quota_model = CohortQuota
    owner_field = "cohort"
