"""Accounting models: the usage ledger, price history, monthly statements and team budgets.

The ledger (`UsageRecord`) is written only by `accounting.ledger.accrue_usage` (called at the end
of each live scheduling cycle). A row is one segment of one job's run with a constant number of
units (GPUs or MIG slices): it is *open* while the job runs (its end moves forward to the latest
accrual) and *closed* at a stop, a finish, a scale or a UTC month boundary. A closed row is
priced once when it closes (`cost` stored) and never rewritten. Rows never cross a UTC month
boundary, so monthly statements sum whole rows.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

MONEY = {"max_digits": 18, "decimal_places": 2}  # ACCOUNTING_CURRENCY has 2 minor units
HOURS = {"max_digits": 18, "decimal_places": 6}


class FinalStatementError(ValidationError):
    """A final statement (or one of its lines) cannot change; correct it on a later statement."""


def default_currency() -> str:
    return str(getattr(settings, "ACCOUNTING_CURRENCY", "USD"))


class UsageRecord(models.Model):
    """One segment of a job's GPU use: `units` of `flavor` during [start, end)."""

    job = models.ForeignKey("queues.Job", on_delete=models.PROTECT, related_name="usage_records")
    team = models.ForeignKey("queues.Team", on_delete=models.PROTECT, related_name="+")
    queue = models.ForeignKey("queues.Queue", on_delete=models.PROTECT, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    cluster = models.ForeignKey("queues.Cluster", on_delete=models.PROTECT, related_name="+")
    flavor = models.ForeignKey("queues.Flavor", on_delete=models.PROTECT, related_name="+")
    service_class = models.ForeignKey(
        "queues.ServiceClass", on_delete=models.PROTECT, related_name="+"
    )
    workers = models.PositiveIntegerField()
    units = models.PositiveIntegerField(help_text="GPUs or MIG slices held: workers x per worker.")
    gpu_equivalent = models.DecimalField(
        max_digits=8, decimal_places=6, help_text="Of one unit (1 for a whole GPU, k/7 for MIG)."
    )
    start = models.DateTimeField()
    end = models.DateTimeField()
    seconds = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    closed = models.BooleanField(default=False)
    # Set when the row closes (priced then, never again); NULL while open or when no price was
    # in force at closing (such rows are priced at query time, like open ones).
    unit_hours = models.DecimalField(**HOURS, null=True, blank=True)
    gpu_equivalent_hours = models.DecimalField(**HOURS, null=True, blank=True)
    cost = models.DecimalField(**MONEY, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)

    class Meta:
        ordering = ["start", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["job", "start"], name="usage_record_unique_job_start"),
            models.CheckConstraint(condition=Q(end__gte=models.F("start")), name="usage_end_gte"),
            models.UniqueConstraint(
                fields=["job"], condition=Q(closed=False), name="usage_record_one_open_per_job"
            ),
        ]
        indexes = [
            models.Index(fields=["start", "end"], name="usage_start_end_idx"),
            models.Index(fields=["team", "start"], name="usage_team_start_idx"),
            models.Index(fields=["user", "start"], name="usage_user_start_idx"),
            models.Index(
                fields=["start"],
                condition=Q(closed=False) | Q(cost__isnull=True),
                name="usage_unpriced_start_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.units} x {self.flavor_id} [{self.start}, {self.end})"


class AccrualMark(models.Model):
    """Up to when the ledger has been accrued (one row per ledger; runs that began since are
    looked at by the next accrual, so a run that started and stopped between two accruals is
    still recorded)."""

    name = models.CharField(max_length=40, primary_key=True)
    at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} accrued up to {self.at}"


class FlavorPrice(models.Model):
    """Price of one unit of `flavor` per hour from `effective_from` on (history is kept)."""

    flavor = models.ForeignKey("queues.Flavor", on_delete=models.PROTECT, related_name="prices")
    price_per_unit_hour = models.DecimalField(max_digits=14, decimal_places=6)
    currency = models.CharField(max_length=3, default=default_currency)
    effective_from = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["flavor__name", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["flavor", "effective_from"],
                name="flavor_price_unique_date",
                violation_error_message="This flavor already has a price from that moment.",
            ),
            models.CheckConstraint(
                condition=Q(price_per_unit_hour__gte=0),
                name="flavor_price_not_negative",
                violation_error_message="A price cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.flavor_id}: {self.price_per_unit_hour} {self.currency}/h"

    def clean(self) -> None:
        if self.currency != default_currency():
            raise ValidationError(
                {"currency": f"Prices are kept in {default_currency()} (ACCOUNTING_CURRENCY)."}
            )


class ClassMultiplier(models.Model):
    """Factor on the flavor price for a service class from `effective_from` on. Before a class's
    first row, its `ServiceClass.price_multiplier` applies."""

    service_class = models.ForeignKey(
        "queues.ServiceClass", on_delete=models.PROTECT, related_name="price_multipliers"
    )
    multiplier = models.DecimalField(max_digits=8, decimal_places=3)
    effective_from = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["service_class__name", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["service_class", "effective_from"],
                name="class_multiplier_unique_date",
                violation_error_message="This class already has a multiplier from that moment.",
            ),
            models.CheckConstraint(
                condition=Q(multiplier__gte=0),
                name="class_multiplier_not_negative",
                violation_error_message="A multiplier cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.service_class_id} x{self.multiplier}"


class Statement(models.Model):
    """A team's charges for one UTC month: a draft while the month is open, final afterwards."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        FINAL = "final", "Final"

    team = models.ForeignKey("queues.Team", on_delete=models.PROTECT, related_name="statements")
    month = models.DateField(help_text="First day of the month (UTC).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    currency = models.CharField(max_length=3, default=default_currency)
    total = models.DecimalField(**MONEY, default=Decimal(0))
    generated_at = models.DateTimeField(default=timezone.now)
    finalized_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-month", "team__name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "month"], name="statement_unique_team_month"),
            models.CheckConstraint(condition=Q(month__day=1), name="statement_month_first_day"),
        ]

    def __str__(self) -> str:
        return f"{self.team_id} {self.month:%Y-%m} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._stored_status() == self.Status.FINAL:
            raise FinalStatementError(f"Statement {self} is final and cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self._stored_status() == self.Status.FINAL:
            raise FinalStatementError(f"Statement {self} is final and cannot be deleted.")
        return super().delete(*args, **kwargs)

    def _stored_status(self) -> str | None:
        if self.pk is None:
            return None
        return Statement.objects.filter(pk=self.pk).values_list("status", flat=True).first()


class StatementLine(models.Model):
    class Kind(models.TextChoices):
        USAGE = "usage", "Usage"
        IDLE = "idle", "Idle share"
        ADJUSTMENT = "adjustment", "Adjustment"

    statement = models.ForeignKey(Statement, on_delete=models.CASCADE, related_name="lines")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.USAGE)
    flavor = models.ForeignKey(
        "queues.Flavor", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    service_class = models.ForeignKey(
        "queues.ServiceClass", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    queue = models.ForeignKey(
        "queues.Queue", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    description = models.CharField(max_length=300, blank=True)
    gpu_hours = models.DecimalField(**HOURS, default=Decimal(0))
    gpu_equivalent_hours = models.DecimalField(**HOURS, default=Decimal(0))
    cost = models.DecimalField(**MONEY)

    class Meta:
        ordering = ["kind", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.cost}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._statement_final():
            raise FinalStatementError("Lines of a final statement cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self._statement_final():
            raise FinalStatementError("Lines of a final statement cannot be deleted.")
        return super().delete(*args, **kwargs)

    def _statement_final(self) -> bool:
        return Statement.objects.filter(
            pk=self.statement_id, status=Statement.Status.FINAL
        ).exists()


class Budget(models.Model):
    """What a team may spend in one UTC month; alerts at 80 % and 100 %."""

    team = models.ForeignKey("queues.Team", on_delete=models.CASCADE, related_name="budgets")
    month = models.DateField(help_text="First day of the month (UTC).")
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3, default=default_currency)

    class Meta:
        ordering = ["-month", "team__name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "month"], name="budget_unique_team_month"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="budget_amount_positive"),
            models.CheckConstraint(condition=Q(month__day=1), name="budget_month_first_day"),
        ]

    def __str__(self) -> str:
        return f"budget {self.team_id} {self.month:%Y-%m}: {self.amount} {self.currency}"

    def clean(self) -> None:
        if isinstance(self.month, date) and self.month.day != 1:
            raise ValidationError({"month": "Give the first day of the month."})


class BudgetAlert(models.Model):
    """A budget threshold crossed; raised once per threshold per budget (i.e. per month)."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts")
    threshold = models.PositiveSmallIntegerField(help_text="Percent of the budget: 80 or 100.")
    spent = models.DecimalField(**MONEY)
    raised_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-raised_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "threshold"], name="budget_alert_once_per_threshold"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.budget}: {self.threshold}% reached ({self.spent})"
