"""A queue and its per-flavor quotas on one page; lowering a quota below usage asks first."""

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
from queues.forms.manage import QueueForm, QuotaFormSet, new_nominals
from queues.models import Cluster, Flavor, Queue
from queues.services.quota_impact import QuotaImpact, StrandedGpus, quota_impact, stranded_gpus
from queues.services.quota_trail import QUEUE_QUOTAS


@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    access.require_platform_admin(request.user)
    queues = Queue.objects.select_related("team", "cohort").prefetch_related("quotas__flavor")
    return render(request, "manage/queue_list.html", {"queues": queues})


@login_required
def queue_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    access.require_platform_admin(request.user)
    queue = get_object_or_404(Queue, pk=pk) if pk is not None else Queue()
    before = audited_values(queue, Queue.AUDITED_FIELDS)
    quotas_before = QUEUE_QUOTAS.before(queue)
    form = QueueForm(request.POST or None, instance=queue)
    formset = QuotaFormSet(request.POST or None, instance=queue, prefix="quotas")
    impacts: list[QuotaImpact] = []
    stranded: list[StrandedGpus] = []
    if request.method == "POST" and form.is_valid() and formset.is_valid():
        if queue.pk:
            nominals = new_nominals(formset)
            impacts = quota_impact(form.instance, nominals)
            stranded = stranded_gpus(form.instance, nominals)
        if not (impacts or stranded) or request.POST.get("confirm") == "yes":
            with transaction.atomic():
                saved = form.save()
                formset.instance = saved
                formset.save()
                _record(request.user, saved, before, quotas_before)
            messages.success(request, f"Saved queue {saved} and its quotas.")
            return redirect("manage-queue-edit", pk=saved.pk)
    history = []
    if queue.pk:
        objects = [queue, *[q for q, _ in quotas_before.values()]]
        history = list(history_for_many(objects)[:100])
    return render(
        request,
        "manage/queue_edit.html",
        {
            "queue": queue,
            "form": form,
            "formset": formset,
            "impacts": impacts,
            "stranded": stranded,
            "history": history,
            **what_if_context(),
        },
    )


def what_if_context() -> dict[str, Any]:
    """The what-if section's choices (queues/services/whatif/): clusters and flavors, and the
    flavor names behind the quota rows' choices (the API takes names)."""
    flavors = list(Flavor.objects.order_by("name"))
    return {
        "what_if_clusters": Cluster.objects.order_by("name"),
        "what_if_flavors": flavors,
        "what_if_flavor_names": {str(f.pk): f.name for f in flavors},
    }


def _record(
    actor: Any, queue: Queue, before: dict[str, Any], quotas_before: dict[int, Any]
) -> None:
    audit.record_changes(actor, queue, before, audited_values(queue, Queue.AUDITED_FIELDS))
    QUEUE_QUOTAS.record(actor, queue, quotas_before)
