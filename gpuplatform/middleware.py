"""The site's own middleware: query parameters holding a NUL character are refused before any
view sees them (PostgreSQL stores no NUL: a lookup with one is a 500 there), and every response
carries the Content-Security-Policy header (Django 5.2 has no built-in CSP)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

API_PREFIX = "/api/"


class RejectNulQueryMiddleware:
    """A NUL character (``%00``) in a query parameter's name or value: 400 naming the parameter,
    as JSON under /api/ (DRF's shape: ``{"team": ["..."]}``), as text on pages."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                shown = name.replace("\x00", "\\x00")
                message = f"The NUL character is not allowed in the query parameter {shown!r}."
                if request.path.startswith(API_PREFIX):
                    return JsonResponse({shown: [message]}, status=400)
                return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """``Content-Security-Policy: settings.CONTENT_SECURITY_POLICY`` on every response that does
    not set its own (none when the setting is empty)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
