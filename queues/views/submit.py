"""The submit page and its live estimate (a small JSON view the page's script calls)."""

from __future__ import annotations

import math
import shlex
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from gpuplatform import access
from gpuplatform.rest import count_submission
from queues.forms.submit import FLAVOR_FIELDS, SubmitForm, initial_spec
from queues.models import Job
from queues.models.job_rules import InvalidSubmission
from queues.services import submit_job
from queues.services.estimate import Estimate, estimate_submission


def _estimate(form: SubmitForm) -> Estimate | None:
    """The estimate of the form's values; None, with the errors on the form, if a rule says no
    (the form checked them already: only a change in between gets here)."""
    data = form.cleaned_data
    try:
        return estimate_submission(
            form.user,
            data["queue"],
            data["service_class"],
            form.flavor_list(),
            data["workers"],
            data["gpus_per_worker"],
            min_workers=data.get("min_workers"),
            topology=form.topology(),
            estimated_runtime=form.runtime_seconds(),
        )
    except InvalidSubmission as error:
        form.add_problems(error.problems)
        return None


@login_required
def submit(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST with ``action=check``: the form again with the estimate (no script
    needed). POST otherwise: submit through services.submit_job and show the new job; counted
    by the API's submission throttle (JOB_SUBMIT_RATE per user, one counter): 429 beyond it."""
    access.require_submitter(request.user)
    estimate: Estimate | None = None
    status = 200
    if request.method == "POST":
        check = request.POST.get("action") == "check"
        form = SubmitForm(request.POST, request.FILES, user=request.user, for_estimate=check)
        if form.is_valid():
            if check:
                estimate = _estimate(form)
            elif (wait := count_submission(request)) is not None:
                form.add_error(
                    None,
                    f"Too many submissions: at most {settings.JOB_SUBMIT_RATE} per user (the "
                    f"API counts too). Try again in {math.ceil(wait)} seconds.",
                )
                status = 429
            else:
                job = _submit(request, form)
                if job is not None:
                    messages.success(request, f"Submitted {job.name} (#{job.pk}).")
                    return redirect("job-detail", pk=job.pk)
    else:
        initial: dict[str, Any] = {}
        if request.GET.get("queue"):
            initial["queue"] = request.GET["queue"]
        if request.GET.get("copy", "").isdigit():
            initial.update(_copy_of(request, int(request.GET["copy"])))
        form = SubmitForm(user=request.user, initial=initial)
        queues = list(form.open_queues[:2])
        if "queue" not in initial and len(queues) == 1:
            form.initial["queue"] = queues[0].pk  # the only choice: chosen already
    return render(
        request,
        "queues/submit.html",
        {"form": form, "estimate": estimate, "queue_info": form.queue_info()},
        status=status,
    )


def _copy_of(request: HttpRequest, pk: int) -> dict[str, Any]:
    """The form's initial values from a job the user may see (clone / resubmit): the same
    request under a new name; nothing for a job they may not see."""
    job = Job.objects.visible_to(request.user).filter(pk=pk).first()
    if job is None:
        return {}
    flavors = [f.pk for f in job.acceptable_flavors()]
    initial: dict[str, Any] = {
        "queue": job.queue_id,
        "service_class": job.service_class_id,
        "name": f"{job.name}-copy"[:63].rstrip("-"),
        "image": job.image,
        "command": shlex.join(job.command),
        "workers": job.workers,
        "gpus_per_worker": job.gpus_per_worker,
        "min_workers": job.min_workers if job.is_elastic else None,
        "topology_level": job.topology_level,
        "topology_mode": job.topology_mode,
        "estimated_runtime": (
            None if job.estimated_runtime is None else max(1, round(job.estimated_runtime / 60))
        ),
    }
    initial.update(zip(FLAVOR_FIELDS, flavors, strict=False))
    initial.update(initial_spec(job.spec))  # the Advanced section (a template's spec too)
    return initial


def _submit(request: HttpRequest, form: SubmitForm) -> Any:
    try:
        return submit_job(owner=request.user, checked=form.checked, **form.submission().as_kwargs())
    except InvalidSubmission as error:  # the form checked: only a change in between gets here
        form.add_problems(error.problems)
    return None


@login_required
@require_GET
def estimate(request: HttpRequest) -> JsonResponse:
    """The live estimate of the form's current values: ``{"estimate": {...}}`` or
    ``{"errors": {field: [messages]}}`` (status 400)."""
    access.require_submitter(request.user)
    form = SubmitForm(request.GET, user=request.user, for_estimate=True)
    result = _estimate(form) if form.is_valid() else None
    if result is None:
        return JsonResponse({"errors": form.errors.get_json_data()}, status=400)
    return JsonResponse({"estimate": result.as_dict()})
