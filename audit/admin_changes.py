"""Edits made in Django's admin site go to the audit trail, like the manage pages' and the API's.

``AuditedAdmin`` is mixed into every admin class of the site. A model's audited fields are its
``AUDITED_FIELDS`` when it declares them (the same ones the manage pages and the API record),
else every editable field; secret-looking fields (tokens, passwords) are recorded as "(secret)"
when set, never their value. Adds record None -> value, changes old -> new, deletions value ->
None; inline rows (a queue's quotas, a team's memberships) are recorded as their own objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model, QuerySet
from django.forms import BaseFormSet, ModelForm
from django.http import HttpRequest

from audit.history import record_changes
from audit.values import audited_values

SECRET_WORDS = ("token", "password", "secret", "ca_cert")


def audited_fields(model: type[Model]) -> tuple[str, ...]:
    declared = getattr(model, "AUDITED_FIELDS", None)
    if declared:
        return tuple(declared)
    return tuple(
        field.name
        for field in model._meta.get_fields()
        if getattr(field, "editable", False)
        and not getattr(field, "auto_created", False)
        and (field.concrete or field.many_to_many)
        and not field.primary_key
    )


def _secrets(fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in fields if any(word in name for word in SECRET_WORDS))


def snapshot(instance: Model) -> dict[str, Any]:
    """The audited values of ``instance`` as the database has them now ({} for a new one)."""
    model = type(instance)
    if instance.pk is None:
        return {}
    stored = model._default_manager.filter(pk=instance.pk).first()
    if stored is None:
        return {}
    fields = audited_fields(model)
    return audited_values(stored, fields, _secrets(fields))


def current(instance: Model) -> dict[str, Any]:
    fields = audited_fields(type(instance))
    return audited_values(instance, fields, _secrets(fields))


class AuditedAdmin:
    """Mix into a ``ModelAdmin`` (before it) to audit every save and delete it makes."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        form._audit_before = snapshot(obj) if change else {}
        super().save_model(request, obj, form, change)  # type: ignore[misc]

    def save_related(
        self, request: HttpRequest, form: ModelForm[Any], formsets: Any, change: bool
    ) -> None:
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        before = getattr(form, "_audit_before", {})
        record_changes(request.user, form.instance, before, current(form.instance))

    def save_formset(
        self, request: HttpRequest, form: Any, formset: BaseFormSet[Any], change: bool
    ) -> None:
        deleted = formset.deleted_forms  # type: ignore[attr-defined]
        for inline in deleted:
            if inline.instance.pk is not None:
                record_changes(request.user, inline.instance, snapshot(inline.instance), {})
        befores = {
            id(inline.instance): snapshot(inline.instance)
            for inline in formset.forms  # type: ignore[attr-defined]
            if inline not in deleted and getattr(inline, "instance", None) is not None
        }
        super().save_formset(request, form, formset, change)  # type: ignore[misc]
        for inline in formset.forms:  # type: ignore[attr-defined]
            instance = getattr(inline, "instance", None)
            if inline in deleted or instance is None or instance.pk is None:
                continue
            if inline.has_changed():
                before = befores.get(id(instance), {})
                record_changes(request.user, instance, before, current(instance))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        record_changes(request.user, obj, snapshot(obj), {})
        super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            record_changes(request.user, obj, snapshot(obj), {})
        super().delete_queryset(request, queryset)  # type: ignore[misc]

    def audited_update(
        self, request: HttpRequest, queryset: QuerySet[Any], change: Callable[[QuerySet[Any]], int]
    ) -> int:
        """Run an admin action's bulk ``change`` of ``queryset`` and record what it changed."""
        before = {obj.pk: snapshot(obj) for obj in queryset}
        changed = change(queryset)
        for obj in queryset.model._default_manager.filter(pk__in=before):
            record_changes(request.user, obj, before[obj.pk], current(obj))
        return changed
