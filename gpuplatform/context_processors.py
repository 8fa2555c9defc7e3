"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

from gpuplatform import access


def nav_items(request: HttpRequest) -> dict[str, list[access.NavItem]]:
    """``nav_items``: the navigation links this user may use (gpuplatform.access.navigation)."""
    return {"nav_items": access.navigation(request.user)}
