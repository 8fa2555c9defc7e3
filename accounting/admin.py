"""Admin for platform admins: prices and multipliers (added, never edited: history), budgets;
the ledger and statements read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from accounting.models import (
    Budget,
    BudgetAlert,
    ClassMultiplier,
    FlavorPrice,
    Statement,
    UsageRecord,
)
from accounting.pricing import record_price_change
from audit.admin_changes import AuditedAdmin


class _AddOnly(admin.ModelAdmin):
    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def save_model(self, request: Any, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        record_price_change(request.user, obj)


@admin.register(FlavorPrice)
class FlavorPriceAdmin(_AddOnly):
    list_display = ("flavor", "price_per_unit_hour", "currency", "effective_from")
    list_filter = ("flavor",)


@admin.register(ClassMultiplier)
class ClassMultiplierAdmin(_AddOnly):
    list_display = ("service_class", "multiplier", "effective_from")


@admin.register(Budget)
class BudgetAdmin(AuditedAdmin, admin.ModelAdmin):
    list_display = ("team", "month", "amount", "currency")
    list_filter = ("month",)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(UsageRecord)
class UsageRecordAdmin(_ReadOnly):
    list_display = ("job", "team", "flavor", "units", "start", "end", "closed", "cost")
    list_filter = ("closed", "team", "flavor")


@admin.register(Statement)
class StatementAdmin(_ReadOnly):
    list_display = ("team", "month", "status", "total", "currency")
    list_filter = ("status", "month")


@admin.register(BudgetAlert)
class BudgetAlertAdmin(_ReadOnly):
    list_display = ("budget", "threshold", "spent", "raised_at")
