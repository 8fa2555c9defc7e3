"""Shared REST bits for every app's ``api/`` package: permissions (which call gpuplatform/access.py,
the one place for access rules), pagination, bounded fields, the job-submission throttle and the
exception handler that turns domain errors into 4xx answers instead of 500s.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError, models
from django.db.models import ProtectedError, RestrictedError
from rest_framework import (
    exceptions,
    fields,
    pagination,
    permissions,
    serializers,
    status,
    throttling,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from gpuplatform import access
from gpuplatform.cache import RedisCache

logger = logging.getLogger(__name__)

MAX_INT = 2**31 - 1
"""The largest value a PostgreSQL ``integer`` column holds: every integer field is bounded by it."""


# --- Permissions ------------------------------------------------------------------------------


class ReadAnyWritePlatformAdmin(permissions.BasePermission):
    """Signed-in users read; only platform admins write (teams, queues, quotas, flavors, classes,
    cohorts, clusters)."""

    message = "Only platform admins may change this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user.is_authenticated:
            return False
        return request.method in permissions.SAFE_METHODS or access.is_platform_admin(request.user)


class MembershipPermission(permissions.BasePermission):
    """Signed-in users read the memberships of teams they see; team admins of the team and
    platform admins change them."""

    message = "Only the team's admins and platform admins may manage its members."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user.is_authenticated:
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        return access.manageable_teams(request.user).exists()

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return access.can_manage_membership(request.user, obj.team)


class JobPermission(permissions.BasePermission):
    """Members read their teams' jobs (the queryset scopes them), team members submit, and
    ``cancel`` follows access.can_cancel_job."""

    message = "You may not do this to jobs."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user.is_authenticated:
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        if getattr(view, "action", None) in ("create", "estimate"):
            return access.can_submit(request.user)
        return True  # object-level actions are checked below

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        if getattr(view, "action", None) == "cancel":
            return access.can_cancel_job(request.user, obj)
        return False


# --- Pagination -------------------------------------------------------------------------------


class Pagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


# --- Fields -----------------------------------------------------------------------------------


def reject_nul(value: Any, path: str = "") -> None:
    """PostgreSQL stores no NUL character (text nor jsonb): refuse it anywhere inside ``value``."""
    if isinstance(value, str):
        if "\x00" in value:
            where = f" (in {path})" if path else ""
            raise exceptions.ValidationError(f"The NUL character is not allowed{where}.")
    elif isinstance(value, dict):
        for key, item in value.items():
            reject_nul(key, path)
            reject_nul(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            reject_nul(item, f"{path}[{index}]")


class StrictCharField(fields.CharField):
    """Text only: a number is a wrong type here, not text (DRF's CharField would convert it)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


_Model = TypeVar("_Model", bound=models.Model)


class StrictModelSerializer(serializers.ModelSerializer[_Model]):
    """A ModelSerializer whose generated text fields are StrictCharFields: ``{"name": 7}`` is a
    400 naming the field, not a team called "7"."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
    }


class StringMapField(fields.DictField):
    """A JSON object of text keys and text values (labels, node selectors), without NULs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=StrictCharField(allow_blank=True, max_length=253), **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        value: dict[str, str] = super().to_internal_value(data)
        reject_nul(value)
        if any(len(key) > 253 or not key for key in value):
            raise exceptions.ValidationError("Keys must be 1 to 253 characters long.")
        return value


def _clone_field(field: fields.Field) -> fields.Field:  # type: ignore[type-arg]
    """A fresh, unbound copy of an unbound field: its attributes copied one level deep (a list
    field's child and a many-relation's child too, each the child of its own copy), not rebuilt from
    its arguments as ``copy.deepcopy`` does. Nested serializers are deep-copied as DRF does."""
    if isinstance(field, serializers.BaseSerializer):
        return copy.deepcopy(field)
    clone = object.__new__(type(field))
    clone.__dict__.update(field.__dict__)
    if "_validators" in clone.__dict__:
        clone._validators = list(clone._validators)
    for name in ("child", "child_relation"):
        inner = clone.__dict__.get(name)
        if isinstance(inner, fields.Field):
            inner = _clone_field(inner)
            setattr(clone, name, inner)
            inner.parent = clone  # bound already (to the template's field), by the same name
    return clone


class FieldTemplateMixin:
    """Builds a serializer's fields once per class instead of at every instance.

    DRF makes each serializer instance its own fields: a deep copy of the declared ones, and for a
    ModelSerializer a new field per model field too, about a quarter of a job submission's CPU
    (BENCHMARKS.md, issue 27). Here the first instance of a class keeps the unbound fields DRF
    built as the class's template (they depend on the class alone, never on the request), and
    every instance gets a light copy of them (``_clone_field``) to bind to itself, so an
    instance may still change its own fields. Not for a serializer whose ``get_fields`` depends
    on the instance."""

    def get_fields(self) -> dict[str, Any]:
        cls = type(self)
        template = cls.__dict__.get("_field_template")
        if template is None:
            template = super().get_fields()  # type: ignore[misc]
            cls._field_template = template  # type: ignore[attr-defined]
        return {name: _clone_field(field) for name, field in template.items()}

    def field_names(self) -> Iterable[str]:
        """The names of this instance's fields, in order, without binding copies of the class's
        (an answer written directly, as ``JobSerializer``'s, needs only the names): the bound
        fields' once built, else the template's."""
        bound = self.__dict__.get("fields")
        if bound is not None:
            return bound.keys()  # type: ignore[no-any-return]
        template = type(self).__dict__.get("_field_template")
        if template is None:
            return self.fields.keys()  # type: ignore[attr-defined,no-any-return]
        return template.keys()  # type: ignore[no-any-return]


def bounded_int(**kwargs: Any) -> fields.IntegerField:
    """An integer field that never overflows a PostgreSQL integer column."""
    kwargs.setdefault("max_value", MAX_INT)
    kwargs.setdefault("min_value", 0)
    return fields.IntegerField(**kwargs)


# --- Throttling -------------------------------------------------------------------------------


JOB_SUBMIT_SCOPE = "job-submit"


class JobSubmitThrottle(throttling.ScopedRateThrottle):
    """Job submissions per user, at ``settings.JOB_SUBMIT_RATE`` (read on every request, so tests
    and operators can change it), counted in the default cache."""

    scope_attr = "throttle_scope"  # views set ``throttle_scope = JOB_SUBMIT_SCOPE`` where it counts
    window: tuple[int, float] | None = None  # in Redis: (hits in the window, the oldest's time)

    def get_rate(self) -> str | None:
        return str(settings.JOB_SUBMIT_RATE) or None

    def allow_request(self, request: Any, view: Any) -> bool:
        """In Redis, one atomic round trip (gpuplatform/cache.py ``count_in_window``); in the
        in-process cache of a single process, DRF's read and write of the history."""
        store = caches[DEFAULT_CACHE_ALIAS]
        if not isinstance(store, RedisCache):
            return bool(super().allow_request(request, view))
        self.scope = getattr(view, self.scope_attr, None)  # as ScopedRateThrottle's
        self.rate = self.get_rate() if self.scope else None
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        counted, hits, oldest = store.count_in_window(
            self.key, self.now, self.duration, self.num_requests
        )
        self.window = (hits, oldest)
        return counted

    def wait(self) -> float | None:
        """Seconds until the oldest hit of a full window falls out of it (as DRF's)."""
        if self.window is None:
            return super().wait()  # type: ignore[no-any-return]
        _, oldest = self.window
        return max(0.0, self.duration - (self.now - oldest))


def count_submission(request: Any) -> float | None:
    """Count one job submission of ``request.user`` (a Django or DRF request) against
    JOB_SUBMIT_RATE, on the API's counter (same throttle, key and cache), for the pages that
    submit outside DRF: None when it may go ahead, else the seconds to wait."""
    throttle = JobSubmitThrottle()
    if throttle.allow_request(request, SimpleNamespace(throttle_scope=JOB_SUBMIT_SCOPE)):
        return None
    return throttle.wait() or 1.0


# --- Errors -----------------------------------------------------------------------------------


def _django_validation_detail(error: DjangoValidationError) -> Any:
    if hasattr(error, "error_dict"):
        return {
            ("non_field_errors" if field == "__all__" else field): messages
            for field, messages in error.message_dict.items()
        }
    return {"non_field_errors": error.messages}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: Django ValidationError -> 400 by field, PermissionDenied -> 403,
    objects still in use -> 409, and database-level refusals -> 400/409 instead of a crash."""
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(_django_validation_detail(exc))
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, ProtectedError | RestrictedError):
        names = sorted({str(obj) for obj in list(exc.args[1])[:5]})
        return Response(
            {"detail": f"Still in use by: {', '.join(names)}. Remove those first."},
            status=status.HTTP_409_CONFLICT,
        )
    elif isinstance(exc, IntegrityError):
        logger.warning("API request refused by a database constraint: %s", exc)
        return Response(
            {"detail": "The change conflicts with existing data (a database constraint)."},
            status=status.HTTP_409_CONFLICT,
        )
    elif isinstance(exc, DataError):
        logger.warning("API request refused by the database: %s", exc)
        return Response(
            {"detail": "A value is out of range or malformed for the database."},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return drf_exception_handler(exc, context)
