"""A cohort, its parent and its own per-flavor quotas on one page (the tree: docs/SCHEDULING.md
section 2a); lowering a nominal below what the subtree uses asks first, as the queue editor
does. The rules are the models' (the cycle check in ``Cohort.clean``), as over REST."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

import audit
from audit.history import history_for_many
from audit.values import audited_values
from gpuplatform import access
from gpusched.engine import model as engine
from queues.forms.manage import CohortForm, CohortQuotaFormSet, new_nominals
from queues.models import Cohort
from queues.services.cohort_impact import CohortImpact, cohort_impact
from queues.services.quota_impact import StrandedGpus, cohort_stranded_gpus
from queues.services.quota_trail import COHORT_QUOTAS
from queues.views.manage.queues import what_if_context


@login_required
def cohort_list(request: HttpRequest) -> HttpResponse:
    access.require_platform_admin(request.user)
    cohorts = Cohort.objects.select_related("parent").prefetch_related("quotas__flavor", "queues")
    return render(request, "manage/cohort_list.html", {"cohorts": cohorts})


def _proposed(formset: Any) -> dict[str, engine.Quota]:
    """flavor name -> the quota the formset would save (rows being deleted left out)."""
    out: dict[str, engine.Quota] = {}
    for form in formset.forms:
        data = getattr(form, "cleaned_data", None)
        if not data or data.get("flavor") is None or data.get("DELETE"):
            continue
        out[data["flavor"].name] = engine.Quota(
            data["nominal"], data.get("borrowing_limit"), data.get("lending_limit")
        )
    return out


@login_required
def cohort_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    access.require_platform_admin(request.user)
    cohort = get_object_or_404(Cohort, pk=pk) if pk is not None else Cohort()
    before = audited_values(cohort, Cohort.AUDITED_FIELDS)
    quotas_before = COHORT_QUOTAS.before(cohort)
    form = CohortForm(request.POST or None, instance=cohort)
    formset = CohortQuotaFormSet(request.POST or None, instance=cohort, prefix="quotas")
    impacts: list[CohortImpact] = []
    stranded: list[StrandedGpus] = []
    if request.method == "POST" and form.is_valid() and formset.is_valid():
        if cohort.pk:
            impacts = cohort_impact(form.instance, _proposed(formset))
            stranded = cohort_stranded_gpus(form.instance, new_nominals(formset))
        if not (impacts or stranded) or request.POST.get("confirm") == "yes":
            with transaction.atomic():
                saved = form.save()
                formset.instance = saved
                formset.save()
                after = audited_values(saved, Cohort.AUDITED_FIELDS)
                audit.record_changes(request.user, saved, before, after)
                COHORT_QUOTAS.record(request.user, saved, quotas_before)
            messages.success(request, f"Saved cohort {saved} and its quotas.")
            return redirect("manage-cohort-edit", pk=saved.pk)
    history = []
    if cohort.pk:
        objects = [cohort, *[q for q, _ in quotas_before.values()]]
        history = list(history_for_many(objects)[:100])
    return render(
        request,
        "manage/cohort_edit.html",
        {
            "cohort": cohort,
            "form": form,
            "formset": formset,
            "impacts": impacts,
            "stranded": stranded,
            "history": history,
            "children": list(cohort.children.all()) if cohort.pk else [],
            "members": list(cohort.queues.select_related("team")) if cohort.pk else [],
            **what_if_context(),
        },
    )
