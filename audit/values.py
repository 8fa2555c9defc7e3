"""The audited values of an object: its editable fields, secrets masked."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import DecimalField, Model

SECRET = "(secret)"


def audited_values(
    instance: Model, fields: list[str] | tuple[str, ...], secrets: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``{field: value}`` for ``fields`` of ``instance``; many-to-many as sorted names; secret
    fields as "(secret)" when set (their value never reaches the history)."""
    values: dict[str, Any] = {}
    if instance.pk is None:
        return values
    for name in fields:
        field = instance._meta.get_field(name)
        if field.many_to_many:
            values[name] = sorted(str(o) for o in getattr(instance, name).all())
        elif field.is_relation:
            related = getattr(instance, name)
            values[name] = str(related) if related is not None else None
        else:
            value = getattr(instance, name)
            if isinstance(field, DecimalField) and value is not None:  # 1.0 and 1.000 agree
                value = Decimal(value).quantize(Decimal(1).scaleb(-field.decimal_places))
            values[name] = (SECRET if value else "") if name in secrets else value
    return values
