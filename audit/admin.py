from django.contrib import admin

from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_name", "object_type", "object_label", "field", "old", "new")
    list_filter = ("object_type",)
    search_fields = ("object_label", "actor_name", "field")

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False  # the trail is append-only, for superusers too
