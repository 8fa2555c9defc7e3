from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from gpuplatform import views
from queues.metrics import metrics_view

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("chargeback/", include("accounting.urls")),
    path("dashboards/", include("dashboards.urls")),
    path("api/v1/", include("accounting.api.urls")),
    path("", include("queues.urls")),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
]
