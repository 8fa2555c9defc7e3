"""Serializers of the scheduling domain's catalog: teams, memberships, cohorts, queues with their
quotas, flavors, service classes, clusters and nodes. Jobs live in ``job_serializers.py``.

Objects refer to each other by name (unique) except queues and jobs (by id). Every integer is
bounded (gpuplatform.rest.MAX_INT), every string refuses NUL, and the model's own ``clean()``
runs on the would-be object, so the API and the admin share one set of rules.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from gpuplatform import access
from gpuplatform.rest import MAX_INT, StrictModelSerializer, StringMapField, bounded_int
from queues.models import (
    Cluster,
    Cohort,
    CohortQuota,
    Flavor,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
    catalog,
)


def django_error_detail(error: DjangoValidationError) -> Any:
    if hasattr(error, "error_dict"):
        return {
            ("non_field_errors" if field == "__all__" else field): messages
            for field, messages in error.message_dict.items()
        }
    return {"non_field_errors": error.messages}


class ModelCleanMixin:
    """Run the model's ``clean()`` on the object as it would be after this request."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)  # type: ignore[misc]
        model = self.Meta.model  # type: ignore[attr-defined]
        fields = model._meta.concrete_fields
        current = getattr(self, "instance", None)
        instance = model(**{f.attname: getattr(current, f.attname) for f in fields if current})
        for field in fields:
            if field.name in attrs:
                setattr(instance, field.name, attrs[field.name])
        plain = [f for f in fields if not f.is_relation]
        before = {f.name: getattr(instance, f.name) for f in plain}
        try:
            instance.clean()
        except DjangoValidationError as error:
            raise serializers.ValidationError(django_error_detail(error)) from None
        for field in plain:  # clean() may complete a field (a flavor's MIG profile)
            if getattr(instance, field.name) != before[field.name]:
                attrs[field.name] = getattr(instance, field.name)
        return attrs


class TeamSerializer(StrictModelSerializer[Team]):
    class Meta:
        model = Team
        fields = ["id", *Team.AUDITED_FIELDS, "created_at"]
        read_only_fields = ["created_at"]


class MembershipSerializer(StrictModelSerializer[Membership]):
    user = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all()
    )
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())

    class Meta:
        model = Membership
        fields = ["id", "user", "team", "role"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:  # teams the caller cannot see do not exist for them
            self.fields["team"].queryset = access.visible_teams(request.user)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if self.instance is not None:
            for field in ("user", "team"):
                if field in attrs and attrs[field] != getattr(self.instance, field):
                    raise serializers.ValidationError(
                        {field: f"A membership's {field} cannot change; delete it and add another."}
                    )
        return attrs


class QuotaSerializer(ModelCleanMixin, StrictModelSerializer[Quota]):
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    nominal = bounded_int(help_text="GPUs (or slices) guaranteed to the queue.")
    borrowing_limit = bounded_int(
        allow_null=True,
        required=False,
        help_text="How far above nominal it may borrow; null: no limit.",
    )
    lending_limit = bounded_int(
        allow_null=True,
        required=False,
        help_text="How much of its nominal others may use; null: all.",
    )

    class Meta:
        model = Quota
        fields = list(Quota.AUDITED_FIELDS)
        validators: list[Any] = []  # (queue, flavor) uniqueness: checked by QueueSerializer


class CohortQuotaSerializer(StrictModelSerializer[CohortQuota]):
    flavor = serializers.SlugRelatedField(slug_field="name", queryset=Flavor.objects.all())
    nominal = bounded_int(
        required=False, help_text="GPUs (or slices) the cohort adds for its subtree to share."
    )
    borrowing_limit = bounded_int(
        allow_null=True,
        required=False,
        help_text="How much it may borrow from its parent; null: no limit.",
    )
    lending_limit = bounded_int(
        allow_null=True,
        required=False,
        help_text="How much its subtree lends its parent (may exceed its nominal); null: all.",
    )

    class Meta:
        model = CohortQuota
        fields = list(CohortQuota.AUDITED_FIELDS)
        validators: list[Any] = []  # (cohort, flavor) uniqueness: checked by CohortSerializer


class CohortSerializer(ModelCleanMixin, StrictModelSerializer[Cohort]):
    parent = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Cohort.objects.all(),
        allow_null=True,
        required=False,
        help_text="The cohort this one borrows from and lends to (a tree); null: a root.",
    )
    quotas = CohortQuotaSerializer(
        many=True,
        required=False,
        help_text="The cohort's own quota per flavor; given on update, replaces all.",
    )

    class Meta:
        model = Cohort
        fields = ["id", *Cohort.AUDITED_FIELDS, "quotas"]

    def validate_quotas(self, quotas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _one_per_flavor(quotas)

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Cohort:
        quotas = validated_data.pop("quotas", [])
        cohort = Cohort.objects.create(**validated_data)
        CohortQuota.objects.bulk_create(CohortQuota(cohort=cohort, **quota) for quota in quotas)
        catalog.changed()  # a bulk insert sends no signal
        return cohort

    @transaction.atomic
    def update(self, instance: Cohort, validated_data: dict[str, Any]) -> Cohort:
        quotas = validated_data.pop("quotas", None)
        cohort = super().update(instance, validated_data)
        if quotas is not None:
            keep = []
            for quota in quotas:
                flavor = quota.pop("flavor")
                CohortQuota.objects.update_or_create(cohort=cohort, flavor=flavor, defaults=quota)
                keep.append(flavor.pk)
            cohort.quotas.exclude(flavor__in=keep).delete()
        return cohort


def _one_per_flavor(quotas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [quota["flavor"].name for quota in quotas]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise serializers.ValidationError(f"One quota per flavor; repeated: {', '.join(repeated)}.")
    return quotas


class QueueSerializer(ModelCleanMixin, StrictModelSerializer[Queue]):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())
    cohort = serializers.SlugRelatedField(
        slug_field="name", queryset=Cohort.objects.all(), allow_null=True, required=False
    )
    allowed_service_classes = serializers.SlugRelatedField(
        slug_field="name",
        queryset=ServiceClass.objects.all(),
        many=True,
        required=False,
        help_text="Classes jobs of this queue may use; empty: every class.",
    )
    weight = serializers.FloatField(
        min_value=0.001, max_value=1e6, required=False, help_text="Fair-share weight (> 0)."
    )
    quotas = QuotaSerializer(
        many=True, required=False, help_text="One quota per flavor; given on update, replaces all."
    )

    class Meta:
        model = Queue
        fields = ["id", *Queue.AUDITED_FIELDS, "decayed_usage", "quotas"]
        read_only_fields = ["decayed_usage"]

    def validate_quotas(self, quotas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _one_per_flavor(quotas)

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Queue:
        quotas = validated_data.pop("quotas", [])
        classes = validated_data.pop("allowed_service_classes", [])
        queue = Queue.objects.create(**validated_data)
        queue.allowed_service_classes.set(classes)
        Quota.objects.bulk_create(Quota(queue=queue, **quota) for quota in quotas)
        catalog.changed()  # a bulk insert sends no signal
        return queue

    @transaction.atomic
    def update(self, instance: Queue, validated_data: dict[str, Any]) -> Queue:
        quotas = validated_data.pop("quotas", None)
        classes = validated_data.pop("allowed_service_classes", None)
        queue = super().update(instance, validated_data)
        if classes is not None:
            queue.allowed_service_classes.set(classes)
        if quotas is not None:
            keep = []
            for quota in quotas:
                flavor = quota.pop("flavor")
                Quota.objects.update_or_create(queue=queue, flavor=flavor, defaults=quota)
                keep.append(flavor.pk)
            queue.quotas.exclude(flavor__in=keep).delete()
        return queue


class FlavorSerializer(ModelCleanMixin, StrictModelSerializer[Flavor]):
    gpu_equivalent = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="How much of a whole GPU one unit is: 1, or k/7 for a k-slice MIG.",
    )
    node_selector = StringMapField(
        required=False, help_text="Node labels a node must carry to offer this flavor."
    )

    class Meta:
        model = Flavor
        fields = ["id", *Flavor.AUDITED_FIELDS]


class ServiceClassSerializer(ModelCleanMixin, StrictModelSerializer[ServiceClass]):
    priority = serializers.IntegerField(
        min_value=-MAX_INT, max_value=MAX_INT, required=False, help_text="Higher runs first."
    )
    min_runtime = bounded_int(required=False, help_text="Seconds protected from preemption.")
    grace_period = bounded_int(required=False, help_text="Seconds between stop request and kill.")
    max_runtime = bounded_int(
        min_value=1, allow_null=True, required=False, help_text="Seconds; null: no limit."
    )
    preemption_protection = bounded_int(
        allow_null=True,
        required=False,
        help_text="Seconds after each (re)start without fair-share or priority stops (a reclaim "
        "still may); null: the platform default.",
    )
    price_multiplier = serializers.DecimalField(
        max_digits=8, decimal_places=3, min_value=Decimal(0), required=False
    )

    class Meta:
        model = ServiceClass
        fields = ["id", *ServiceClass.AUDITED_FIELDS]


class ClusterSerializer(ModelCleanMixin, StrictModelSerializer[Cluster]):
    """Connection secrets are write-only: responses say only whether they are set."""

    has_token = serializers.SerializerMethodField()
    has_ca_cert = serializers.SerializerMethodField()
    has_kubeconfig = serializers.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "driver",
            "in_cluster",
            "api_url",
            "token",
            "ca_cert",
            "kubeconfig_path",
            "kubeconfig_context",
            "verify_tls",
            "has_token",
            "has_ca_cert",
            "has_kubeconfig",
            "status",
            "status_message",
            "last_sync_at",
        ]
        read_only_fields = ["status", "status_message", "last_sync_at"]
        extra_kwargs = {
            "token": {"write_only": True, "max_length": 20000},
            "ca_cert": {"write_only": True, "max_length": 100000},
            "kubeconfig_path": {"write_only": True},
        }

    def get_has_token(self, cluster: Cluster) -> bool:
        return cluster.has_token

    def get_has_ca_cert(self, cluster: Cluster) -> bool:
        return bool(cluster.ca_cert)

    def get_has_kubeconfig(self, cluster: Cluster) -> bool:
        return bool(cluster.kubeconfig_path)


class NodeSerializer(StrictModelSerializer[Node]):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    labels = StringMapField(read_only=True)
    capacity = serializers.DictField(
        child=serializers.IntegerField(), read_only=True, help_text="Units per flavor name."
    )

    class Meta:
        model = Node
        fields = [
            "id", "cluster", "name", "labels", "capacity", "schedulable", "ready", "cordoned",
            "draining",
        ]  # fmt: skip
        read_only_fields = fields
