"""The admin site, for platform admins only.

Django's stock site lets any ``is_staff`` user in and sends everyone else to its own login form.
Here the rule is the platform's (``access.is_platform_admin``): anonymous visitors go to the
site's login page, signed-in users who are not platform admins get 403.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from gpuplatform import access


class PlatformAdminSite(admin.AdminSite):
    site_header = "gpuplatform administration"
    site_title = "gpuplatform admin"
    index_title = "Platform administration"

    def has_permission(self, request: HttpRequest) -> bool:
        return access.is_platform_admin(request.user)

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Callable[..., Any]:
        inner = super().admin_view(view, cacheable)

        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if request.user.is_authenticated and not self.has_permission(request):
                raise PermissionDenied("The admin site is for platform admins.")
            return inner(request, *args, **kwargs)

        return update_wrapper(guarded, inner)

    def login(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """Signing in happens on the site's login page, for the admin site too."""
        if request.user.is_authenticated:
            if not self.has_permission(request):
                raise PermissionDenied("The admin site is for platform admins.")
            return HttpResponseRedirect(reverse("admin:index", current_app=self.name))
        return redirect_to_login(request.GET.get("next") or reverse("admin:index"))
