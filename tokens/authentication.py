"""DRF authentication with API tokens: ``Authorization: Bearer gpp_<prefix>_<secret>``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from gpuplatform import lockout, roles
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
        token = read_token(prefix)
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


@dataclass(frozen=True)
class _TokenRead:
    """The SQL of ``read_token`` on one database, and how to build its rows."""

    sql: str
    token_fields: list[Any]
    user_fields: list[Any]
    converters: list[tuple[int, list[Any], Any]]  # column, converters, expression
    rights: bool  # two more columns: the user's groups and team ids (PostgreSQL)


_reads: dict[tuple[str, str], _TokenRead] = {}


def read_token(prefix: str) -> ApiToken | None:
    """The token of ``prefix`` with its user, as ``ApiToken.objects.select_related("user")
    .filter(prefix=prefix).first()`` reads it, by one SQL string written once from the models'
    tables (the ORM built and compiled that query at every request: a fifth of a job
    submission's CPU, BENCHMARKS.md issue 27). On PostgreSQL the same query reads the user's
    groups and teams (gpuplatform/roles.py), which every API request's rules ask next."""
    read = _reads.get((connection.alias, connection.vendor))
    if read is None:
        read = _reads[(connection.alias, connection.vendor)] = _token_read()
    with connection.cursor() as cursor:
        cursor.execute(read.sql, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for index, converters, expression in read.converters:
        for converter in converters:
            values[index] = converter(values[index], expression, connection)
    count = len(read.token_fields)
    token = ApiToken.from_db(connection.alias, read.token_fields, values[:count])
    ends = count + len(read.user_fields)
    user = ApiToken.user.field.related_model.from_db(
        connection.alias, read.user_fields, values[count:ends]
    )
    ApiToken.user.field.set_cached_value(token, user)
    if read.rights:
        roles.remember_rights(user, values[ends], values[ends + 1])
    return token


def _token_read() -> _TokenRead:
    quote = connection.ops.quote_name
    user_model = ApiToken.user.field.related_model
    columns: list[str] = []
    converters: list[tuple[int, list[Any], Any]] = []
    names: dict[str, list[str]] = {"t": [], "u": []}
    for alias, model in (("t", ApiToken), ("u", user_model)):
        for field in model._meta.concrete_fields:
            expression = field.get_col(alias)
            found = connection.ops.get_db_converters(expression) + field.get_db_converters(
                connection
            )
            if found:
                converters.append((len(columns), found, expression))
            columns.append(f"{alias}.{quote(field.column)}")
            names[alias].append(field.attname)
    rights = connection.vendor == "postgresql"
    if rights:
        columns.append(
            roles.rights_arrays_sql(user_model, f"u.{quote(user_model._meta.pk.column)}")
        )
    user_key = ApiToken._meta.get_field("user")
    sql = (
        f"SELECT {', '.join(columns)} FROM {quote(ApiToken._meta.db_table)} t "
        f"INNER JOIN {quote(user_model._meta.db_table)} u "
        f"ON u.{quote(user_model._meta.pk.column)} = t.{quote(user_key.column)} "
        f"WHERE t.{quote(ApiToken._meta.get_field('prefix').column)} = %s"
    )
    return _TokenRead(sql, names["t"], names["u"], converters, rights)


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
