"""DRF authentication with API tokens: ``Authorization: Bearer gpp_<prefix>_<secret>``."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from gpuplatform import lockout
from tokens.models import ApiToken, split_token

logger = logging.getLogger(__name__)

KEYWORDS = ("bearer", "token")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Revoked, expired, unknown or malformed tokens are refused with 401; a request without an
    Authorization header falls through to the next class (the session). Each refusal counts
    against the client's address (gpuplatform/lockout.py): past LOGIN_FAILURE_LIMIT within
    LOGIN_FAILURE_WINDOW, tokens from that address get 429 until the window ends."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in KEYWORDS:
            return None
        if lockout.is_locked_out(request):
            raise exceptions.Throttled(
                wait=settings.LOGIN_FAILURE_WINDOW,
                detail="Too many requests with a bad token from your address; try again later.",
            )
        try:
            return self._authenticate_header(header)
        except exceptions.AuthenticationFailed:
            lockout.record_failure(request)
            raise

    def _authenticate_header(self, header: list[bytes]) -> tuple[Any, ApiToken]:
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: use 'Bearer <token>'."
            )
        try:
            text = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        return self.authenticate_token(text)

    def authenticate_token(self, text: str) -> tuple[Any, ApiToken]:
        parts = split_token(text)
        if parts is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        prefix, secret = parts
        token = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
        if token is None or not token.matches(secret):
            raise exceptions.AuthenticationFailed("Invalid token.")
        now = timezone.now()
        if token.is_revoked:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if token.is_expired(now):
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This token's user is inactive.")
        self._touch(token, now)
        logger.info("API token %s (%r) used by %s", token.prefix, token.name, token.user)
        return token.user, token

    @staticmethod
    def _touch(token: ApiToken, now: Any) -> None:
        """Record the use, at most once per API_TOKEN_TOUCH_SECONDS: no query while the time the
        token row just read says is recent, else one conditional UPDATE (concurrent requests
        write it once)."""
        horizon = now - timedelta(seconds=settings.API_TOKEN_TOUCH_SECONDS)
        if token.last_used_at is not None and token.last_used_at >= horizon:
            return
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=horizon)
        ).update(last_used_at=now)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Tells the OpenAPI schema how to send an API token."""

    target_class = "tokens.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "gpp_<prefix>_<secret>",
            "description": "A personal API token (create one under your user menu > API tokens).",
        }
