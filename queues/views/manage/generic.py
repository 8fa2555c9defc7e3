"""List, create and edit pages for the simple platform objects, from one registry."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

import audit
from audit.values import audited_values
from gpuplatform import access
from queues.forms import manage as manage_forms
from queues.models import Cluster, Flavor, ServiceClass


@dataclass(frozen=True)
class Section:
    slug: str
    title: str  # plural, for headings
    noun: str  # singular
    model: type[Model]
    form: type[forms.ModelForm]
    columns: tuple[str, ...]
    secrets: tuple[str, ...] = ()
    related: str = ""  # a reverse relation listed (read-only) on the object's page
    related_title: str = ""


SECTIONS: dict[str, Section] = {
    s.slug: s
    for s in (
        Section(
            "service-classes", "Service classes", "service class", ServiceClass,
            manage_forms.ServiceClassForm, ServiceClass.AUDITED_FIELDS,
        ),
        Section(
            "flavors", "Flavors", "flavor", Flavor, manage_forms.FlavorForm,
            ("name", "resource", "gpu_model", "mig_profile", "gpu_equivalent"),
        ),
        Section(
            "clusters", "Clusters", "cluster", Cluster, manage_forms.ClusterForm,
            ("name", "driver", "api_url", "status"),
            secrets=("token",), related="nodes", related_title="Nodes",
        ),
    )
}  # fmt: skip


def _section(slug: str) -> Section:
    if slug not in SECTIONS:
        raise Http404("No such section.")
    return SECTIONS[slug]


@login_required
def object_list(request: HttpRequest, slug: str) -> HttpResponse:
    access.require_platform_admin(request.user)
    section = _section(slug)
    rows = [
        (obj, [getattr(obj, column) for column in section.columns])
        for obj in section.model._default_manager.all()
    ]
    headers = [section.model._meta.get_field(c).verbose_name for c in section.columns]
    return render(
        request,
        "manage/object_list.html",
        {"section": section, "rows": rows, "headers": headers},
    )


@login_required
def object_edit(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    access.require_platform_admin(request.user)
    section = _section(slug)
    instance = (
        get_object_or_404(section.model._default_manager, pk=pk)
        if pk is not None
        else section.model()
    )
    fields = list(section.form._meta.fields or [])
    before = audited_values(instance, fields, section.secrets)
    form = section.form(request.POST or None, instance=instance)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            saved = form.save()
            audit.record_changes(
                request.user, saved, before, audited_values(saved, fields, section.secrets)
            )
        messages.success(request, f"Saved {section.noun} {saved}.")
        return redirect("manage-object-edit", slug=slug, pk=saved.pk)
    history = audit.history_for(instance) if instance.pk else []
    related = []
    if instance.pk and section.related:
        related = list(getattr(instance, section.related).all()[:500])
    return render(
        request,
        "manage/object_edit.html",
        {
            "section": section,
            "form": form,
            "object": instance,
            "history": history,
            "related": related,
        },
    )
