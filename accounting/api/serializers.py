"""Serializers of the accounting REST API. Money and hours are Decimal strings, times UTC."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from accounting.models import (
    ClassMultiplier,
    FlavorPrice,
    Statement,
    StatementLine,
    UsageRecord,
)
from accounting.pricing import currency
from queues.models import Flavor, ServiceClass


class UsageRecordSerializer(serializers.ModelSerializer):
    job = serializers.IntegerField(source="job_id")
    team = serializers.CharField(source="team.name")
    queue = serializers.SerializerMethodField()
    user = serializers.CharField(source="user.username")
    cluster = serializers.CharField(source="cluster.name")
    flavor = serializers.CharField(source="flavor.name")
    service_class = serializers.CharField(source="service_class.name")
    gpu_equivalents = serializers.SerializerMethodField()
    gpu_hours = serializers.DecimalField(source="unit_hours", max_digits=18, decimal_places=6)

    class Meta:
        model = UsageRecord
        fields = [
            "id",
            "job",
            "team",
            "queue",
            "user",
            "cluster",
            "flavor",
            "service_class",
            "workers",
            "units",
            "gpu_equivalent",
            "gpu_equivalents",
            "start",
            "end",
            "seconds",
            "closed",
            "gpu_hours",
            "gpu_equivalent_hours",
            "cost",
            "currency",
        ]

    def get_queue(self, record: UsageRecord) -> str:
        return f"{record.team.name}/{record.queue.name}"

    def get_gpu_equivalents(self, record: UsageRecord) -> str:
        return str(record.units * record.gpu_equivalent)


def _currency_checked(value: str) -> str:
    if value != currency():
        raise serializers.ValidationError(
            f"Prices are kept in {currency()} (the ACCOUNTING_CURRENCY setting), not {value}."
        )
    return value


class FlavorPriceSerializer(serializers.ModelSerializer):
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    currency = serializers.CharField(max_length=3, required=False, default=currency)

    class Meta:
        model = FlavorPrice
        fields = ["id", "flavor", "price_per_unit_hour", "currency", "effective_from", "created_at"]
        read_only_fields = ["created_at"]

    def validate_currency(self, value: str) -> str:
        return _currency_checked(value.upper())

    def validate_price_per_unit_hour(self, value: Any) -> Any:
        if value < 0:
            raise serializers.ValidationError("A price cannot be negative.")
        return value


class ClassMultiplierSerializer(serializers.ModelSerializer):
    service_class = serializers.SlugRelatedField(
        slug_field="name", queryset=ServiceClass.objects.all()
    )

    class Meta:
        model = ClassMultiplier
        fields = ["id", "service_class", "multiplier", "effective_from", "created_at"]
        read_only_fields = ["created_at"]

    def validate_multiplier(self, value: Any) -> Any:
        if value < 0:
            raise serializers.ValidationError("A multiplier cannot be negative.")
        return value


class StatementLineSerializer(serializers.ModelSerializer):
    flavor = serializers.SlugRelatedField(slug_field="name", read_only=True)
    service_class = serializers.SlugRelatedField(slug_field="name", read_only=True)
    queue = serializers.SerializerMethodField()

    class Meta:
        model = StatementLine
        fields = [
            "kind",
            "queue",
            "flavor",
            "service_class",
            "description",
            "gpu_hours",
            "gpu_equivalent_hours",
            "cost",
        ]

    def get_queue(self, line: StatementLine) -> str | None:
        return f"{line.queue.team.name}/{line.queue.name}" if line.queue else None


class StatementSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name")
    month = serializers.SerializerMethodField()
    lines = StatementLineSerializer(many=True, read_only=True)

    class Meta:
        model = Statement
        fields = [
            "id",
            "team",
            "month",
            "status",
            "currency",
            "total",
            "generated_at",
            "finalized_at",
            "lines",
        ]

    def get_month(self, statement: Statement) -> str:
        return f"{statement.month:%Y-%m}"
