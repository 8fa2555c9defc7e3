"""The change history of quotas written nested in their owner (a queue's, a cohort's): one home
for the REST API (queues/api/audited.py) and the manage pages (queues/views/manage/).

``before(owner)`` reads the rows and their audited values before a write; ``record(actor, owner,
before)`` then records, per quota row, each field that changed (a removed row's fields go to
``None``, an added row's come from ``None``), labelled "<owner> quota <flavor>".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Model, QuerySet

import audit
from audit.values import audited_values
from queues.models import CohortQuota, Quota


@dataclass(frozen=True)
class QuotaTrail:
    model: type[Quota] | type[CohortQuota]
    owner_field: str  # the quota's foreign key to its owner
    related: tuple[str, ...]  # what its label reads (select_related)

    def rows(self, owner: Model) -> QuerySet[Any]:
        return self.model.objects.filter(**{self.owner_field: owner}).select_related(*self.related)

    def before(self, owner: Model) -> dict[int, tuple[Model, dict[str, Any]]]:
        if owner.pk is None:
            return {}
        fields = self.model.AUDITED_FIELDS
        return {q.pk: (q, audited_values(q, fields)) for q in self.rows(owner)}

    def record(
        self, actor: Any, owner: Model, before: dict[int, tuple[Model, dict[str, Any]]]
    ) -> None:
        current = {q.pk: q for q in self.rows(owner)}
        for pk, (old, values) in before.items():
            if pk not in current:  # removed
                audit.record_changes(actor, old, values, {}, label=self.label(old))
        for pk, quota in current.items():
            old_values = before[pk][1] if pk in before else {}
            after = audited_values(quota, self.model.AUDITED_FIELDS)
            audit.record_changes(actor, quota, old_values, after, label=self.label(quota))

    def label(self, quota: Any) -> str:
        return f"{getattr(quota, self.owner_field)} quota {quota.flavor.name}"


QUEUE_QUOTAS = QuotaTrail(Quota, "queue", ("flavor", "queue__team"))
COHORT_QUOTAS = QuotaTrail(CohortQuota, "cohort", ("flavor", "cohort"))
