"""A service class's preemption protection (docs/SCHEDULING.md section 4, rule 1): edited over
REST and on the manage pages, empty meaning the platform default, and handed to the engine by
the live snapshot."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from queues.models import ServiceClass
from queues.services.snapshot import build_snapshot

Api = Callable[[User | None], APIClient]

pytestmark = pytest.mark.django_db


def test_the_field_round_trips_over_rest(api: Api, platform_admin: User) -> None:
    client = api(platform_admin)
    url = reverse("api-service-class-list")
    response = client.post(url, {"name": "batch", "priority": 5, "preemption_protection": 900})
    assert response.status_code == 201, response.content
    assert response.json()["preemption_protection"] == 900
    detail = reverse("api-service-class-detail", args=[response.json()["id"]])
    assert client.get(detail).json()["preemption_protection"] == 900
    cleared = client.patch(detail, {"preemption_protection": None}, format="json")
    assert cleared.status_code == 200, cleared.content
    assert cleared.json()["preemption_protection"] is None
    assert ServiceClass.objects.get(name="batch").preemption_protection is None
    default = client.post(url, {"name": "other", "priority": 1})
    assert default.json()["preemption_protection"] is None


@pytest.mark.parametrize("value", [-1, "soon", 2**40])
def test_a_bad_value_is_400_naming_the_field(api: Api, platform_admin: User, value: Any) -> None:
    response = api(platform_admin).post(
        reverse("api-service-class-list"),
        {"name": "batch", "priority": 5, "preemption_protection": value},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "preemption_protection" in response.json()
    assert not ServiceClass.objects.filter(name="batch").exists()


def test_an_empty_protection_reaches_the_engine_as_the_platform_default(settings: Any) -> None:
    settings.PREEMPTION_PROTECTION_SECONDS = 300
    ServiceClass.objects.create(name="default", priority=1)
    ServiceClass.objects.create(name="own", priority=2, preemption_protection=1800)
    ServiceClass.objects.create(name="none", priority=3, preemption_protection=0)
    snapshot = build_snapshot(datetime(2026, 1, 1, tzinfo=UTC)).snapshot
    got = {c.name: c.preemption_protection for c in snapshot.service_classes}
    assert got == {"default": 300.0, "own": 1800.0, "none": 0.0}
    settings.PREEMPTION_PROTECTION_SECONDS = 0
    snapshot = build_snapshot(datetime(2026, 1, 1, tzinfo=UTC)).snapshot
    assert {c.name: c.preemption_protection for c in snapshot.service_classes}["default"] == 0.0


def test_the_manage_form_edits_the_protection(client: Client, platform_admin: User) -> None:
    cls = ServiceClass.objects.create(name="batch", priority=5)
    client.force_login(platform_admin)
    url = reverse("manage-object-edit", args=["service-classes", cls.pk])
    assert "preemption_protection" in client.get(url).content.decode()
    data = {
        "name": "batch", "priority": 5, "preemptible": "on", "can_borrow": "on",
        "min_runtime": 0, "grace_period": 0, "max_runtime": "", "price_multiplier": "1.0",
        "preemption_protection": 600,
    }  # fmt: skip
    assert client.post(url, data).status_code == 302
    cls.refresh_from_db()
    assert cls.preemption_protection == 600
    response = client.post(url, {**data, "preemption_protection": -5})
    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"preemption_protection"}
    assert client.post(url, {**data, "preemption_protection": ""}).status_code == 302
    cls.refresh_from_db()
    assert cls.preemption_protection is None
