"""``/api/v1/tokens/``: the signed-in user's own API tokens (list, create, revoke)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.rest import StrictModelSerializer, reject_nul
from tokens import lifetime
from tokens.models import ApiToken


class ApiTokenSerializer(StrictModelSerializer[ApiToken]):
    status = serializers.CharField(read_only=True, help_text="active, expired or revoked")

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "status",
        ]
        read_only_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]

    def validate_name(self, value: str) -> str:
        reject_nul(value)
        if not value.strip():
            raise serializers.ValidationError("Give the token a name, e.g. 'CI runner'.")
        return value.strip()

    def validate_expires_at(self, value: Any) -> Any:
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("The expiry must lie in the future.")
        return value


class NewApiTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The secret token: shown in this response only, store it now."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]


class ApiTokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[ApiToken],
):
    """Your API tokens. Creating one returns its secret once; deleting one revokes it."""

    serializer_class = ApiTokenSerializer
    filterset_fields: list[str] = []
    ordering_fields = ["created_at", "name", "last_used_at"]

    def get_queryset(self) -> QuerySet[ApiToken]:
        if getattr(self, "swagger_fake_view", False):
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=self.request.user)

    @extend_schema(
        request=ApiTokenSerializer,
        responses={
            201: NewApiTokenSerializer,
            403: OpenApiResponse(description="The request was authenticated by a token."),
        },
        description=(
            "Create a token (signed in with a session: a token cannot create tokens, 403). "
            "Without expires_at it expires after API_TOKEN_LIFETIME_DAYS (90 by default); "
            "a date at most API_TOKEN_MAX_LIFETIME_DAYS (365) ahead; expires_at null (never) "
            "for platform admins only."
        ),
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if isinstance(request.auth, ApiToken):
            raise PermissionDenied(
                "A token cannot create tokens: create them signed in, on the API tokens page "
                "or with a session."
            )
        serializer = ApiTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        now = timezone.now()
        data = serializer.validated_data
        expires_at = data["expires_at"] if "expires_at" in data else lifetime.default_expiry(now)
        problem = lifetime.expiry_problem(request.user, expires_at, now)
        if problem:
            raise serializers.ValidationError({"expires_at": [problem]})
        token, text = ApiToken.issue(user=request.user, name=data["name"], expires_at=expires_at)
        token.token = text  # type: ignore[attr-defined]
        return Response(NewApiTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(description="Revoke the token: requests using it get 401 from now on.")
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.get_object().revoke()
        return Response(status=status.HTTP_204_NO_CONTENT)
