"""What can be scheduled and where: flavors, service classes, clusters and their nodes."""

from __future__ import annotations

from typing import ClassVar

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from queues.models.encrypted import EncryptedTextField, UndecryptableSecret
from queues.models.validators import dns_label, dotted_name, resource_name, validate_string_map

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


class Flavor(models.Model):
    """One schedulable kind of GPU: whole GPUs of one model or one MIG profile."""

    # what people edit (the manage pages, the API) and the change history records
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = (
        "name",
        "resource",
        "gpu_model",
        "mig_profile",
        "gpu_equivalent",
        "node_selector",
    )

    name = models.CharField(max_length=63, unique=True, validators=[dotted_name])
    resource = models.CharField(
        max_length=253,
        validators=[resource_name],
        help_text="Kubernetes resource, e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb.",
    )
    gpu_model = models.CharField(
        max_length=100,
        blank=True,
        help_text="The node label nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3.",
    )
    mig_profile = models.CharField(
        max_length=30, blank=True, help_text="MIG profile such as 1g.10gb; empty for whole GPUs."
    )
    gpu_equivalent = models.FloatField(
        default=1.0,
        help_text="How much of a whole GPU one unit is: 1 for a whole GPU, k/7 for a k-slice MIG.",
    )
    node_selector = models.JSONField(
        default=dict, blank=True, help_text="Node labels a node must carry to offer this flavor."
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(gpu_equivalent__gt=0) & Q(gpu_equivalent__lte=1),
                name="flavor_gpu_equivalent_in_0_1",
                violation_error_message="The GPU equivalent must be greater than 0 and at most 1.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_mig(self) -> bool:
        return self.resource.startswith(MIG_RESOURCE_PREFIX)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.gpu_equivalent is not None and not 0 < self.gpu_equivalent <= 1:
            errors["gpu_equivalent"] = (
                f"{self.gpu_equivalent} is out of range: use a number greater than 0 and at most "
                "1 (1 for a whole GPU, 1/7 for a 1g MIG slice)."
            )
        if self.resource and self.is_mig:
            profile = self.resource.removeprefix(MIG_RESOURCE_PREFIX)
            if not self.mig_profile:
                self.mig_profile = profile
            elif self.mig_profile != profile:
                errors["mig_profile"] = (
                    f"The resource {self.resource} is MIG profile {profile!r}, "
                    f"not {self.mig_profile!r}."
                )
        elif self.mig_profile:
            errors["mig_profile"] = (
                "A MIG profile needs a MIG resource such as nvidia.com/mig-1g.10gb; "
                "clear the profile for whole GPUs."
            )
        try:
            validate_string_map(self.node_selector, "Node selector")
        except ValidationError as error:
            errors["node_selector"] = error.messages[0]
        if errors:
            raise ValidationError(errors)


class ServiceClass(models.Model):
    """Priority and protection of a job (docs/SCHEDULING.md section 1)."""

    # what people edit (the manage pages, the API), the change history records and lists show
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = (
        "name",
        "priority",
        "preemptible",
        "can_borrow",
        "min_runtime",
        "grace_period",
        "max_runtime",
        "preemption_protection",
        "price_multiplier",
        "allow_host_network",
    )

    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    priority = models.IntegerField(default=0, help_text="Higher runs first.")
    preemptible = models.BooleanField(default=True)
    can_borrow = models.BooleanField(
        default=True, help_text="May run on quota borrowed from the cohort."
    )
    min_runtime = models.PositiveIntegerField(
        default=0, help_text="Seconds after start during which the job is not preempted."
    )
    grace_period = models.PositiveIntegerField(
        default=0, help_text="Seconds between the stop request and the kill (for checkpoints)."
    )
    max_runtime = models.PositiveIntegerField(
        null=True, blank=True, help_text="Hard limit in seconds; empty: no limit."
    )
    preemption_protection = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Seconds after each (re)start during which the job is not stopped for "
        "fair sharing or priority (a reclaim of guaranteed quota still may); empty: the "
        "platform default (PREEMPTION_PROTECTION_SECONDS).",
    )
    price_multiplier = models.DecimalField(max_digits=8, decimal_places=3, default=1)
    allow_host_network = models.BooleanField(
        default=False,
        help_text="Jobs of this class may use the node's network (hostNetwork), e.g. for RDMA.",
    )

    class Meta:
        ordering = ["-priority", "name"]
        verbose_name_plural = "service classes"
        constraints = [
            models.CheckConstraint(
                condition=Q(max_runtime__isnull=True) | Q(max_runtime__gt=0),
                name="service_class_max_runtime_positive",
                violation_error_message="The maximum runtime must be greater than 0 (or empty).",
            ),
            models.CheckConstraint(
                condition=Q(price_multiplier__gte=0),
                name="service_class_price_multiplier_not_negative",
                violation_error_message="The price multiplier cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if (
            self.max_runtime is not None
            and self.min_runtime is not None
            and self.max_runtime < self.min_runtime
        ):
            raise ValidationError(
                {
                    "max_runtime": (
                        f"The maximum runtime ({self.max_runtime}s) is shorter than the minimum "
                        f"runtime ({self.min_runtime}s)."
                    )
                }
            )


class Cluster(models.Model):
    """A place where jobs run. Connection settings stay on the server: never shown back."""

    class Driver(models.TextChoices):
        SIMULATED = "simulated", "Simulated"
        KUBERNETES = "kubernetes", "Kubernetes"

    class Status(models.TextChoices):
        OK = "ok", "OK"
        DEGRADED = "degraded", "Degraded"
        UNKNOWN = "unknown", "Unknown"

    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    driver = models.CharField(max_length=20, choices=Driver.choices, default=Driver.SIMULATED)
    in_cluster = models.BooleanField(
        default=False,
        help_text="The Kubernetes cluster the platform runs in, reached with its pod's "
        "ServiceAccount (no URL, token or kubeconfig).",
    )
    api_url = models.URLField(blank=True, help_text="Kubernetes API server URL.")
    token = EncryptedTextField(
        blank=True, help_text="Service-account bearer token (write-only, encrypted at rest)."
    )
    kubeconfig_path = models.CharField(max_length=500, blank=True)
    kubeconfig_context = models.CharField(max_length=200, blank=True)
    verify_tls = models.BooleanField(default=True)
    ca_cert = models.TextField(blank=True, help_text="PEM CA certificate of the API server.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.UNKNOWN)
    status_message = models.TextField(blank=True)
    last_sync_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(driver__in=["simulated", "kubernetes"]),
                name="cluster_driver_valid",
                violation_error_message="The driver must be simulated or kubernetes.",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["ok", "degraded", "unknown"]),
                name="cluster_status_valid",
                violation_error_message="The status must be ok, degraded or unknown.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never the token
        return f"<Cluster {self.name} ({self.driver})>"

    @property
    def has_token(self) -> bool:
        """A token is stored (even one the configured keys cannot decrypt)."""
        return bool(self.token) or isinstance(self.token, UndecryptableSecret)

    def clean(self) -> None:
        if self.in_cluster and self.driver != self.Driver.KUBERNETES:
            raise ValidationError({"in_cluster": "Only a Kubernetes cluster can be in-cluster."})
        if self.driver == self.Driver.KUBERNETES:
            if self.in_cluster:
                given = [
                    label
                    for label, value in (
                        ("an API server URL", self.api_url),
                        ("a token", self.token),
                        ("a kubeconfig path", self.kubeconfig_path),
                    )
                    if value
                ]
                if given:
                    raise ValidationError(
                        {
                            "in_cluster": "An in-cluster cluster is reached with the pod's "
                            f"ServiceAccount: remove {' and '.join(given)}."
                        }
                    )
                return
            if not self.kubeconfig_path and not (self.api_url and self.token):
                raise ValidationError(
                    "A Kubernetes cluster needs either an API server URL and a token, "
                    "a kubeconfig path (and optionally a context), or in-cluster (the pod's "
                    "ServiceAccount)."
                )
            if self.token and not self.api_url:
                raise ValidationError({"api_url": "A token needs the API server URL it is for."})


def validate_capacity(value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError('Capacity must be an object of flavor: count, e.g. {"h100": 8}.')
    for flavor, count in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValidationError(
                f"Capacity of {flavor!r} must be a whole number of at least 0, not {count!r}."
            )


def usable_capacity(capacity: object, other_usage: object) -> dict[str, int]:
    """Capacity less what other workloads hold, per flavor name (never below 0): THE rule of
    every "free" number (snapshot, GPU map, dashboards, submission checks, quota texts)."""
    if not isinstance(capacity, dict):
        return {}
    other = other_usage if isinstance(other_usage, dict) else {}
    return {name: max(0, int(units) - int(other.get(name, 0))) for name, units in capacity.items()}


class Node(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253, validators=[dotted_name])
    labels = models.JSONField(default=dict, blank=True)
    capacity = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_capacity],
        help_text='Units per flavor name, e.g. {"h100": 8} or {"h100-1g.10gb": 14}.',
    )
    other_usage = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_capacity],
        help_text="Units per flavor name held by pods the platform did not create (other "
        "workloads on a shared node), as the cluster last reported them.",
    )
    schedulable = models.BooleanField(
        default=True, help_text="False when the cluster reports it cordoned (spec.unschedulable)."
    )
    ready = models.BooleanField(default=True)
    cordoned = models.BooleanField(
        default=False,
        help_text="Cordoned by a platform admin: the platform places no new work here. The "
        "cluster's own node is left as it is (the platform needs no write access to nodes).",
    )
    draining = models.BooleanField(
        default=False,
        help_text="Drained by a platform admin: cordoned, and the platform's jobs with a worker "
        "here are stopped through their grace period and requeued. Uncordon ends it.",
    )

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "name"],
                name="node_unique_cluster_name",
                violation_error_message="This cluster already has a node with this name.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def takes_work(self) -> bool:
        """Whether the platform may place new work here: Ready, and cordoned neither by the
        cluster nor by a platform admin (nor drained)."""
        return self.ready and self.schedulable and not (self.cordoned or self.draining)

    def usable_capacity(self) -> dict[str, int]:
        """What the platform may place on the node, per flavor: capacity less other workloads."""
        return usable_capacity(self.capacity, self.other_usage)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            validate_string_map(self.labels, "Labels")
        except ValidationError as error:
            errors["labels"] = error.messages[0]
        if isinstance(self.capacity, dict) and self.capacity:
            known = set(
                Flavor.objects.filter(name__in=list(self.capacity)).values_list("name", flat=True)
            )
            unknown = sorted(set(self.capacity) - known)
            if unknown:
                errors["capacity"] = (
                    f"Unknown flavor(s): {', '.join(unknown)}. Create the flavor first or fix "
                    "the name."
                )
        if errors:
            raise ValidationError(errors)
