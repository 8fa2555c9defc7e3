"""The site shell: home page and the pages whose real content arrives with later issues."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from gpuplatform import access


@login_required
def home(request: HttpRequest) -> HttpResponse:
    from demo.guide import getting_started
    from queues.models import Membership

    memberships = Membership.objects.filter(user=request.user).select_related("team")
    return render(
        request,
        "home.html",
        {
            "memberships": memberships,
            "is_platform_admin": access.is_platform_admin(request.user),
            "is_finance": access.is_finance(request.user),
            "getting_started": getting_started(request.user, timezone.now()),
        },
    )
