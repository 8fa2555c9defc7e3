"""Researcher pages: job list, queue list, and the submit page (its form arrives later)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from gpuplatform import access
from queues.models import Job, Queue


def _require_submitter(request: HttpRequest) -> None:
    if not access.can_submit(request.user):
        raise PermissionDenied("These pages are for members of a team.")


@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    _require_submitter(request)
    jobs = (
        Job.objects.visible_to(request.user)
        .select_related("queue__team", "owner", "service_class")
        .order_by("-submitted_at", "-pk")[:200]
    )
    return render(request, "queues/job_list.html", {"jobs": jobs})


@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    _require_submitter(request)
    queues = (
        Queue.objects.visible_to(request.user)
        .select_related("team", "cohort")
        .prefetch_related("quotas__flavor")
    )
    return render(request, "queues/queue_list.html", {"queues": queues})


@login_required
def submit(request: HttpRequest) -> HttpResponse:
    """Lists where the user may submit; the submission form is a later issue."""
    _require_submitter(request)
    queues = access.submittable_queues(request.user).select_related("team")
    return render(request, "queues/submit.html", {"queues": queues})
