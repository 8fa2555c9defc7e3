"""Queue pages: every visible queue at a glance, and one queue's quota, usage and line."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit.history import history_for_many
from gpuplatform import access
from queues.services.queue_status import SHARE_MEANING, queue_status, queues_status


@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    access.require_submitter(request.user)
    queues = access.visible_queues(request.user).select_related("team", "cohort")
    return render(request, "queues/queue_list.html", {"statuses": queues_status(queues)})


@login_required
def queue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    access.require_submitter(request.user)
    queue = access.visible_queue_or_404(request.user, pk)
    status = queue_status(queue)
    history = history_for_many([queue, *queue.quotas.all()])[:20]
    return render(
        request,
        "queues/queue_detail.html",
        {
            "queue": queue,
            "status": status,
            "can_submit": access.submittable_queues(request.user).filter(pk=queue.pk).exists(),
            "is_platform_admin": access.is_platform_admin(request.user),
            "history": history,
            "share_meaning": SHARE_MEANING,
        },
    )
