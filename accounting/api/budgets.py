"""Budgets and statement adjustments over REST (issue 25), audited (audit app).

- ``/api/v1/budgets/``: read by team admins (their teams), finance and platform admins; set,
  changed and removed by finance and platform admins (`access.is_platform_admin_or_finance`).
- ``/api/v1/adjustments/``: adjustment lines of statements, read like statements; added by
  finance and platform admins (`access.is_platform_admin_or_finance`) to the team's statement of the
  current (open) month (`accounting.statements.add_adjustment`): final statements never change.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from rest_framework import mixins, permissions, serializers, viewsets

from accounting.models import Budget, FinalStatementError, Statement, StatementLine
from accounting.statements import add_adjustment
from gpuplatform import access
from queues.models import Team

BUDGET_FIELDS = ("team", "month", "amount", "currency")


def _audit(actor: Any, instance: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
    import audit

    audit.record_changes(actor, instance, before, after)


def _budget_state(budget: Budget) -> dict[str, Any]:
    return {
        "team": budget.team.name,
        "month": str(budget.month),
        "amount": str(budget.amount),
        "currency": budget.currency,
    }


class BudgetSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())

    class Meta:
        model = Budget
        fields = ["id", *BUDGET_FIELDS]
        read_only_fields = ["currency"]

    def validate_month(self, value: Any) -> Any:
        if value.day != 1:
            raise serializers.ValidationError("Give the first day of the month.")
        return value

    def validate_amount(self, value: Any) -> Any:
        if value <= 0:
            raise serializers.ValidationError("A budget is more than zero.")
        return value


class ManageBudgets(permissions.BasePermission):
    """Reading is filtered by the queryset; writing is for finance and platform admins."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return access.is_platform_admin_or_finance(request.user)


class BudgetViewSet(viewsets.ModelViewSet):
    """Team budgets per UTC month (alerts at 80 % and 100 %). Filters: team, month (YYYY-MM)."""

    serializer_class = BudgetSerializer
    permission_classes = [permissions.IsAuthenticated, ManageBudgets]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Budget]:
        params = self.request.query_params
        budgets = access.filter_visible_budgets(
            Budget.objects.select_related("team").order_by("-month", "team__name"),
            self.request.user,
        )
        if params.get("team"):
            budgets = budgets.filter(team__name=params["team"])
        if params.get("month"):
            year, _, month = params["month"].partition("-")
            if not (year.isdigit() and month.isdigit() and 1 <= int(month) <= 12):
                raise serializers.ValidationError(
                    {"month": [f"month={params['month']!r} is not a month: use YYYY-MM."]}
                )
            budgets = budgets.filter(month__year=int(year), month__month=int(month))
        return budgets

    def perform_create(self, serializer: Any) -> None:
        budget = serializer.save()
        _audit(self.request.user, budget, {}, _budget_state(budget))

    def perform_update(self, serializer: Any) -> None:
        before = _budget_state(serializer.instance)
        budget = serializer.save()
        _audit(self.request.user, budget, before, _budget_state(budget))

    def perform_destroy(self, instance: Budget) -> None:
        _audit(self.request.user, instance, _budget_state(instance), {})
        instance.delete()


class AdjustmentSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(
        slug_field="name", queryset=Team.objects.all(), source="statement.team"
    )
    month = serializers.DateField(source="statement.month", read_only=True)
    statement = serializers.PrimaryKeyRelatedField(read_only=True)
    description = serializers.CharField(max_length=300)

    class Meta:
        model = StatementLine
        fields = ["id", "statement", "team", "month", "cost", "description"]


class AdjustStatements(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return access.is_platform_admin_or_finance(request.user)


class AdjustmentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Adjustment lines (corrections) of statements; new ones go on the team's statement of the
    current month. Lines are never edited or removed: a correction is another adjustment."""

    serializer_class = AdjustmentSerializer
    permission_classes = [permissions.IsAuthenticated, AdjustStatements]

    def get_queryset(self) -> QuerySet[StatementLine]:
        lines = StatementLine.objects.filter(kind=StatementLine.Kind.ADJUSTMENT)
        visible = access.filter_visible_statements(Statement.objects.all(), self.request.user)
        lines = lines.filter(statement__in=visible).select_related("statement__team")
        if self.request.query_params.get("team"):
            lines = lines.filter(statement__team__name=self.request.query_params["team"])
        return lines.order_by("-statement__month", "pk")

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        try:
            line = add_adjustment(
                data["statement"]["team"], data["cost"], data["description"], timezone.now()
            )
        except FinalStatementError as error:
            raise serializers.ValidationError({"description": error.messages}) from None
        serializer.instance = line
        _audit(
            self.request.user,
            line,
            {},
            {
                "team": line.statement.team.name,
                "month": str(line.statement.month),
                "cost": str(line.cost),
                "description": line.description,
            },
        )
