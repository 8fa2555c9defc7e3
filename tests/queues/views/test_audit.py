"""audit.record_changes: one entry per changed field, with who and old -> new."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser, User

import audit
from audit.models import AuditEntry
from queues.models import ServiceClass

pytestmark = pytest.mark.django_db


def test_only_changed_fields_are_recorded_with_json_values(platform_admin: User) -> None:
    cls = ServiceClass.objects.create(name="gold", priority=1)
    entries = audit.record_changes(
        platform_admin, cls,
        {"priority": 1, "price_multiplier": Decimal("1.000"), "name": "gold"},
        {"priority": 9, "price_multiplier": Decimal("1.500"), "name": "gold"},
    )  # fmt: skip
    assert [(e.field, e.old, e.new) for e in entries] == [
        ("price_multiplier", "1.000", "1.500"),
        ("priority", 1, 9),
    ]
    entry = audit.history_for(cls).first()
    assert entry is not None and entry.actor_name == "pat-admin"
    assert entry.object_label == "gold" and entry.object_type == "queues.serviceclass"


def test_created_and_deleted_objects_record_none_on_the_missing_side(
    platform_admin: User,
) -> None:
    cls = ServiceClass.objects.create(name="tmp", priority=1)
    audit.record_changes(platform_admin, cls, {}, {"priority": 1})
    audit.record_changes(platform_admin, cls, {"priority": 1}, {})
    assert list(audit.history_for(cls).values_list("old", "new")) == [(1, None), (None, 1)]


def test_a_system_change_has_no_actor() -> None:
    cls = ServiceClass.objects.create(name="sys", priority=1)
    audit.record_changes(AnonymousUser(), cls, {"priority": 1}, {"priority": 2})
    assert AuditEntry.objects.get().actor is None
