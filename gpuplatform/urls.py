from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounting.urls import price_urlpatterns
from gpuplatform import views
from gpuplatform.forms import ThrottledAuthenticationForm
from gpuplatform.health import healthz_view, readyz_view
from queues.metrics import metrics_view

urlpatterns = [
    path("", views.home, name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            redirect_authenticated_user=True, authentication_form=ThrottledAuthenticationForm
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("chargeback/", include("accounting.urls")),
    path("dashboards/", include("dashboards.urls")),
    path("manage/prices/", include(price_urlpatterns)),  # before queues' manage/<slug>/
    path("api/v1/", include("accounting.api.urls")),
    path("", include("queues.urls")),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    # answered by gpuplatform.health.HealthProbeMiddleware first; named here for reverse()
    path("healthz", healthz_view, name="healthz"),
    path("readyz", readyz_view, name="readyz"),
    # --- REST API under /api/v1/ (each app's api/urls.py) and the API tokens page -----------
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # the split view serves Swagger UI's start-up script as a file: no inline script (CSP)
    path(
        "api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"
    ),
    path("api/v1/", include("tokens.api_urls")),
    path("api/v1/", include("queues.api.urls")),
    path("", include("tokens.urls")),
]
