"""The audit helpers behind ``audit.record_changes`` and ``audit.history_for``."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Model, QuerySet

from audit.models import AuditEntry


def object_type(instance: Model | type[Model]) -> str:
    meta = instance._meta
    return f"{meta.app_label}.{meta.model_name}"


def _json(value: Any) -> Any:
    if isinstance(value, Decimal | datetime | date):
        return str(value)
    if isinstance(value, Model):
        return str(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    return value


def record_changes(
    actor: Any,
    instance: Model,
    before: dict[str, Any],
    after: dict[str, Any],
    *,
    label: str | None = None,
) -> list[AuditEntry]:
    entries = []
    label = (label if label is not None else str(instance))[:200]
    name = actor.get_username() if actor is not None and actor.is_authenticated else ""
    user = actor if actor is not None and actor.is_authenticated else None
    for field in sorted(set(before) | set(after)):
        old, new = _json(before.get(field)), _json(after.get(field))
        if old == new:
            continue
        entries.append(
            AuditEntry(
                actor=user,
                actor_name=name,
                object_type=object_type(instance),
                object_id=str(instance.pk),
                object_label=label,
                field=field,
                old=old,
                new=new,
            )
        )
    return AuditEntry.objects.bulk_create(entries)


def history_for(instance: Model) -> QuerySet[AuditEntry]:
    return AuditEntry.objects.filter(
        object_type=object_type(instance), object_id=str(instance.pk)
    ).order_by("-at", "-pk")


def history_for_many(instances: list[Model]) -> QuerySet[AuditEntry]:
    """History of several objects (possibly of several types) in one query, newest first."""
    from django.db.models import Q

    condition = Q(pk__in=[])
    for instance in instances:
        condition |= Q(object_type=object_type(instance), object_id=str(instance.pk))
    return AuditEntry.objects.filter(condition).order_by("-at", "-pk")
