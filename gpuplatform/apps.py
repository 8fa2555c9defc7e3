from django.contrib.admin.apps import AdminConfig


class PlatformAdminConfig(AdminConfig):
    """django.contrib.admin, with the platform's admin site as the default site."""

    default_site = "gpuplatform.admin_site.PlatformAdminSite"
