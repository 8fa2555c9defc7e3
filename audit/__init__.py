"""Change history: who changed what, when, from which value to which (``record_changes``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.db.models import Model, QuerySet

    from audit.models import AuditEntry


def record_changes(
    actor: Any,
    instance: Model,
    before: dict[str, Any],
    after: dict[str, Any],
    *,
    label: str | None = None,
) -> list[AuditEntry]:
    """Record one ``AuditEntry`` per field whose value differs between ``before`` and ``after``
    (keys missing on one side count as ``None``: a created or deleted object). Decimals,
    datetimes and related objects are stored as strings. ``label`` names the object in the
    history (default ``str(instance)``). Returns the entries."""
    from audit.history import record_changes as record

    return record(actor, instance, before, after, label=label)


def history_for(instance: Model) -> QuerySet[AuditEntry]:
    """The change history of one object, newest first."""
    from audit.history import history_for as history

    return history(instance)


__all__ = ["history_for", "record_changes"]
