"""``POST /api/v1/what-if/`` asks for a replay (202 with its status URL); ``GET
/api/v1/what-if/{id}/`` reads its progress and, once done, its result. Platform admins only
(they edit quotas and clusters); each reads only their own runs, until they expire."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuplatform import access
from queues.api.whatif_serializers import WhatIfRequestSerializer, WhatIfRunSerializer
from queues.models import WhatIfRun
from queues.services.whatif import runs


class PlatformAdminOnly(permissions.BasePermission):
    message = "Only platform admins may run what-if replays."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user.is_authenticated and access.is_platform_admin(request.user))


class WhatIfViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[WhatIfRun]
):
    """What-if replays of the last N days under proposed quotas and nodes (docs/SCHEDULING.md,
    "What-if replays")."""

    permission_classes = [PlatformAdminOnly]
    serializer_class = WhatIfRunSerializer
    lookup_value_regex = "[0-9a-f-]{36}"

    def get_queryset(self) -> QuerySet[WhatIfRun]:
        return runs.visible(self.request.user)

    @extend_schema(
        request=WhatIfRequestSerializer,
        responses={202: WhatIfRunSerializer, 400: OpenApiResponse(description="Invalid field.")},
        description=(
            "Replay the last `days` days of real submissions twice, under today's quotas and "
            "nodes and under these, in the background. Answers 202 with the run; poll its "
            "`status_url`. Writes no scheduling state."
        ),
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = WhatIfRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = runs.ask(request.user, body.proposal())
        answer = WhatIfRunSerializer(run, context=self.get_serializer_context()).data
        headers = {"Location": answer["status_url"]}
        return Response(answer, status=status.HTTP_202_ACCEPTED, headers=headers)
