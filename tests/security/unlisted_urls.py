"""The site's URLconf plus a page and an API viewset the access matrix has no rows for
(tests/security/test_access_matrix.py checks that it reports them)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from rest_framework import serializers, viewsets
from rest_framework.routers import SimpleRouter

from gpuplatform.urls import urlpatterns as site
from queues.models import Team


def unlisted_report(request: HttpRequest) -> HttpResponse:
    return HttpResponse("every team's secrets")


class UnlistedSerializer(serializers.ModelSerializer[Team]):
    class Meta:
        model = Team
        fields = ["id", "name"]


class UnlistedViewSet(viewsets.ReadOnlyModelViewSet[Team]):
    queryset = Team.objects.all()
    serializer_class = UnlistedSerializer


router = SimpleRouter()
router.register("unlisted", UnlistedViewSet, basename="unlisted")

urlpatterns = [
    *site,
    path("unlisted-report/", unlisted_report, name="unlisted-report"),
    path("api/v1/", include(router.urls)),
]
