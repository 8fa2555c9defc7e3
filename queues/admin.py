"""Admin pages for the scheduling domain (platform admins only: see gpuplatform/admin_site.py)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.http import HttpRequest

from audit.admin_changes import AuditedAdmin
from gpuplatform import access
from queues.models import (
    Cluster,
    Cohort,
    CohortQuota,
    CycleRun,
    Flavor,
    Job,
    JobEvent,
    JobFlavor,
    Membership,
    Node,
    Queue,
    Quota,
    ServiceClass,
    Team,
)


class PlatformPermissions:
    """Platform admins (superusers or the platform-admin group) manage these objects, without
    per-model Django permissions; the rule lives in gpuplatform.access."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return access.is_platform_admin(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return access.is_platform_admin(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)


class PlatformModelAdmin(AuditedAdmin, PlatformPermissions, admin.ModelAdmin):  # type: ignore[type-arg]
    pass


# Users and groups too (memberships pick users), for the platform-admin group as well.
admin.site.unregister(User)
admin.site.unregister(Group)


SUPERUSER_ONLY_USER_FIELDS = ("is_superuser", "user_permissions")
"""What only a superuser may set on a user: a platform admin who is not one sees them read-only,
so it cannot make itself (or anyone) a superuser."""


def _superuser(request: HttpRequest) -> bool:
    return bool(getattr(request.user, "is_superuser", False))


@admin.register(User)
class PlatformUserAdmin(AuditedAdmin, PlatformPermissions, UserAdmin):  # type: ignore[type-arg]
    """Platform admins manage users and their groups; superuser status and per-user permissions,
    and superusers themselves (their password included), are for superusers only."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if _superuser(request) else (*fields, *SUPERUSER_ONLY_USER_FIELDS)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        touches_root = obj is not None and obj.is_superuser and not _superuser(request)
        return super().has_change_permission(request, obj) and not touches_root

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        touches_root = obj is not None and obj.is_superuser and not _superuser(request)
        return super().has_delete_permission(request, obj) and not touches_root


@admin.register(Group)
class PlatformGroupAdmin(AuditedAdmin, PlatformPermissions, GroupAdmin):
    """Groups' Django permissions are for superusers only (the platform's roles are the groups'
    names: gpuplatform/roles.py)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if _superuser(request) else (*fields, "permissions")


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    has_change_permission = has_delete_permission = has_view_permission = has_add_permission


class QuotaInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Quota
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    has_change_permission = has_delete_permission = has_view_permission = has_add_permission


@admin.register(Team)
class TeamAdmin(PlatformModelAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(PlatformModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]
    autocomplete_fields = ["user", "team"]


class CohortQuotaInline(QuotaInline):
    model = CohortQuota  # type: ignore[assignment]
    fk_name = "cohort"


@admin.register(Cohort)
class CohortAdmin(PlatformModelAdmin):
    list_display = list(Cohort.AUDITED_FIELDS)
    search_fields = ["name"]
    inlines = [CohortQuotaInline]


@admin.register(Flavor)
class FlavorAdmin(PlatformModelAdmin):
    list_display = ["name", "resource", "gpu_model", "mig_profile", "gpu_equivalent"]
    list_filter = ["gpu_model", "resource"]
    search_fields = ["name", "resource", "gpu_model", "mig_profile"]


@admin.register(ServiceClass)
class ServiceClassAdmin(PlatformModelAdmin):
    list_display = list(ServiceClass.AUDITED_FIELDS)
    list_filter = ["preemptible", "can_borrow"]
    search_fields = ["name"]


@admin.register(Queue)
class QueueAdmin(PlatformModelAdmin):
    list_display = ["__str__", "team", "cohort", "weight", "is_open", "decayed_usage"]
    list_select_related = ["team", "cohort"]  # the cohort is nullable: not joined by default
    list_filter = ["is_open", "cohort", "team"]
    search_fields = ["name", "team__name"]
    filter_horizontal = ["allowed_service_classes"]
    readonly_fields = ["decayed_usage", "decayed_usage_at"]
    inlines = [QuotaInline]


@admin.register(Quota)
class QuotaAdmin(PlatformModelAdmin):
    list_display = ["queue", *Quota.AUDITED_FIELDS]
    list_filter = ["flavor", "queue__team"]
    search_fields = ["queue__name", "queue__team__name", "flavor__name"]


class ClusterAdminForm(forms.ModelForm):  # type: ignore[type-arg]
    """The token is write-only: never rendered back; leave it empty to keep the stored one."""

    api_url = forms.URLField(
        required=False, assume_scheme="https", help_text="Kubernetes API server URL."
    )
    token = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Service-account bearer token. Never shown back: leave empty to keep the "
        "stored token.",
    )
    clear_token = forms.BooleanField(required=False, help_text="Remove the stored token.")

    class Meta:
        model = Cluster
        fields = [
            "name",
            "driver",
            "in_cluster",
            "api_url",
            "token",
            "clear_token",
            "kubeconfig_path",
            "kubeconfig_context",
            "verify_tls",
            "ca_cert",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored_token = self.instance.token if self.instance.pk else ""
        self.initial["token"] = ""

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        if cleaned.get("clear_token"):
            cleaned["token"] = ""
        elif not cleaned.get("token"):
            cleaned["token"] = self._stored_token
        self.instance.token = cleaned["token"]
        return cleaned


class NodeInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Node
    extra = 0
    fields = ["name", "capacity", "labels", "schedulable", "ready", "cordoned", "draining"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    has_change_permission = has_delete_permission = has_view_permission = has_add_permission


@admin.register(Cluster)
class ClusterAdmin(PlatformModelAdmin):
    form = ClusterAdminForm
    list_display = ["name", "driver", "status", "has_token", "last_sync_at"]
    list_filter = ["driver", "status"]
    search_fields = ["name", "api_url"]
    readonly_fields = ["status", "status_message", "last_sync_at", "has_token"]
    inlines = [NodeInline]

    @admin.display(boolean=True, description="token stored")
    def has_token(self, obj: Cluster) -> bool:
        return obj.has_token


@admin.register(Node)
class NodeAdmin(PlatformModelAdmin):
    list_display = ["name", "cluster", "capacity", "schedulable", "ready", "cordoned", "draining"]
    list_filter = ["cluster", "schedulable", "ready", "cordoned", "draining"]
    search_fields = ["name", "cluster__name"]
    actions = ["fail_node", "recover_node"]

    @admin.action(description="Fail node (simulate a node failure: its jobs are requeued)")
    def fail_node(self, request: HttpRequest, queryset: Any) -> None:
        from queues.services import fail_nodes

        changed = self.audited_update(request, queryset, fail_nodes)
        self.message_user(
            request, f"{changed} node(s) marked failed; their jobs are requeued next cycle."
        )

    @admin.action(description="Recover node (ready again)")
    def recover_node(self, request: HttpRequest, queryset: Any) -> None:
        from queues.services import recover_nodes

        changed = self.audited_update(request, queryset, recover_nodes)
        self.message_user(request, f"{changed} node(s) ready again.")


class JobFlavorInline(admin.TabularInline):  # type: ignore[type-arg]
    model = JobFlavor
    extra = 0
    ordering = ["rank"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)

    has_change_permission = has_delete_permission = has_view_permission = has_add_permission


class JobEventInline(admin.TabularInline):  # type: ignore[type-arg]
    model = JobEvent
    extra = 0
    readonly_fields = ["at", "kind", "message", "data"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_platform_admin(request.user)


class QueueListFilter(admin.RelatedFieldListFilter):
    """The queue filter, its choices named "team/queue" in one query (not one per queue)."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> list[Any]:
        queues = Queue.objects.select_related("team").order_by("team__name", "name")
        return [(queue.pk, str(queue)) for queue in queues]


@admin.register(Job)
class JobAdmin(PlatformModelAdmin):
    list_display = [
        "name",
        "pk",
        "queue",
        "owner",
        "service_class",
        "state",
        "workers",
        "gpus_per_worker",
        "submitted_at",
        "cluster",
    ]
    list_filter = ["state", "service_class", "queue__team", ("queue", QueueListFilter), "cluster"]
    search_fields = ["name", "owner__username", "queue__name", "queue__team__name", "image"]
    date_hierarchy = "submitted_at"
    readonly_fields = [
        "state",
        "admitted_at",
        "started_at",
        "finished_at",
        "placement",
        "current_workers",
        "preemption_count",
    ]
    list_select_related = ["queue__team", "owner", "service_class", "cluster"]
    inlines = [JobFlavorInline, JobEventInline]


@admin.register(JobEvent)
class JobEventAdmin(PlatformModelAdmin):
    list_display = ["job", "at", "kind", "message"]
    list_filter = ["kind"]
    search_fields = ["job__name", "message"]
    date_hierarchy = "at"


@admin.register(CycleRun)
class CycleRunAdmin(PlatformModelAdmin):
    list_display = ["started_at", "finished_at", "worker", "outcome"]
    search_fields = ["worker", "outcome"]
    date_hierarchy = "started_at"
