from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from queues.admin import PlatformModelAdmin
from tokens.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(PlatformModelAdmin):
    """Platform admins see and revoke tokens; nobody sees a secret (only its hash is stored)."""

    list_display = ("name", "user", "prefix", "created_at", "expires_at", "last_used_at", "status")
    list_filter = ("revoked_at", "expires_at")
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    exclude = ("secret_hash",)
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # tokens are created by their owner, who sees the secret once

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset:
            token.revoke()
