"""Accounting REST API (under /api/v1/): chargeback (JSON or streamed CSV), usage, prices,
class multipliers and statements. Access rules: gpuplatform/access.py."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, permissions, serializers, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting import rating
from accounting.api.finance import refuse_unknown
from accounting.api.serializers import (
    ClassMultiplierSerializer,
    FlavorPriceSerializer,
    StatementSerializer,
    UsageRecordSerializer,
)
from accounting.chargeback import (
    ParameterError,
    Period,
    Row,
    Totals,
    chargeback_report,
    chargeback_rows,
    parse_group_by,
    parse_moment,
    parse_period,
    row_values,
)
from accounting.models import ClassMultiplier, FlavorPrice, Statement, UsageRecord
from accounting.pricing import RELATED, currency, record_price_change
from gpuplatform import access
from gpuplatform.exports import safe_cell, safe_row

MEASURES = ("gpu_hours", "gpu_equivalent_hours", "cost")
PERIOD_COLUMNS = ("period_start", "period_end")
CHARGEBACK_QUERY = ("start", "end", "group_by", "team", "format")
ALLOCATION_HINT = (
    " OpenCost's window, aggregate, step, accumulate, includeIdle and shareIdle are parameters"
    " of /api/v1/allocation/."
)


class CSVRenderer(BaseRenderer):
    """Announces text/csv for content negotiation; the CSV itself is streamed by the view."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        rows = data if isinstance(data, list) else [data]
        lines = []
        for item in rows:
            if isinstance(item, dict):
                lines.append(",".join(str(safe_cell(f"{k}: {v}")) for k, v in item.items()))
        return ("\n".join(lines) + "\n").encode()


class ParameterNegotiation(DefaultContentNegotiation):
    """?format= wins over the Accept header (an export link works from any client); an unknown
    format is a 400 naming the parameter, not a 404."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        wanted = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        try:
            if wanted:
                renderer = self.filter_renderers(renderers, wanted)[0]
                return renderer, renderer.media_type
            return super().select_renderer(request, renderers, format_suffix)
        except (NotFound, Http404):
            raise ValidationError({"format": ["Unknown format: use json or csv."]}) from None


def _bad_parameter(error: ParameterError) -> ValidationError:
    return ValidationError({error.parameter: [error.message]})


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterator[Row], keys: Sequence[str], unit: str, period: Period) -> Iterator[str]:
    """Header, one line per group, and a TOTAL line; the total is summed while streaming. Every
    line ends with the period (period_start, period_end: ISO 8601, end exclusive). Cells a
    spreadsheet would run as formulas are escaped (gpuplatform/exports.py)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(safe_row([*keys, *MEASURES, "currency", *PERIOD_COLUMNS]))
    total = Totals()
    dates = [period.start.isoformat(), period.end.isoformat()]
    for row in rows:
        total.add(row.totals.gpu_hours, row.totals.gpu_equivalent_hours, row.totals.cost)
        values = row_values(row.group, row.totals)
        cells = [*(values[key] for key in [*keys, *MEASURES]), unit, *dates]
        yield writer.writerow(safe_row(cells))
    values = row_values({}, total)
    blanks = [""] * (len(keys) - 1)
    cells = ["TOTAL", *blanks, *(values[m] for m in MEASURES), unit, *dates]
    yield writer.writerow(safe_row(cells))


CHARGEBACK_PARAMETERS = [
    OpenApiParameter(
        "start",
        str,
        description="ISO date (midnight UTC) or date-time; "
        "default: the first day of the current month.",
    ),
    OpenApiParameter("end", str, description="Exclusive; default: the first day of next month."),
    OpenApiParameter(
        "group_by",
        str,
        many=True,
        description="team, queue, user, flavor, service_class, cluster; several comma-separated "
        "or repeated (default team).",
    ),
    OpenApiParameter("team", str, description="Only this team's usage."),
    OpenApiParameter("format", str, enum=["json", "csv"], description="csv: a streamed file."),
]
_MEASURES = {name: serializers.CharField() for name in MEASURES}
CHARGEBACK_RESPONSE = inline_serializer(
    "Chargeback",
    {
        "start": serializers.DateTimeField(),
        "end": serializers.DateTimeField(),
        "group_by": serializers.ListField(child=serializers.CharField()),
        "currency": serializers.CharField(),
        "rows": serializers.ListField(child=serializers.DictField(child=serializers.CharField())),
        "totals": inline_serializer("ChargebackTotals", _MEASURES),
    },
)


@extend_schema_view(
    get=extend_schema(
        parameters=CHARGEBACK_PARAMETERS,
        responses={200: CHARGEBACK_RESPONSE, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
)
class ChargebackView(APIView):
    """GET /api/v1/chargeback/?start=&end=&group_by=team,flavor&format=json|csv

    GPU-hours (GPUs or MIG slices x hours), GPU-equivalent hours and cost per group over
    [start, end) (dates are midnight UTC; default the current month), and the totals. Each user
    sees the usage they may see (finance and platform admins all; team admins their teams;
    researchers their own). CSV is streamed from the database aggregation."""

    renderer_classes = [JSONRenderer, CSVRenderer]
    content_negotiation_class = ParameterNegotiation

    def get(self, request: Request) -> Any:
        refuse_unknown(request, CHARGEBACK_QUERY, ALLOCATION_HINT)
        try:
            period = parse_period(
                request.query_params.get("start"), request.query_params.get("end"), timezone.now()
            )
            keys = parse_group_by(request.query_params.getlist("group_by"))
        except ParameterError as error:
            raise _bad_parameter(error) from None
        records = access.filter_visible_usage(UsageRecord.objects.all(), request.user)
        if request.query_params.get("team"):
            records = records.filter(team__name=request.query_params["team"])
        try:
            if request.accepted_renderer.format == "csv":
                rows = chargeback_rows(records, period, keys, stream=True)
                response = StreamingHttpResponse(
                    csv_lines(rows, keys, currency(), period),
                    content_type="text/csv; charset=utf-8",
                )
                name = f"chargeback-{period.start:%Y%m%d}-{period.end:%Y%m%d}.csv"
                response["Content-Disposition"] = f'attachment; filename="{name}"'
                return response
            report = chargeback_report(records, period, keys)
        except rating.RatingError as error:
            return Response({"detail": str(error)}, status=409)
        return Response(
            {
                "start": period.start.isoformat(),
                "end": period.end.isoformat(),
                "group_by": list(keys),
                "currency": report.currency,
                "rows": [row_values(row.group, row.totals) for row in report.rows],
                "totals": row_values({}, report.total),
            }
        )


class AccountingPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class UsageViewSet(viewsets.ReadOnlyModelViewSet):
    """The raw ledger, newest first. Filters: team, queue (team/queue), user, flavor, cluster,
    start and end (rows overlapping [start, end))."""

    serializer_class = UsageRecordSerializer
    pagination_class = AccountingPagination

    def get_queryset(self) -> QuerySet[UsageRecord]:
        params = self.request.query_params
        records = access.filter_visible_usage(
            UsageRecord.objects.select_related(*RELATED).order_by("-start", "-pk"),
            self.request.user,
        )
        simple = {
            "team": "team__name",
            "user": "user__username",
            "flavor": "flavor__name",
            "cluster": "cluster__name",
            "service_class": "service_class__name",
            "job": "job_id",
        }
        for parameter, lookup in simple.items():
            value = params.get(parameter)
            if value:
                if parameter == "job" and not value.isdigit():
                    raise ValidationError({"job": [f"job={value!r} is not a job id."]})
                records = records.filter(**{lookup: value})
        queue = params.get("queue")
        if queue:
            team, _, name = queue.rpartition("/")
            records = records.filter(queue__name=name)
            if team:
                records = records.filter(queue__team__name=team)
        try:
            start = parse_moment("start", params["start"]) if params.get("start") else None
            end = parse_moment("end", params["end"]) if params.get("end") else None
        except ParameterError as error:
            raise _bad_parameter(error) from None
        if start and end and start > end:
            raise ValidationError({"start": [f"start ({start}) is after end ({end})."]})
        if start:
            records = records.filter(end__gt=start)
        if end:
            records = records.filter(start__lt=end)
        return records


class PricePermission(permissions.BasePermission):
    """Finance and platform admins read; only platform admins write."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return access.is_platform_admin_or_finance(request.user)
        return access.is_platform_admin(request.user)


class _PriceHistoryViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Price history: rows are added (effective from their date), never edited or deleted, so
    what was charged stays explainable."""

    permission_classes = [permissions.IsAuthenticated, PricePermission]
    pagination_class = None  # a short history per flavor or class

    def perform_create(self, serializer: Any) -> None:
        instance = serializer.save()
        record_price_change(self.request.user, instance)


class FlavorPriceViewSet(_PriceHistoryViewSet):
    serializer_class = FlavorPriceSerializer
    queryset = FlavorPrice.objects.select_related("flavor").order_by(
        "flavor__name", "effective_from"
    )


class ClassMultiplierViewSet(_PriceHistoryViewSet):
    serializer_class = ClassMultiplierSerializer
    queryset = ClassMultiplier.objects.select_related("service_class").order_by(
        "service_class__name", "effective_from"
    )


class StatementViewSet(viewsets.ReadOnlyModelViewSet):
    """Monthly statements with their lines. Filters: team, month (YYYY-MM), status."""

    serializer_class = StatementSerializer
    pagination_class = AccountingPagination

    def get_queryset(self) -> QuerySet[Statement]:
        params = self.request.query_params
        statements = access.filter_visible_statements(
            Statement.objects.select_related("team").prefetch_related(
                "lines__flavor", "lines__service_class", "lines__queue__team"
            ),
            self.request.user,
        )
        if params.get("team"):
            statements = statements.filter(team__name=params["team"])
        if params.get("status"):
            if params["status"] not in Statement.Status.values:
                raise ValidationError({"status": ["status must be draft or final."]})
            statements = statements.filter(status=params["status"])
        if params.get("month"):
            try:
                moment = parse_moment("month", params["month"] + "-01")
            except ParameterError:
                raise ValidationError(
                    {"month": [f"month={params['month']!r} is not a month: use YYYY-MM."]}
                ) from None
            statements = statements.filter(month=moment.date())
        return statements
