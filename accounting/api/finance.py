"""Finance REST under /api/v1/: the OpenCost-shaped allocation API and per-job cost records
(issue 25). Meanings: accounting/allocation.py and accounting/job_costs.py; docs/ACCOUNTING.md."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting import allocation, rating
from accounting.chargeback import ParameterError, Period, parse_period
from accounting.job_costs import COLUMNS, job_rows
from accounting.models import UsageRecord
from accounting.pricing import currency
from gpuplatform import access
from gpuplatform.exports import safe_row


def refuse_unknown(request: Request, known: Iterable[str], hint: str = "") -> None:
    """A 400 naming every query parameter the endpoint does not know."""
    allowed = set(known)
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        message = f"unknown parameter; this endpoint takes {', '.join(sorted(allowed))}.{hint}"
        raise ValidationError({name: [message] for name in unknown})


def _bad(error: ParameterError) -> ValidationError:
    return ValidationError({error.parameter: [error.message]})


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv(lines: Iterator[list[Any]], name: str) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())
    response = StreamingHttpResponse(
        (writer.writerow(safe_row(line)) for line in lines), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _number(value: Decimal) -> float:
    return float(value)


def allocation_json(item: allocation.Allocation, unit: str) -> dict[str, Any]:
    start, end = item.period.start.isoformat(), item.period.end.isoformat()
    minutes = Decimal((item.period.end - item.period.start).total_seconds()) / 60
    hours = rating.quantize_hours(item.totals.gpu_hours)
    return {
        "name": item.name,
        "properties": item.properties,
        "window": {"start": start, "end": end},
        "start": start,
        "end": end,
        "minutes": _number(minutes),
        "gpuCount": _number(hours * 60 / minutes) if minutes else 0.0,
        "gpuHours": _number(hours),
        "gpuEquivalentHours": _number(rating.quantize_hours(item.totals.gpu_equivalent_hours)),
        "gpuCost": _number(item.totals.cost),
        "gpuCostAdjustment": 0.0,
        "sharedCost": _number(item.shared_cost),
        "totalCost": _number(item.total_cost),
        "currency": unit,
    }


ALLOCATION_COLUMNS = (
    "window_start",
    "window_end",
    "name",
    "gpu_hours",
    "gpu_equivalent_hours",
    "gpu_cost",
    "shared_cost",
    "total_cost",
    "currency",
)


def allocation_csv(
    sets: Sequence[dict[str, allocation.Allocation]], keys: Sequence[str], unit: str
) -> Iterator[list[Any]]:
    yield [*ALLOCATION_COLUMNS[:3], *keys, *ALLOCATION_COLUMNS[3:]]
    for one in sets:
        for name in sorted(one):
            item = one[name]
            yield [
                item.period.start.isoformat(),
                item.period.end.isoformat(),
                item.name,
                *(item.properties.get(key, "") for key in keys),
                str(rating.quantize_hours(item.totals.gpu_hours)),
                str(rating.quantize_hours(item.totals.gpu_equivalent_hours)),
                str(rating.quantize_money(item.totals.cost)),
                str(rating.quantize_money(item.shared_cost)),
                str(rating.quantize_money(item.total_cost)),
                unit,
            ]


class JSONOnly(DefaultContentNegotiation):
    """JSON whatever ?format= says: `format` (json or csv) is read by the view, and a CSV is
    streamed without a renderer."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type


def _wants_csv(request: Request) -> bool:
    wanted = request.query_params.get("format", "")
    if wanted not in ("", "json", "csv"):
        raise ValidationError({"format": ["Unknown format: use json or csv."]})
    return wanted == "csv"


ALLOCATION_PARAMETERS = [
    OpenApiParameter(
        "window",
        str,
        required=True,
        description="today, yesterday, week, lastweek, month, lastmonth, 30m/12h/7d, or "
        "start,end (RFC 3339 or unix seconds).",
    ),
    OpenApiParameter(
        "aggregate",
        str,
        description="team, queue, user, flavor, service_class, cluster, department (the "
        "queue's cohort), job, label:<key> (the job's label); missing: __unallocated__.",
    ),
    OpenApiParameter("step", str, description="hour, day, week, month or 1h/1d/7d."),
    OpenApiParameter("accumulate", bool, description="Sum the steps into one set."),
    OpenApiParameter("includeIdle", bool, description="An __idle__ allocation per set."),
    OpenApiParameter("shareIdle", bool, description="Idle cost shared by cost per cluster."),
    OpenApiParameter("idleByNode", bool, description="Only false: nodes are not recorded."),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]


@extend_schema_view(
    get=extend_schema(
        parameters=ALLOCATION_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
)
class AllocationView(APIView):
    """GET /api/v1/allocation/?window=7d&aggregate=team&step=day: OpenCost's allocation API
    over the GPU ledger. Each caller sees the usage they may see (accounting access rules);
    includeIdle (the platform's idle capacity) is for finance and platform admins."""

    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnly

    def get(self, request: Request) -> Any:
        params = request.query_params
        refuse_unknown(request, allocation.PARAMETERS)
        now = timezone.now()
        try:
            window = allocation.parse_window(params.get("window"), now)
            keys = allocation.parse_aggregate(params.get("aggregate"))
            step = allocation.parse_step(params.get("step"))
            accumulate = allocation.parse_flag("accumulate", params.get("accumulate"))
            include_idle = allocation.parse_flag("includeIdle", params.get("includeIdle"))
            share_idle = allocation.parse_flag("shareIdle", params.get("shareIdle"))
            if allocation.parse_flag("idleByNode", params.get("idleByNode")):
                raise ParameterError(
                    "idleByNode", "idleByNode=true: capacity is recorded per cluster, not node."
                )
            csv_wanted = _wants_csv(request)
            window = allocation.clip_to_now(window, now)
            allocation.steps(window, step)  # refuses too many sets before any work
        except ParameterError as error:
            raise _bad(error) from None
        if (
            include_idle
            and not share_idle
            and not access.is_platform_admin_or_finance(request.user)
        ):
            raise PermissionDenied("includeIdle shows the whole platform's idle capacity: finance.")
        everything = UsageRecord.objects.all()
        records = access.filter_visible_usage(everything, request.user)
        try:
            sets = allocation.allocation_sets(
                records,
                everything,
                window,
                step,
                keys,
                accumulate=accumulate,
                include_idle=include_idle,
                share_idle=share_idle,
            )
        except rating.RatingError as error:
            return Response({"code": 409, "message": str(error)}, status=409)
        unit = currency()
        if csv_wanted:
            name = f"allocation-{window.start:%Y%m%dT%H%M}-{window.end:%Y%m%dT%H%M}.csv"
            return _csv(allocation_csv(sets, keys, unit), name)
        data = [{name: allocation_json(one[name], unit) for name in sorted(one)} for one in sets]
        return Response({"code": 200, "data": data})


JOB_PARAMETERS = ("start", "end", "team", "user", "format")


@extend_schema_view(
    get=extend_schema(
        parameters=[
            OpenApiParameter("start", str, description="ISO date or date-time; default: month."),
            OpenApiParameter("end", str, description="Exclusive; default: next month."),
            OpenApiParameter("team", str, description="Only this team's jobs."),
            OpenApiParameter("user", str, description="Only this user's jobs."),
            OpenApiParameter("format", str, enum=["json", "csv"]),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
)
class JobCostView(APIView):
    """GET /api/v1/accounting/jobs/?start=&end=&format=csv: one row per job and UTC month with
    GPU-hours, rate, multiplier, cost, state, queue and user (as sacct), and the totals."""

    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnly

    def get(self, request: Request) -> Any:
        params = request.query_params
        refuse_unknown(request, JOB_PARAMETERS)
        try:
            period = parse_period(params.get("start"), params.get("end"), timezone.now())
        except ParameterError as error:
            raise _bad(error) from None
        csv_wanted = _wants_csv(request)
        records = access.filter_visible_usage(UsageRecord.objects.all(), request.user)
        if params.get("team"):
            records = records.filter(team__name=params["team"])
        if params.get("user"):
            records = records.filter(user__username=params["user"])
        unit = currency()
        try:
            rows = list(job_rows(records, period, unit))
        except rating.RatingError as error:
            return Response({"detail": str(error)}, status=409)
        total = sum((row.totals.cost for row in rows), Decimal(0))
        hours = sum((row.totals.gpu_hours for row in rows), Decimal(0))
        if csv_wanted:
            name = f"jobs-{period.start:%Y%m%d}-{period.end:%Y%m%d}.csv"
            return _csv(_job_lines(rows, period, total, hours, unit), name)
        return Response(
            {
                "start": period.start.isoformat(),
                "end": period.end.isoformat(),
                "currency": unit,
                "rows": [row.values for row in rows],
                "totals": {
                    "gpu_hours": str(rating.quantize_hours(hours)),
                    "cost": str(rating.quantize_money(total)),
                },
            }
        )


def _job_lines(
    rows: list[Any], period: Period, total: Decimal, hours: Decimal, unit: str
) -> Iterator[list[Any]]:
    yield list(COLUMNS)
    for row in rows:
        yield [row.values[column] for column in COLUMNS]
    last = dict.fromkeys(COLUMNS, "")
    last |= {
        "month": "TOTAL",
        "period_start": period.start.isoformat(),
        "period_end": period.end.isoformat(),
        "gpu_hours": str(rating.quantize_hours(hours)),
        "cost": str(rating.quantize_money(total)),
        "currency": unit,
    }
    yield [last[column] for column in COLUMNS]
