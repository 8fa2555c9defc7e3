"""The finance page: chargeback per team for a period, drill-down, export links."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from accounting import rating
from accounting.chargeback import ParameterError, chargeback_report, parse_period, row_values
from accounting.models import UsageRecord
from gpuplatform import access

DRILL_KEYS = ("queue", "flavor", "user")


@login_required
def chargeback_page(request: HttpRequest) -> HttpResponse:
    """Finance and platform admins only."""
    if not access.can_view_chargeback(request.user):
        raise PermissionDenied("Chargeback is for finance and platform admins.")
    params = request.GET
    now = timezone.now()
    context: dict[str, object] = {"drill_keys": DRILL_KEYS}
    try:
        period = parse_period(params.get("start"), params.get("end"), now)
    except ParameterError as error:
        context["error"] = error.message
        period = parse_period(None, None, now)
    team = params.get("team", "")
    by = params.get("by", "queue")
    if by not in DRILL_KEYS:
        by = "queue"
    keys = ("team", by) if team else ("team",)
    records = access.filter_visible_usage(UsageRecord.objects.all(), request.user)
    if team:
        records = records.filter(team__name=team)
    try:
        report = chargeback_report(records, period, keys)
    except rating.RatingError as error:
        context["error"] = str(error)
        report = None
    query = {"start": f"{period.start:%Y-%m-%d}", "end": f"{period.end:%Y-%m-%d}"}
    api = reverse("chargeback-api")
    export = {**query, "group_by": ",".join(keys)} | ({"team": team} if team else {})
    context |= {
        "period": period,
        "start": query["start"],
        "end": query["end"],
        "team": team,
        "by": by,
        "keys": keys,
        "rows": [row_values(row.group, row.totals) for row in report.rows] if report else [],
        "totals": row_values({}, report.total) if report else None,
        "currency": report.currency if report else "",
        "base_query": urlencode(query),
        "csv_url": f"{api}?{urlencode(export | {'format': 'csv'})}",
        "json_url": f"{api}?{urlencode(export | {'format': 'json'})}",
    }
    return render(request, "accounting/chargeback.html", context)
