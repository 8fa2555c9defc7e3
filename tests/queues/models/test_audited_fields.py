"""Each model's edited and audited fields are declared once (``Model.AUDITED_FIELDS``): the
manage forms, the REST serializers and their change history, the admin lists and the manage
pages' lists all take them from there."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from django.db.models import Model

from queues import admin as queues_admin
from queues.api import serializers, views
from queues.forms import manage as forms
from queues.models import Cohort, Flavor, Queue, Quota, ServiceClass, Team
from queues.views.manage.generic import SECTIONS

ROOT = Path(__file__).resolve().parents[3]
APPS = ("queues", "accounting", "audit", "dashboards", "demo", "gpuplatform", "templates")


@pytest.mark.parametrize(
    ("model", "form", "serializer", "viewset"),
    [
        (Team, forms.TeamForm, serializers.TeamSerializer, views.TeamViewSet),
        (Cohort, forms.CohortForm, serializers.CohortSerializer, views.CohortViewSet),
        (Queue, forms.QueueForm, serializers.QueueSerializer, views.QueueViewSet),
        (Quota, forms.QuotaForm, serializers.QuotaSerializer, None),
        (Flavor, forms.FlavorForm, serializers.FlavorSerializer, views.FlavorViewSet),
        (
            ServiceClass,
            forms.ServiceClassForm,
            serializers.ServiceClassSerializer,
            views.ServiceClassViewSet,
        ),
    ],
)
def test_forms_serializers_and_the_api_history_use_the_declared_fields(
    model: type[Model], form: type, serializer: type, viewset: type | None
) -> None:
    fields = list(model.AUDITED_FIELDS)  # type: ignore[attr-defined]
    # (an inline formset appends its foreign key to its form's list: the quota's queue)
    assert form._meta.fields[: len(fields)] == fields
    assert [f for f in serializer.Meta.fields if f in fields] == fields
    if viewset is not None:
        assert list(viewset.audit_fields) == fields


def test_admin_and_manage_lists_show_the_declared_fields() -> None:
    site = queues_admin.admin.site
    assert site._registry[ServiceClass].list_display == list(ServiceClass.AUDITED_FIELDS)
    assert site._registry[Quota].list_display == ["queue", *Quota.AUDITED_FIELDS]
    assert SECTIONS["service-classes"].columns == ServiceClass.AUDITED_FIELDS
    # cohorts have a page of their own (queues/views/manage/cohorts.py), not a generic section
    assert site._registry[Cohort].list_display == list(Cohort.AUDITED_FIELDS)


def _sources() -> list[Path]:
    files = []
    for app in APPS:
        for path in (ROOT / app).rglob("*"):
            if path.suffix in (".py", ".html") and "migrations" not in path.parts:
                files.append(path)
    return files


@pytest.mark.parametrize("model", [ServiceClass, Quota, Queue])
def test_no_copy_of_a_field_list_outside_its_model(model: type[Model]) -> None:
    """Three of the declared names in a row, as literals, are a copy of the list."""
    names: tuple[str, ...] = model.AUDITED_FIELDS  # type: ignore[attr-defined]
    runs = [
        re.compile(r",\s*".join(rf"""["']{re.escape(name)}["']""" for name in names[i : i + 3]))
        for i in range(len(names) - 2)
    ]
    home = Path(sys.modules[model.__module__].__file__ or "")  # where the model is declared
    copies = [
        f"{path.relative_to(ROOT)}: {run.pattern}"
        for path in _sources()
        if path != home
        for run in runs
        if run.search(path.read_text(encoding="utf-8"))
    ]
    assert copies == []
