"""The management start page: what the user may manage."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit.models import AuditEntry
from gpuplatform import access
from queues.views.manage.generic import SECTIONS


@login_required
def index(request: HttpRequest) -> HttpResponse:
    if not access.can_open_manage_pages(request.user):
        raise PermissionDenied("Only platform admins and team admins manage the platform.")
    platform_admin = access.is_platform_admin(request.user)
    recent = AuditEntry.objects.all()[:20] if platform_admin else []
    return render(
        request,
        "manage/index.html",
        {"is_platform_admin": platform_admin, "sections": SECTIONS.values(), "recent": recent},
    )
